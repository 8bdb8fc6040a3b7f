package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/internal/worker"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// No tenant can starve the others: what one execution may put into worker memory,
// Redis and storage is bounded, and nothing a thread does leaves it stuck.

// budgeted is an execution with the fields the budgets add.
type budgeted struct {
	execution
	ResultsTruncated bool     `json:"results_truncated"`
	Notes            []string `json:"notes"`
	CPUMS            *int64   `json:"cpu_ms"`
	DurationMS       *int64   `json:"duration_ms"`
}

func (s *stack) runBudgeted(t *testing.T, req map[string]any) budgeted {
	t.Helper()
	id := s.submit(t, "key-a", req)
	s.wait(t, id)
	var ex budgeted
	if code := s.call(t, "GET", "/v1/executions/"+id, nil, &ex); code != http.StatusOK {
		t.Fatalf("GET %s: %d", id, code)
	}
	return ex
}

// streamed returns the execution's event stream, as the records keep it.
func (s *stack) streamed(t *testing.T, id string) []jobs.Event {
	t.Helper()
	var out []jobs.Event
	for after := "0"; ; {
		evs, err := s.records.Events(context.Background(), id, after, -1)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			return out
		}
		out = append(out, evs...)
		after = evs[len(evs)-1].ID
	}
}

// Rich results are capped per execution by count (100) and bytes (4 MiB), in the
// record and the stream; the kernel's CPU time is reported and counted as usage.
func TestBudgetResults(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	for _, tc := range []struct {
		name, code string
		wantCount  int
	}{
		{"large", "for i in range(500):\n    display('x' * (100 << 10))", 40}, // 4 MiB / (100 KiB + quotes + "text/plain")
		{"many", "for i in range(500):\n    display(i)", 100},
	} {
		ex := s.runBudgeted(t, map[string]any{"thread_id": "results", "code": tc.code})
		size := 0
		for _, r := range ex.Results {
			size += len(r.Type) + len(r.Text) + len(r.File)
		}
		if ex.Status != "succeeded" || len(ex.Results) != tc.wantCount || size > 4<<20 || !ex.ResultsTruncated {
			t.Errorf("%s: %s %+v, %d results of %d bytes, results_truncated %v; want %d results within 4 MiB, truncated",
				tc.name, ex.Status, ex.Error, len(ex.Results), size, ex.ResultsTruncated, tc.wantCount)
		}
		n := 0
		for _, ev := range s.streamed(t, ex.ID) {
			if ev.Type == jobs.EventResult {
				n++
			}
		}
		if n > tc.wantCount {
			t.Errorf("%s: %d result events, want at most %d", tc.name, n, tc.wantCount)
		}
	}

	ex := s.runBudgeted(t, map[string]any{"thread_id": "results", "code": "sum(i * i for i in range(3 * 10**6))"})
	if ex.CPUMS == nil || ex.DurationMS == nil || *ex.CPUMS <= 0 || *ex.CPUMS > *ex.DurationMS {
		t.Errorf("cpu_ms %v for a CPU-bound run of %v ms", ex.CPUMS, ex.DurationMS)
	}
	u, err := s.records.Usage(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if u.Executions[jobs.Succeeded] != 3 || u.CPUSeconds <= 0 || u.WallSeconds <= 0 {
		t.Errorf("usage %+v, want 3 succeeded executions with CPU and wall time", u)
	}
}

// A 20 MB print loop with a 4 KiB inline output cap streams at most its 8 KiB
// budget, then one truncated event and no more output; stdout.log has everything.
func TestBudgetStream(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{limits: sandbox.Limits{Output: 4 << 10}})
	const lines = 20 << 10 // of 1 KiB: 20 MiB
	ex := s.runBudgeted(t, map[string]any{"code": fmt.Sprintf(
		"import sys\nline = 'x' * 1023 + '\\n'\nfor i in range(%d):\n    sys.stdout.write(line)\nprint('done', file=sys.stderr)\ndisplay(1)", lines)})
	if ex.Status != "succeeded" || !ex.StdoutTruncated {
		t.Fatalf("%s, stdout truncated %v, error %+v", ex.Status, ex.StdoutTruncated, ex.Error)
	}
	evs := s.streamed(t, ex.ID)
	var streamed int
	var truncated []int
	for i, ev := range evs {
		switch ev.Type {
		case jobs.EventStdout, jobs.EventStderr:
			var d struct{ Text string }
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			streamed += len(d.Text)
		case jobs.EventTruncated:
			truncated = append(truncated, i)
		}
	}
	if streamed > 8<<10 {
		t.Errorf("streamed %d bytes of stdout and stderr, over the 8192-byte budget", streamed)
	}
	if len(truncated) != 1 {
		t.Fatalf("%d truncated events, want 1", len(truncated))
	}
	var after []jobs.EventType
	for _, ev := range evs[truncated[0]+1:] {
		after = append(after, ev.Type)
	}
	if slices.Contains(after, jobs.EventStdout) || slices.Contains(after, jobs.EventStderr) || slices.Contains(after, jobs.EventResult) {
		t.Errorf("events after the truncated one: %v", after)
	}
	if !slices.Contains(after, jobs.EventFile) {
		t.Errorf("no file event after the truncated one: %v", after)
	}
	var log []byte
	for _, f := range ex.Files {
		if f.Name == "stdout.log" {
			log = download(t, f.URL)
		}
	}
	if len(log) != lines<<10 || strings.Count(string(log), "\n") != lines {
		t.Errorf("stdout.log holds %d bytes (%d lines), want all %d", len(log), strings.Count(string(log), "\n"), lines<<10)
	}
}

// No file may be much larger than the workspace (8 MiB here), so a sparse terabyte
// cannot be made; sparse files under it are collected only up to the run's budget
// (the workspace size), and a snapshot holds no more than the workspace can restore.
func TestBudgetSparseFiles(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ex := s.runBudgeted(t, map[string]any{"thread_id": "sparse", "code": "f = open('big.bin', 'wb')\nf.truncate(1 << 40)"})
	if ex.Status != "failed" || ex.Error == nil || !strings.Contains(ex.Error.Value, "File too large") {
		t.Fatalf("a sparse terabyte: %s, error %+v; want EFBIG (File too large)", ex.Status, ex.Error)
	}

	ex = s.runBudgeted(t, map[string]any{"thread_id": "sparse",
		"code": "import os\nos.remove('big.bin')\nfor i in range(50):\n    open(f'outputs/s{i:02}.bin', 'wb').truncate(7 << 20)"})
	if ex.Status != "succeeded" || len(ex.Files) != 1 || ex.Files[0].Name != "outputs/s00.bin" {
		t.Fatalf("50 sparse files of 7 MiB: %s %+v, files %+v; want only the first collected", ex.Status, ex.Error, ex.Files)
	}
	if len(ex.Notes) != 11 || !strings.HasPrefix(ex.Notes[0], "outputs/s01.bin skipped: 7340032 bytes, over the ") ||
		ex.Notes[10] != "39 more output files skipped" {
		t.Errorf("notes %q", ex.Notes)
	}

	// Three more sparse files and a small one: 35 MiB to read, more than the 8 MiB
	// workspace could restore. The snapshot of the reap keeps what fits.
	s.run(t, map[string]any{"thread_id": "sparse", "code": "for i in range(3):\n    open(f'sparse{i}.bin', 'wb').truncate(7 << 20)\nopen('small.txt', 'w').write('small')"})
	j := s.newJanitor(100*time.Millisecond, 300*time.Millisecond)
	sweepUntil(t, j, "sandbox reaped", func() bool { return s.thread(t, "sparse").Sandbox == "none" })
	ex = s.runBudgeted(t, map[string]any{"thread_id": "sparse",
		"code": "import os\nprint(sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk('.') for f in fs))"})
	if ex.Status != "succeeded" || !ex.Sandbox.KernelRestarted {
		t.Fatalf("after restoring the snapshot: %s %+v %+v", ex.Status, ex.Error, ex.Sandbox)
	}
	var restored int64
	if _, err := fmt.Sscan(ex.Stdout, &restored); err != nil || restored > 8<<20 {
		t.Errorf("restored %q bytes, want at most the 8 MiB workspace", ex.Stdout)
	}
}

// A thread whose snapshot expired from storage goes on with an empty workspace,
// and its next execution says so.
func TestBudgetExpiredSnapshot(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.run(t, map[string]any{"thread_id": "expired", "code": "open('notes.txt', 'w').write('lost')"})
	j := s.newJanitor(100*time.Millisecond, 300*time.Millisecond)
	sweepUntil(t, j, "sandbox reaped", func() bool { return s.thread(t, "expired").Sandbox == "none" })
	n, err := s.store.DeletePrefix(context.Background(), jobs.SnapshotKey(jobs.NewThreadKey("acme", "expired")))
	if err != nil || n != 1 {
		t.Fatalf("delete the snapshot: %d, %v", n, err)
	}
	ex := s.runBudgeted(t, map[string]any{"thread_id": "expired", "code": "import os\nprint(os.path.exists('notes.txt'))"})
	if ex.Status != "succeeded" || ex.Stdout != "False\n" || !ex.Sandbox.KernelRestarted ||
		!slices.Equal(ex.Notes, []string{"the thread's saved workspace had expired; it starts empty"}) {
		t.Fatalf("after the snapshot expired: %s %q %+v %+v, notes %q", ex.Status, ex.Stdout, ex.Error, ex.Sandbox, ex.Notes)
	}
}

// A run longer than the idle pause time is not paused right after it ends: idle time
// counts from the end of the last run.
func TestBudgetIdleFromEndOfRun(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorkers: true})
	r := worker.NewRunner(worker.Config{
		Records: s.records, Threads: s.threads, Artifacts: s.store, Runtime: s.runtime, Limits: s.cfg.Limits(),
		Worker: s.prefix + "-active", Linger: time.Second, ActiveEvery: 100 * time.Millisecond, Logger: discardLogger,
	})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r.Shutdown(ctx)
	})
	s.run(t, map[string]any{"thread_id": "long", "code": "import time"})
	j := s.newJanitor(time.Second, time.Hour)
	id := s.submit(t, "key-a", map[string]any{"thread_id": "long", "code": "time.sleep(2.5)"})
	// The janitor sweeps all along the run, as often as it likes.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(time.Minute); ; <-tick.C {
		j.Sweep(context.Background())
		ex, err := s.records.Get(context.Background(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Status.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the long run did not end: %s", ex.Status)
		}
	}
	j.Sweep(context.Background())
	// Whatever the sweeps asked for is done once nothing is queued or in flight.
	tk := jobs.NewThreadKey("acme", "long")
	eventually(t, time.Minute, "the thread settles", func() bool {
		st, err := s.threads.State(context.Background(), tk)
		if err != nil {
			t.Fatal(err)
		}
		return len(st.Queued) == 0 && st.Inflight == ""
	})
	if th := s.thread(t, "long"); th.Sandbox != "running" {
		t.Fatalf("right after the run: sandbox %s, want running", th.Sandbox)
	}
	// Idle from then on, it is paused.
	sweepUntil(t, j, "sandbox paused once idle", func() bool { return s.thread(t, "long").Sandbox == "paused" })
}
