package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/internal/worker"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/sandboxtest"
)

// oneOff runs a one-off of tenant through the asynq handler and returns its record.
func (e *env) oneOff(r *worker.Runner, tenant string) *jobs.Execution {
	e.t.Helper()
	return e.oneOffIn(r, tenant, "")
}

// oneOffIn runs a one-off of tenant in profile ("": the default) through the asynq
// handler and returns its record.
func (e *env) oneOffIn(r *worker.Runner, tenant, profile string) *jobs.Execution {
	e.t.Helper()
	id := e.submitIn(tenant, "", profile, "print(1)")
	if err := r.ProcessOneOff(e.t.Context(), asynq.NewTask(jobs.TypeRun, jobs.Payload{ID: id}.Encode())); err != nil {
		e.t.Fatal(err)
	}
	ex := e.wait(id)
	if ex.Status != jobs.Succeeded {
		e.t.Fatalf("one-off of %s: %s %+v", tenant, ex.Status, ex.Error)
	}
	return ex
}

// sandboxOf returns the one sandbox that ran code for the last time, by its run count.
func (e *env) lastRan(before map[string]int) *sandboxtest.FakeSandbox {
	e.t.Helper()
	var ran *sandboxtest.FakeSandbox
	for _, b := range e.fake.Sandboxes() {
		if runs, _, _, _ := b.Stats(); runs > before[b.ID()] {
			if ran != nil {
				e.t.Fatalf("two sandboxes ran code: %s and %s", ran.ID(), b.ID())
			}
			ran = b
		}
	}
	if ran == nil {
		e.t.Fatal("no sandbox that still exists ran the code")
	}
	return ran
}

func (e *env) runCounts() map[string]int {
	m := map[string]int{}
	for _, b := range e.fake.Sandboxes() {
		m[b.ID()], _, _, _ = b.Stats()
	}
	return m
}

// A one-off runs in a sandbox of the one-off pool; wiped, it serves the same
// tenant's next one-off, and never another tenant's.
func TestOneOffRecycledForSameTenantOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *worker.Config) { c.OneOffPool, c.Recycle = 1, true })
	r := e.start()
	e.eventually(waitFor, "the one-off pool fills", func() bool { return len(e.fake.Sandboxes()) == 1 })

	e.oneOff(r, "acme")
	first := e.lastRan(nil)
	if first.Wipes() != 1 {
		t.Fatalf("acme's sandbox wiped %d times after its one-off, want 1", first.Wipes())
	}
	e.eventually(waitFor, "the pool refills", func() bool { return len(e.fake.Sandboxes()) == 2 })

	before := e.runCounts()
	e.oneOff(r, "acme")
	if again := e.lastRan(before); again != first {
		t.Fatalf("acme's second one-off ran in %s, want its recycled %s", again.ID(), first.ID())
	}
	before = e.runCounts()
	e.oneOff(r, "globex")
	if other := e.lastRan(before); other == first {
		t.Fatal("globex's one-off ran in acme's recycled sandbox")
	}
}

// A sandbox whose wipe fails is removed, not reused; without recycling every
// one-off's sandbox is removed.
func TestOneOffNotRecycled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		recycle bool
		runs    int
	}{{"wipe fails", true, 1}, {"recycling off", false, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(c *worker.Config) { c.Recycle = tc.recycle })
			r := e.start()
			e.fake.FailNextWipe(errors.New("zygote gone"))
			for range tc.runs {
				e.oneOff(r, "acme")
			}
			if n := len(e.fake.Sandboxes()); n != 0 || e.fake.Created() != tc.runs {
				t.Fatalf("%d sandboxes left, %d created; want none left, %d created", n, e.fake.Created(), tc.runs)
			}
		})
	}
}

// Idle recycled sandboxes are removed once idle past RecycleIdle.
func TestOneOffRecycledExpire(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	e := newEnv(t, func(c *worker.Config) { c.Recycle, c.RecycleIdle, c.Now = true, time.Minute, clock })
	r := e.start()
	e.oneOff(r, "acme")
	if n := len(e.fake.Sandboxes()); n != 1 {
		t.Fatalf("%d sandboxes after a one-off, want its recycled one", n)
	}
	now.Add(int64(time.Minute + time.Second))
	e.eventually(waitFor, "the idle sandbox removed", func() bool { return len(e.fake.Sandboxes()) == 0 })
}

var _ sandbox.Sandbox = (*sandboxtest.FakeSandbox)(nil)

// A stopping worker removes its idle recycled sandboxes and its one-off pool.
func TestOneOffSandboxesRemovedAtShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *worker.Config) { c.Recycle, c.OneOffPool = true, 1 })
	r := worker.NewRunner(e.cfg)
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.oneOff(r, "acme")
	e.eventually(waitFor, "a recycled sandbox and a pooled one", func() bool { return len(e.fake.Sandboxes()) == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.Shutdown(ctx)
	if n := len(e.fake.Sandboxes()); n != 0 {
		t.Fatalf("%d sandboxes left after shutdown", n)
	}
}
