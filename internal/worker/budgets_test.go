package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/worker"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/sandboxtest"
)

// These tests pin the worker's budgets (no tenant's code may exhaust what all share)
// and its guarantees that an execution always ends, on the fake runtime.

// A flood of rich results is cut to the budget's count and bytes, in the record and
// in the stream, even from a runtime that ignores the request's bounds, and the
// execution says results_truncated.
func TestBudgetResultsCapped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		size      int // bytes of text per result
		budgets   worker.Budgets
		wantCount int
	}{
		{"by count", 10, worker.Budgets{}, 100},
		{"by bytes", 10 << 10, worker.Budgets{MaxResultBytes: 64 << 10}, 6}, // each counts 10 KiB + len("text/plain")
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(c *worker.Config) { c.Budgets = tc.budgets })
			var asked atomic.Value // the request the runtime got
			rich := sandbox.Rich{Type: "text/plain", Text: strings.Repeat("r", tc.size)}
			e.emit(func(req sandbox.Request) []sandbox.Event {
				asked.Store(req)
				evs := make([]sandbox.Event, 500)
				for i := range evs {
					evs[i] = sandbox.Event{Kind: sandbox.Result, Rich: rich}
				}
				return evs
			})
			e.fake.RunFunc = func(sandbox.Request) sandbox.Outcome {
				return sandbox.Outcome{Results: slices.Repeat([]sandbox.Rich{rich}, 500)}
			}
			e.start()
			ex := e.run("acme", "t1", "flood")
			if len(ex.Results) != tc.wantCount || !ex.ResultsTruncated {
				t.Errorf("record: %d results, results_truncated %v; want %d, true", len(ex.Results), ex.ResultsTruncated, tc.wantCount)
			}
			if n := len(e.events(ex.ID, jobs.EventResult)); n != tc.wantCount {
				t.Errorf("stream: %d result events, want %d", n, tc.wantCount)
			}
			req, _ := asked.Load().(sandbox.Request)
			want := tc.budgets.MaxResultBytes
			if want == 0 {
				want = 4 << 20
			}
			if req.MaxResults != 100 || req.MaxResultBytes != want {
				t.Errorf("runtime asked for at most %d results of %d bytes; want 100 of %d", req.MaxResults, req.MaxResultBytes, want)
			}
		})
	}
}

// Output past the stream's byte budget (by default twice the inline output cap) is
// not streamed: one truncated event says so, and no stdout, stderr or result event
// follows it, while status, file and done events still do. The full stdout is kept as
// stdout.log.
func TestBudgetStreamBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *worker.Config) { c.Limits.Output = 4 << 10 })
	stdout := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB
	e.emit(func(sandbox.Request) []sandbox.Event {
		var evs []sandbox.Event
		for chunk := range slices.Chunk([]byte(stdout), 64<<10) {
			evs = append(evs, sandbox.Event{Kind: sandbox.Stdout, Text: string(chunk)})
		}
		return append(evs, sandbox.Event{Kind: sandbox.Stderr, Text: "late"},
			sandbox.Event{Kind: sandbox.Result, Rich: sandbox.Rich{Type: "text/plain", Text: "late"}})
	})
	e.fake.RunFunc = func(sandbox.Request) sandbox.Outcome {
		return sandbox.Outcome{Stdout: "", StdoutTruncated: true} // the inline copy does not matter here
	}
	e.start()
	ex := e.run("acme", "t1", "print")
	evs := e.events(ex.ID)
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
		case jobs.EventResult:
			t.Errorf("a result event: it came after the budget was spent")
		case jobs.EventTruncated:
			truncated = append(truncated, i)
		}
	}
	if streamed != 8<<10 {
		t.Errorf("streamed %d bytes of output; want the 8192-byte budget (twice the inline output cap)", streamed)
	}
	if len(truncated) != 1 {
		t.Fatalf("%d truncated events, want 1: %v", len(truncated), types(evs))
	}
	for _, ev := range evs[truncated[0]+1:] {
		if ev.Type == jobs.EventStdout || ev.Type == jobs.EventStderr || ev.Type == jobs.EventResult {
			t.Fatalf("%s event after the truncated one: %v", ev.Type, types(evs))
		}
	}
	if last := evs[len(evs)-1].Type; last != jobs.EventStatus && last != jobs.EventDone {
		t.Errorf("stream ends with %s, want the end's status", last)
	}
	if got := e.artifact(ex, "stdout.log"); got != stdout {
		t.Errorf("stdout.log holds %d bytes, want the whole %d", len(got), len(stdout))
	}
}

// Each streamed entry is bounded, whatever the runtime sends: text is split into
// entries of at most 64 KiB (never inside a character), a longer result's text is cut.
func TestBudgetStreamEntriesBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *worker.Config) { c.Budgets.StreamBytes = 4 << 20 })
	stdout := strings.Repeat("é", 150<<10) // 300 KiB of two-byte characters
	rich := sandbox.Rich{Type: "text/plain", Text: strings.Repeat("x", 200<<10)}
	e.emit(func(sandbox.Request) []sandbox.Event { return []sandbox.Event{{Kind: sandbox.Result, Rich: rich}} })
	e.fake.RunFunc = func(sandbox.Request) sandbox.Outcome {
		return sandbox.Outcome{Stdout: stdout, Results: []sandbox.Rich{rich}} // the fake streams Stdout
	}
	e.start()
	ex := e.run("acme", "t1", "print")
	var got strings.Builder
	for _, ev := range e.events(ex.ID, jobs.EventStdout) {
		var d struct{ Text string }
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Text) > 64<<10 {
			t.Errorf("a stdout entry of %d bytes", len(d.Text))
		}
		got.WriteString(d.Text)
	}
	if got.String() != stdout {
		t.Errorf("streamed stdout differs: %d bytes, want %d", got.Len(), len(stdout))
	}
	results := e.events(ex.ID, jobs.EventResult)
	if len(results) != 1 {
		t.Fatalf("%d result events, want 1", len(results))
	}
	var r struct {
		Text      string
		Truncated bool
	}
	if err := json.Unmarshal(results[0].Data, &r); err != nil || len(r.Text) != 64<<10 || !r.Truncated {
		t.Errorf("result event: %d bytes of text, truncated %v (%v); want 65536, true", len(r.Text), r.Truncated, err)
	}
	if len(ex.Results) != 1 || len(ex.Results[0].Text) != 200<<10 {
		t.Errorf("the record's result was cut too: %d results", len(ex.Results))
	}
}

// Output collection skips a file larger than the workspace (a sparse one) and stops
// storing once the run's collection budget is spent; notes say what was skipped.
func TestBudgetCollect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *worker.Config) {
		c.Limits.Workspace = 1 << 20
		c.Budgets.CollectBytes = 1 << 20
	})
	outputs := []string{"outputs/huge.bin", "outputs/a.bin", "outputs/b.bin", "outputs/c.bin", "outputs/small.txt"}
	e.fake.RunFunc = func(req sandbox.Request) sandbox.Outcome {
		if req.Code == "collect" {
			return sandbox.Outcome{Outputs: outputs}
		}
		return sandbox.Outcome{}
	}
	e.start()
	e.run("acme", "t1", "make the sandbox")
	box := e.box("acme", "t1")
	putFile(t, box, "outputs/huge.bin", strings.Repeat("h", 1<<20+1))
	for _, name := range []string{"a", "b", "c"} {
		putFile(t, box, "outputs/"+name+".bin", strings.Repeat(name, 400<<10))
	}
	putFile(t, box, "outputs/small.txt", "small")

	ex := e.run("acme", "t1", "collect")
	var names []string
	var stored int64
	for _, f := range ex.Files {
		names = append(names, f.Name)
		stored += f.Size
	}
	if want := []string{"outputs/a.bin", "outputs/b.bin", "outputs/small.txt"}; !slices.Equal(names, want) {
		t.Errorf("collected %v, want %v", names, want)
	}
	if stored > 1<<20 {
		t.Errorf("collected %d bytes, over the 1 MiB budget", stored)
	}
	wantNotes := []string{
		"outputs/huge.bin skipped: 1048577 bytes, over the 1048576-byte workspace",
		"outputs/c.bin skipped: 409600 bytes, over the 229376 bytes left of what one run may collect",
	}
	if !slices.Equal(ex.Notes, wantNotes) {
		t.Errorf("notes %q, want %q", ex.Notes, wantNotes)
	}
	for _, key := range []string{"huge.bin", "c.bin"} {
		if e.store.has(jobs.ArtifactKey(ex, "outputs/"+key)) {
			t.Errorf("%s was stored", key)
		}
	}
}

// A record that would pass its size limit is cut to fit: the inline stdout and
// stderr first (stored whole as logs), results kept while they fit; a note says so.
func TestBudgetRecordCutToFit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *worker.Config) {
		c.Limits.Output = 1 << 20
		c.Budgets.MaxRecordBytes = 256 << 10
	})
	stdout, stderr := strings.Repeat("<o>", 200<<10), strings.Repeat("e\n", 50<<10) // 600 KiB, 100 KiB
	results := slices.Repeat([]sandbox.Rich{{Type: "text/plain", Text: strings.Repeat("r", 2<<10)}}, 20)
	e.emit(func(sandbox.Request) []sandbox.Event { return []sandbox.Event{{Kind: sandbox.Stderr, Text: stderr}} })
	e.fake.RunFunc = func(sandbox.Request) sandbox.Outcome {
		return sandbox.Outcome{Stdout: stdout, Stderr: stderr, Results: results} // the fake streams Stdout
	}
	e.start()
	ex := e.run("acme", "t1", "big")
	if b, _ := json.Marshal(ex); len(b) > 256<<10 {
		t.Errorf("stored record of %d bytes, over the %d-byte limit", len(b), 256<<10)
	}
	if !ex.StdoutTruncated || !ex.StderrTruncated || len(ex.Stdout) == 0 || !strings.HasPrefix(stdout, ex.Stdout) {
		t.Errorf("stdout: %d bytes, truncated %v; stderr truncated %v", len(ex.Stdout), ex.StdoutTruncated, ex.StderrTruncated)
	}
	if len(ex.Results) != len(results) || ex.ResultsTruncated {
		t.Errorf("%d results kept (truncated %v), want all %d: they fit", len(ex.Results), ex.ResultsTruncated, len(results))
	}
	if len(ex.Notes) != 1 || !strings.Contains(ex.Notes[0], "record") {
		t.Errorf("notes %q", ex.Notes)
	}
	if got := e.artifact(ex, "stdout.log"); got != stdout {
		t.Errorf("stdout.log holds %d bytes, want the whole %d", len(got), len(stdout))
	}
	if got := e.artifact(ex, "stderr.log"); got != stderr {
		t.Errorf("stderr.log holds %d bytes, want the whole %d", len(got), len(stderr))
	}
}

// A failed save of an execution's end is retried: the execution does not stay
// running because Redis failed once or twice.
func TestBudgetFinishRetriesFailedSave(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	// The worker's record store fails its first two attempts to end an execution.
	var failed atomic.Int32
	e.hook(func(cmd redis.Cmder) error {
		if isScript(cmd) && hasArg(cmd, string(jobs.Succeeded)) && failed.Add(1) <= 2 {
			return errors.New("injected: connection reset")
		}
		return nil
	})
	e.start()
	ex := e.run("acme", "t1", "x")
	if n := failed.Load(); n != 3 {
		t.Errorf("%d attempts to save the end, want 3", n)
	}
	if ex.FinishedAt == nil {
		t.Error("no finished_at")
	}
}

// An item whose record cannot be read once it was taken goes back to the head of
// its thread's queue and runs after a pause, before the items behind it.
func TestBudgetUnreadableItemRequeued(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ran := e.recordRuns()
	var failed atomic.Int32
	e.hook(func(cmd redis.Cmder) error {
		if cmd.Name() == "hget" && hasArg(cmd, "json") && failed.Add(1) == 1 {
			return errors.New("injected: connection reset")
		}
		return nil
	})
	first := e.submit("acme", "t1", "first")
	second := e.submit("acme", "t1", "second")
	e.start()
	for _, id := range []string{first, second} {
		if ex := e.wait(id); ex.Status != jobs.Succeeded {
			t.Errorf("%s: status %s, error %+v", id, ex.Status, ex.Error)
		}
	}
	if got := ran(); !slices.Equal(got, []string{first, second}) {
		t.Errorf("ran %v, want %v: in order, once each", got, []string{first, second})
	}
	if failed.Load() < 1 {
		t.Error("no read failed: the test tested nothing")
	}
}

// An ended execution adds its status, CPU time, run time and stored bytes to its
// tenant's usage; thread operations add nothing.
func TestBudgetUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.fake.RunFunc = func(req sandbox.Request) sandbox.Outcome {
		if req.Code == "work" {
			return sandbox.Outcome{CPUSeconds: 1.25, Outputs: []string{"outputs/r.txt"}}
		}
		return sandbox.Outcome{}
	}
	e.start()
	e.run("acme", "t1", "make the sandbox")
	putFile(t, e.box("acme", "t1"), "outputs/r.txt", strings.Repeat("r", 1000))
	if err := e.recs.EnqueueLifecycle(t.Context(), jobs.NewThreadKey("acme", "t1"), jobs.KindPause); err != nil {
		t.Fatal(err)
	}
	ex := e.run("acme", "t1", "work")
	if ex.CPUMS == nil || *ex.CPUMS != 1250 {
		t.Errorf("cpu_ms %v, want 1250", ex.CPUMS)
	}
	e.settled(jobs.NewThreadKey("acme", "t1"))
	u, err := e.recs.Usage(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if u.Executions[jobs.Succeeded] != 2 || len(u.Executions) != 1 {
		t.Errorf("executions by status %v, want 2 succeeded", u.Executions)
	}
	if u.CPUSeconds != 1.25 || u.BytesStored != 1000 || u.WallSeconds <= 0 {
		t.Errorf("usage %+v, want 1.25 CPU seconds, 1000 bytes stored, some wall time", u)
	}
}

// A thread whose snapshot expired from storage goes on with an empty workspace:
// its next execution runs, says kernel_restarted and carries a note.
func TestBudgetExpiredSnapshot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.start()
	tk := jobs.NewThreadKey("acme", "t1")
	e.run("acme", "t1", "x")
	putFile(t, e.box("acme", "t1"), "notes.txt", "gone with the snapshot")
	if err := e.recs.EnqueueLifecycle(t.Context(), tk, jobs.KindReap); err != nil {
		t.Fatal(err)
	}
	e.eventually(waitFor, "the sandbox is reaped", func() bool { return e.box("acme", "t1") == nil })
	e.settled(tk)
	if n, err := e.store.DeletePrefix(t.Context(), jobs.SnapshotKey(tk)); err != nil || n != 1 {
		t.Fatalf("delete the snapshot: %d, %v", n, err)
	}

	ex := e.run("acme", "t1", "x")
	if !ex.Sandbox.KernelRestarted || !slices.Contains(ex.Notes, "the thread's saved workspace had expired; it starts empty") {
		t.Errorf("after the snapshot expired: sandbox %+v, notes %q", ex.Sandbox, ex.Notes)
	}
	if files, _ := e.box("acme", "t1").Files(t.Context()); len(files) != 0 {
		t.Errorf("workspace %v, want empty", files)
	}
	if ex := e.run("acme", "t1", "x"); len(ex.Notes) != 0 {
		t.Errorf("the next execution has notes too: %q", ex.Notes)
	}
}

// A thread's activity is refreshed while an item runs and when it ends, so the idle
// clock runs from the end of the last item, not its start.
func TestBudgetActivityWhileRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *worker.Config) { c.ActiveEvery = 20 * time.Millisecond })
	release := make(chan struct{})
	var once sync.Once
	e.fake.RunFunc = func(sandbox.Request) sandbox.Outcome {
		<-release
		return sandbox.Outcome{}
	}
	e.start()
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	tk := jobs.NewThreadKey("acme", "t1")
	id := e.submit("acme", "t1", "long")
	var started time.Time
	e.eventually(waitFor, "the execution starts", func() bool {
		ex, err := e.recs.Get(t.Context(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		if ex.StartedAt != nil {
			started = *ex.StartedAt
		}
		return ex.StartedAt != nil
	})
	e.eventually(waitFor, "activity refreshed while the execution runs", func() bool {
		return e.lastActive(tk).After(started.Add(100 * time.Millisecond))
	})
	once.Do(func() { close(release) })
	ex := e.wait(id)
	e.eventually(waitFor, "activity recorded when the execution ended", func() bool {
		return e.lastActive(tk).After(*ex.FinishedAt)
	})
}

// emit makes the runtime deliver events(req) at the start of each run, as a real
// runtime streams them, then the fake's outcome; call before start.
func (e *env) emit(events func(sandbox.Request) []sandbox.Event) {
	e.cfg.Runtime = &emittingRuntime{Fake: e.fake, events: events}
}

// hook makes the worker's record store (not the test's) fail each command for which
// fail returns an error; call before start.
func (e *env) hook(fail func(redis.Cmder) error) {
	rdb := redis.NewClient(&redis.Options{Addr: e.rdb.Options().Addr, DB: e.rdb.Options().DB})
	e.t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(failHook(fail))
	e.cfg.Records = records.New(rdb, records.Config{Prefix: "ci:", TTL: time.Hour, Threads: e.threads})
}

// events returns the execution's stream, only the given types if any.
func (e *env) events(id string, only ...jobs.EventType) []jobs.Event {
	e.t.Helper()
	var out []jobs.Event
	for after := "0"; ; {
		evs, err := e.recs.Events(e.t.Context(), id, after, -1)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(evs) == 0 {
			return out
		}
		for _, ev := range evs {
			if len(only) == 0 || slices.Contains(only, ev.Type) {
				out = append(out, ev)
			}
		}
		after = evs[len(evs)-1].ID
	}
}

// artifact returns the stored artifact of ex named name.
func (e *env) artifact(ex *jobs.Execution, name string) string {
	e.t.Helper()
	for _, f := range ex.Files {
		if f.Name == name {
			e.store.mu.Lock()
			defer e.store.mu.Unlock()
			return string(e.store.objs[f.Key])
		}
	}
	e.t.Fatalf("no %s among the files of %s", name, ex.ID)
	return ""
}

func (e *env) lastActive(tk jobs.ThreadKey) time.Time {
	e.t.Helper()
	st, err := e.recs.ThreadState(e.t.Context(), tk)
	if err != nil || st == nil {
		return time.Time{}
	}
	return st.LastActiveAt
}

func types(evs []jobs.Event) []jobs.EventType {
	out := make([]jobs.EventType, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// emittingRuntime is the fake runtime, whose sandboxes first deliver the events its
// events function gives.
type emittingRuntime struct {
	*sandboxtest.Fake
	events func(sandbox.Request) []sandbox.Event
}

func (rt *emittingRuntime) wrap(sb sandbox.Sandbox, err error) (sandbox.Sandbox, error) {
	if sb == nil {
		return nil, err
	}
	return emittingSandbox{Sandbox: sb, events: rt.events}, err
}

func (rt *emittingRuntime) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	return rt.wrap(rt.Fake.Create(ctx, spec))
}

func (rt *emittingRuntime) Find(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	return rt.wrap(rt.Fake.Find(ctx, spec))
}

func (rt *emittingRuntime) CreateBlank(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	return rt.wrap(rt.Fake.CreateBlank(ctx, spec))
}

type emittingSandbox struct {
	sandbox.Sandbox
	events func(sandbox.Request) []sandbox.Event
}

func (s emittingSandbox) Run(ctx context.Context, req sandbox.Request, onEvent func(sandbox.Event)) (sandbox.Outcome, error) {
	for _, ev := range s.events(req) {
		onEvent(ev)
	}
	return s.Sandbox.Run(ctx, req, onEvent)
}

// failHook fails the commands for which its function returns an error.
type failHook func(redis.Cmder) error

func (h failHook) DialHook(redis.DialHook) redis.DialHook { return nil }

func (h failHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h(cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h failHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return nil
}

func isScript(cmd redis.Cmder) bool { return cmd.Name() == "evalsha" || cmd.Name() == "eval" }

// hasArg reports whether one of cmd's arguments is the string s.
func hasArg(cmd redis.Cmder, s string) bool {
	for _, a := range cmd.Args() {
		if v, ok := a.(string); ok && v == s {
			return true
		}
	}
	return false
}
