package worker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/egressreg"
	"github.com/codeinterp/codeinterp/sandbox"
)

// EgressRegistry is where a worker says which execution is behind a sandbox's
// egress address, for the egress proxy, and reads what the code tried;
// *egressreg.Registry provides it.
type EgressRegistry interface {
	Register(ctx context.Context, addr netip.Addr, id egressreg.Identity, ttl time.Duration) error
	Forget(ctx context.Context, addr netip.Addr) error
	Ledger(ctx context.Context, execution string) ([]jobs.EgressEntry, int64, error)
}

// errNoEgress fails an execution that asked for egress where there is none.
var errNoEgress = jobs.ErrEgressUnavailable.With("this execution asked for network access, and this installation's workers have no egress proxy (CODEINTERP_EGRESS_PROXY)")

// egressSandbox creates a one-off sandbox with egress: never pooled or recycled, so
// what one execution installed or left is never another's.
func (r *Runner) egressSandbox(ctx context.Context, ex *jobs.Execution, p jobs.Profile) (sandbox.Sandbox, error) {
	if r.cfg.Egress == nil {
		return nil, sandbox.ErrNoEgress
	}
	return r.cfg.Runtime.Create(ctx, sandbox.Spec{Tenant: ex.Tenant, Owner: r.cfg.Worker, Image: p.Image, Limits: p.Limits, Egress: true})
}

// registerEgress tells the egress proxy that sb's address is ex's, with ex's rules,
// for as long as ex may run (and a margin); the returned func forgets it.
func (r *Runner) registerEgress(ctx context.Context, sb sandbox.Sandbox, ex *jobs.Execution) (func(), error) {
	addr, ok := sb.EgressAddr()
	if !ok {
		return nil, fmt.Errorf("sandbox %s was made with egress and has no egress address", sb.ID())
	}
	ttl := time.Duration(ex.TimeoutMS)*time.Millisecond + 2*time.Minute
	id := egressreg.Identity{Tenant: ex.Tenant, Thread: ex.ThreadID, Execution: ex.ID, Allow: ex.Egress.Allow}
	if err := r.cfg.Egress.Register(ctx, addr, id, ttl); err != nil {
		return nil, err
	}
	return func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := r.cfg.Egress.Forget(fctx, addr); err != nil {
			r.cfg.Logger.Warn("forget an egress address", "execution", ex.ID, "err", err)
		}
	}, nil
}

// readLedger puts what ex's code tried through the proxy into its outcome.
func (r *Runner) readLedger(ctx context.Context, ex *jobs.Execution) {
	entries, dropped, err := r.cfg.Egress.Ledger(ctx, ex.ID)
	if err != nil {
		r.cfg.Logger.Warn("read the egress ledger", "execution", ex.ID, "err", err)
		ex.Notes = append(ex.Notes, "the egress ledger could not be read")
		return
	}
	ex.Network, ex.NetworkTruncated = entries, dropped > 0
}

// isNoEgress reports whether a sandbox could not be made because there is no egress.
func isNoEgress(err error) bool { return errors.Is(err, sandbox.ErrNoEgress) }
