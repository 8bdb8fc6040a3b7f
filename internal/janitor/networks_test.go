package janitor_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/internal/janitor"
	"github.com/codeinterp/codeinterp/sandbox/sandboxtest"
)

// hostWithNetworks is the fake host with egress networks to sweep.
type hostWithNetworks struct {
	*sandboxtest.Fake
	minAge time.Duration
	n      int
	err    error
}

func (h *hostWithNetworks) SweepEgressNetworks(_ context.Context, minAge time.Duration) (int, error) {
	h.minAge = minAge
	return h.n, h.err
}

// The janitor sweeps a host's orphan egress networks, sparing young ones, and counts
// them; a failed sweep removes nothing and does not stop the janitor's next.
func TestSweepEgressNetworks(t *testing.T) {
	e := newEnv(t)
	h := &hostWithNetworks{Fake: e.fake, n: 2}
	j := janitor.New(janitor.Config{Records: e.recs, Threads: e.threads, Sandboxes: h, Store: e.store, Tasks: e.tasks, ID: "j",
		Logger: slog.New(slog.DiscardHandler), Now: e.clock.Now})
	if rep := j.Sweep(e.ctx); rep.NetworksRemoved != 2 || h.minAge < time.Minute {
		t.Fatalf("removed %d (min age %s)", rep.NetworksRemoved, h.minAge)
	}
	h.n, h.err = 0, errors.New("engine down")
	if rep := j.Sweep(e.ctx); rep.NetworksRemoved != 0 {
		t.Fatalf("removed %d", rep.NetworksRemoved)
	}
}
