package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox/docker"
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

// A one-off whose worker dies before the code starts (here: while its kernel is
// starting, in a sandbox image whose kernel never says ready) runs on the next worker,
// once, to the end.
func TestOneOffWorkerKilledBeforeStart(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorkers: true})
	bin := buildWorker(t)
	hang := hangingKernelImage(t)
	doomed := s.startWorkerProcess(t, bin, "early-doomed", "CODEINTERP_SANDBOX_IMAGE="+hang)
	id := s.submit(t, "key-a", map[string]any{"code": "print('ran once')"})
	eventually(t, 2*time.Minute, "the doomed worker starting a sandbox for the one-off", func() bool {
		list, err := s.docker.ContainerList(context.Background(), container.ListOptions{All: true,
			Filters: filters.NewArgs(filters.Arg("label", docker.LabelInstall+"="+s.prefix))})
		for _, c := range list {
			if strings.HasPrefix(c.Labels[docker.LabelOwner], "early-doomed") { // the id gets a suffix
				return err == nil
			}
		}
		return false
	})
	if ex, err := s.records.Get(context.Background(), "", id); err != nil || ex.Status != jobs.Queued {
		t.Fatalf("before its code starts the one-off is %v (%v); want queued", ex.Status, err)
	}
	_ = doomed.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = doomed.cmd.Process.Wait()

	s.startWorkerProcess(t, bin, "early-heir")
	ex := s.wait(t, id)
	if ex.Status != "succeeded" || ex.Stdout != "ran once\n" {
		t.Fatalf("one-off whose worker died before its code started: %s %q %+v; want it run by the next worker", ex.Status, ex.Stdout, ex.Error)
	}
}

// hangingKernelImage builds (once; it is a layer on the sandbox image) a sandbox
// image whose kernel driver never says ready.
func hangingKernelImage(t *testing.T) string {
	t.Helper()
	base := testenv.Image("sandbox")
	tag := "codeinterp/sandbox:test-hanging-kernel"
	dockerfile := "FROM " + base + "\nUSER 0\nRUN printf 'import time\\ntime.sleep(3600)\\n' > /opt/codeinterp/driver.py\nUSER 1000:1000\n"
	cmd := exec.Command("docker", "build", "-q", "-t", tag, "-")
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	cmd.Stdin = strings.NewReader(dockerfile)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", tag, err, out)
	}
	return tag
}
