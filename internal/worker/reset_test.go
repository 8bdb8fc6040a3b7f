package worker_test

import (
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
)

func TestResetRestartsKernelKeepsSandbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.start()
	e.run("acme", "t1", "x")
	box := e.box("acme", "t1")
	putFile(t, box, "kept.txt", "kept")

	op := &jobs.Execution{ID: jobs.NewOpID(), Kind: jobs.KindReset, Tenant: "acme", ThreadID: "t1", Status: jobs.Queued, CreatedAt: time.Now()}
	if _, err := e.recs.Create(t.Context(), op, "", ""); err != nil {
		t.Fatal(err)
	}
	if got := e.wait(op.ID); got.Status != jobs.Succeeded {
		t.Fatalf("reset: %s %+v", got.Status, got.Error)
	}
	after := e.box("acme", "t1")
	if after == nil || after.ID() != box.ID() {
		t.Fatalf("reset replaced the sandbox: %v, want %s", after, box.ID())
	}
	if _, _, adoptions, _ := after.Stats(); adoptions != 1 {
		t.Errorf("kernel restarted %d times, want 1 (the sandbox adopted again)", adoptions)
	}
	if got := readFile(t, after, "kept.txt"); got != "kept" {
		t.Errorf("workspace after reset: %q", got)
	}
	if n := e.fake.Created(); n != 1 {
		t.Errorf("created %d sandboxes, want 1", n)
	}
	if ex := e.run("acme", "t1", "y"); !ex.Sandbox.Reused {
		t.Errorf("the run after a reset: %+v, want the warm sandbox", ex.Sandbox)
	}
}
