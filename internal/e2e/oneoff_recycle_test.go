package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox/sandboxtest"
)

// TestOneOffRecycleIsolation: a one-off that leaves everything it can behind (files in
// the workspace, /tmp and $HOME, environment variables, a patched module, a setsid
// background process, listening unix sockets, System V shared memory, another
// working directory) runs in a sandbox that is then wiped and kept for its tenant:
// the tenant's next one-off runs in that very sandbox and sees none of it; another
// tenant's one-off never gets it. The janitor does not take the idle sandbox for an
// orphan, and the worker removes it when it stops.
func TestOneOffRecycleIsolation(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{recycle: true, oneOffPool: 1, concurrency: 1})
	left := s.run(t, map[string]any{"code": sandboxtest.LeaveEverything})
	if left.Status != "succeeded" {
		t.Fatalf("leaving things behind: %s %+v %q", left.Status, left.Error, left.Stderr)
	}
	acme := strings.TrimSpace(left.Stdout)

	// Its owner is alive: however old, the idle sandbox is no orphan.
	s.newJanitor(time.Hour, 2*time.Hour).Sweep(context.Background())

	next := s.run(t, map[string]any{"code": sandboxtest.LookAround})
	if next.Status != "succeeded" {
		t.Fatalf("looking around: %s %+v %q", next.Status, next.Error, next.Stderr)
	}
	if host := sandboxtest.WantNothingLeft(t, next.Stdout); host != acme {
		t.Fatalf("acme's next one-off ran in %s, not in its recycled sandbox %s: nothing was tested", host, acme)
	}

	var other execution
	if code := s.callAs(t, "key-b", "POST", "/v1/executions", map[string]any{"code": sandboxtest.LookAround}, &other); code >= 300 {
		t.Fatalf("globex's one-off: HTTP %d", code)
	}
	eventually(t, 2*time.Minute, "globex's one-off ends", func() bool {
		s.callAs(t, "key-b", "GET", "/v1/executions/"+other.ID, nil, &other)
		return other.Status != "queued" && other.Status != "running"
	})
	if other.Status != "succeeded" {
		t.Fatalf("globex's one-off: %s %+v", other.Status, other.Error)
	}
	if host := sandboxtest.WantNothingLeft(t, other.Stdout); host == acme {
		t.Fatal("globex's one-off ran in acme's recycled sandbox")
	}
	// acme's sandbox is still acme's.
	if again := s.run(t, map[string]any{"code": sandboxtest.LookAround}); sandboxtest.WantNothingLeft(t, again.Stdout) != acme {
		t.Fatal("acme's recycled sandbox is gone")
	}
	s.workers[0].stop(time.Minute)
	s.wantNoSandboxes(t)
}
