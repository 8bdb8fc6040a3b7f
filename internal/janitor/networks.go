package janitor

import (
	"context"
	"time"
)

// EgressNetworks is what a host whose sandboxes may have networks of their own
// offers the janitor: the removal of those whose sandbox is gone. A host without it
// (or hidden behind a decorator) has none to sweep.
type EgressNetworks interface {
	SweepEgressNetworks(ctx context.Context, minAge time.Duration) (int, error)
}

// networkMinAge spares a network made moments ago, whose sandbox is still starting.
const networkMinAge = 5 * time.Minute

// sweepNetworks removes egress networks a dead worker left without their sandbox.
func (j *Janitor) sweepNetworks(ctx context.Context, rep *Report) error {
	h, ok := j.cfg.Sandboxes.(EgressNetworks)
	if !ok {
		return nil
	}
	n, err := h.SweepEgressNetworks(ctx, networkMinAge)
	rep.NetworksRemoved += n
	return err
}
