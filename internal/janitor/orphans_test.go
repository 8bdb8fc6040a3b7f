package janitor_test

import (
	"errors"
	"testing"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/sandboxtest"
)

// One orphan the janitor cannot remove (its code broke it) comes first in the sweep:
// the others, a thread's, a blank and a one-off, are reclaimed all the same, and the
// bad one is tried again by later sweeps.
func TestOrphanSweepGoesPastABadSandbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.beat("w-dead")
	badThread, goodThread := jobs.NewThreadKey("acme", "broken"), jobs.NewThreadKey("acme", "fine")
	bad := e.threadSandbox(badThread, "w-dead") // listed first: the fake lists by id
	bad.FailRemove(errors.New("the sandbox's code broke it"))
	e.threadSandbox(goodThread, "w-dead")
	blank, err := e.fake.CreateBlank(e.ctx, sandbox.Spec{Owner: "w-dead"})
	if err != nil {
		t.Fatal(err)
	}
	oneOff, err := e.fake.Create(e.ctx, sandbox.Spec{Tenant: "acme", Owner: "w-dead"})
	if err != nil {
		t.Fatal(err)
	}
	e.markActive(badThread, e.clock.Now())
	e.markActive(goodThread, e.clock.Now())
	e.clock.Advance(orphanAge + heartbeatTTL)

	rep := e.janitor("janitor-1").Sweep(e.ctx)
	if rep.OrphansRemoved != 3 {
		t.Errorf("orphans removed = %d, want 3 (all but the bad one)", rep.OrphansRemoved)
	}
	for name, want := range map[string]bool{
		e.threadName(badThread): true, e.threadName(goodThread): false,
		blank.(*sandboxtest.FakeSandbox).Name(): false, oneOff.(*sandboxtest.FakeSandbox).Name(): false,
	} {
		if got := e.exists(name); got != want {
			t.Errorf("%s exists = %v, want %v", name, got, want)
		}
	}
	if st := e.threadState(goodThread); st.Sandbox != jobs.SandboxNone || !st.Snapshot {
		t.Errorf("good thread: sandbox=%q snapshot=%v, want none with a snapshot", st.Sandbox, st.Snapshot)
	}

	// The next sweeps try again: the thread has its snapshot now, so its sandbox is
	// one no active thread names, removed once IdleReap old.
	bad.FailRemove(nil)
	e.clock.Advance(idleReap)
	if rep := e.janitor("janitor-1").Sweep(e.ctx); rep.OrphansRemoved != 1 || e.exists(e.threadName(badThread)) {
		t.Errorf("the next sweep removed %d, bad sandbox still there: %v", rep.OrphansRemoved, e.exists(e.threadName(badThread)))
	}
}
