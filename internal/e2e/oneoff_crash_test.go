package e2e

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
)

// A one-off whose worker is SIGKILLed while its code runs ends WorkerLost once asynq
// hands its task to the next worker, and is never run again (code is not idempotent);
// the one-off pool and recycling are on, as they are by default.
func TestOneOffWorkerKilledMidRun(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorkers: true})
	bin := buildWorker(t)
	doomed := s.startWorkerProcess(t, bin, "oneoff-doomed", "CODEINTERP_ONEOFF_POOL=1", "CODEINTERP_ONEOFF_RECYCLE=true")
	id := s.submit(t, "key-a", map[string]any{"code": "import time\nprint('started', flush=True)\ntime.sleep(300)", "timeout_ms": 300000})
	eventually(t, 2*time.Minute, "the one-off running", func() bool {
		ex, err := s.records.Get(context.Background(), "", id)
		return err == nil && ex.Status == jobs.Running
	})
	_ = doomed.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = doomed.cmd.Process.Wait()

	s.startWorkerProcess(t, bin, "oneoff-heir", "CODEINTERP_ONEOFF_POOL=1", "CODEINTERP_ONEOFF_RECYCLE=true")
	ex := s.wait(t, id)
	if ex.Status != "failed" || ex.Error == nil || ex.Error.Name != string(jobs.ErrWorkerLost) {
		t.Fatalf("one-off whose worker died mid-run: %s %+v, want failed WorkerLost", ex.Status, ex.Error)
	}
	// The heir still serves one-offs.
	if next := s.run(t, map[string]any{"code": "print('after')"}); next.Status != "succeeded" || next.Stdout != "after\n" {
		t.Fatalf("the next one-off: %s %q %+v", next.Status, next.Stdout, next.Error)
	}
}
