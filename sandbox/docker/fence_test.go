package docker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// The double handling seen after faults, replayed on a real sandbox: worker A holds a
// thread's sandbox under token 100; B takes the thread over (token 200) and adopts the
// sandbox. From then on every step A takes is refused — restarting its kernel (which
// would kill B's), adopting the sandbox again, pausing, snapshotting, removing it —
// while B's kernel and its state survive all of them.
func TestDockerFenceRefusesStaleOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := fmt.Sprintf("citest-fence%d", os.Getpid())
	d := newDocker(t, prefix)
	t.Cleanup(func() { removeInstallation(t, prefix) })
	spec := sandbox.Spec{Tenant: "acme", Thread: "fenced", Fence: 100}
	a, err := d.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	runCode(t, a, "x = 'A'")

	spec.Fence = 200
	b, err := d.Find(ctx, spec)
	if err != nil || b == nil {
		t.Fatalf("B's adoption = %v, %v", b, err)
	}
	runCode(t, b, "x = 'B'")

	// A goes on: its kernel was killed by B's adoption, and it may not start another.
	var fenced error
	for i := 0; i < 2 && fenced == nil; i++ {
		_, fenced = a.Run(ctx, sandbox.Request{ID: fmt.Sprint("a", i), Code: "print(x)"}, nil)
	}
	if !errors.Is(fenced, sandbox.ErrFenced) {
		t.Errorf("stale owner's run = %v, want ErrFenced", fenced)
	}
	spec.Fence = 150
	if sb, err := d.Find(ctx, spec); !errors.Is(err, sandbox.ErrFenced) {
		t.Errorf("stale owner's adoption = %v, %v; want ErrFenced", sb, err)
	}
	if err := a.Pause(ctx); !errors.Is(err, sandbox.ErrFenced) {
		t.Errorf("stale owner's pause = %v, want ErrFenced", err)
	}
	if rc, err := a.Snapshot(ctx); !errors.Is(err, sandbox.ErrFenced) {
		if rc != nil {
			rc.Close()
		}
		t.Errorf("stale owner's snapshot = %v, want ErrFenced", err)
	}
	if err := a.Remove(ctx); !errors.Is(err, sandbox.ErrFenced) {
		t.Errorf("stale owner's remove = %v, want ErrFenced", err)
	}
	if out := runCode(t, b, "print(x)"); out.Stdout != "B\n" || out.KernelRestarted {
		t.Errorf("B's kernel after A's attempts: %+v", out)
	}

	// B removes its sandbox: it is retired first, so no owner can adopt it halfway.
	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	spec.Fence = 300
	if sb, err := d.Find(ctx, spec); sb != nil || (err != nil && !errors.Is(err, sandbox.ErrFenced)) {
		t.Errorf("Find after removal = %v, %v; want nothing", sb, err)
	}
}

// Two owners adopt one sandbox at the same moment, the interleaving that produced
// "kernel did not start: no output" on one and "No such container" on the other. The
// newer one always ends up with the only working kernel; the older one is refused.
func TestDockerFenceConcurrentAdoption(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := fmt.Sprintf("citest-fencec%d", os.Getpid())
	d := newDocker(t, prefix)
	t.Cleanup(func() { removeInstallation(t, prefix) })
	spec := sandbox.Spec{Tenant: "acme", Thread: "raced", Fence: 10}
	first, err := d.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	first.Release()
	for round := int64(1); round <= 3; round++ {
		older, newer := spec, spec
		older.Fence, newer.Fence = round*100, round*100+1
		var wg sync.WaitGroup
		var sbOld, sbNew sandbox.Sandbox
		var errOld, errNew error
		wg.Go(func() { sbOld, errOld = d.Find(ctx, older) })
		wg.Go(func() { sbNew, errNew = d.Find(ctx, newer) })
		wg.Wait()
		if errNew != nil {
			t.Fatalf("round %d: the newer owner's adoption failed: %v", round, errNew)
		}
		if errOld != nil && !errors.Is(errOld, sandbox.ErrFenced) {
			t.Errorf("round %d: the older owner's adoption failed with %v, want ErrFenced or success", round, errOld)
		}
		if sbOld != nil {
			// Adopted before the newer owner fenced: its kernel is gone, and it
			// cannot start another.
			if _, err := sbOld.Run(ctx, sandbox.Request{ID: "old", Code: "1"}, nil); err == nil {
				if _, err = sbOld.Run(ctx, sandbox.Request{ID: "old2", Code: "1"}, nil); !errors.Is(err, sandbox.ErrFenced) {
					t.Fatalf("round %d: the older owner still runs code: %v", round, err)
				}
			}
			sbOld.Release()
		}
		if out := runCode(t, sbNew, fmt.Sprintf("r = %d\nprint(r)", round)); out.Stdout != fmt.Sprintf("%d\n", round) {
			t.Fatalf("round %d: newer owner's run: %+v", round, out)
		}
		sbNew.Release()
	}
}

func runCode(t *testing.T, sb sandbox.Sandbox, code string) sandbox.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := sb.Run(ctx, sandbox.Request{ID: fmt.Sprint(time.Now().UnixNano()), Code: code}, nil)
	if err != nil || out.Status != sandbox.Succeeded {
		t.Fatalf("run %q: %+v, %v", code, out, err)
	}
	return out
}
