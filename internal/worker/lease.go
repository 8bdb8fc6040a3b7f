package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/threadq"
)

// Fencing: the worker holds each thread under a lease (jobs/threadq), whose token
// grows with every claim. Every step that changes the thread — taking its next item,
// starting and ending an item, releasing it — presents the lease and is refused once
// another worker holds the thread; the thread's sandbox is fenced with the same token
// (sandbox.Sandbox.Fence), so a stale owner can neither kill the new owner's kernel
// nor pause, snapshot or remove its sandbox. A worker that finds its lease gone stops
// touching the thread: it drops it after the item it is running, whose end is refused.

// leaseOf returns the lease this worker holds th under.
func (r *Runner) leaseOf(th *thread) threadq.Lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	return th.lease
}

// heldLease returns the lease this worker holds thread tk under, if it does.
func (r *Runner) heldLease(tk jobs.ThreadKey) (threadq.Lease, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	th := r.owned[tk]
	if th == nil || th.lost {
		return threadq.Lease{}, false
	}
	return th.lease, true
}

// transition saves ex if its stored status is one of from. An item of a thread is
// saved only under this worker's lease of the thread: once another worker holds the
// thread it fails with threadq.ErrLost, and the thread is dropped. A lease changed
// while the thread is still this worker's (newerLease) is followed.
func (r *Runner) transition(ctx context.Context, ex *jobs.Execution, from ...jobs.Status) (bool, jobs.Status, error) {
	if ex.ThreadID == "" {
		return r.cfg.Records.Transition(ctx, ex, from...)
	}
	tk := jobs.NewThreadKey(ex.Tenant, ex.ThreadID)
	lease, ok := r.heldLease(tk)
	if !ok {
		return false, "", fmt.Errorf("update execution %s: %w", ex.ID, threadq.ErrLost)
	}
	done, found, err := r.cfg.Records.TransitionAs(ctx, lease, ex, from...)
	if errors.Is(err, threadq.ErrLost) {
		if again, ok := r.newerLease(ctx, lease); ok {
			lease = again
			done, found, err = r.cfg.Records.TransitionAs(ctx, lease, ex, from...)
		}
	}
	if errors.Is(err, threadq.ErrLost) {
		r.lose(lease)
	}
	return done, found, err
}

// newerLease returns a lease of this worker on lease's thread newer than lease, when
// the thread is still this worker's: one it took meanwhile, or a new claim when Redis
// names no owner or another claim of this very worker — a crash lost the last
// writes, and no other worker may take the thread while this one lives.
func (r *Runner) newerLease(ctx context.Context, lease threadq.Lease) (threadq.Lease, bool) {
	r.reclaim.Lock()
	defer r.reclaim.Unlock()
	if cur, ok := r.heldLease(lease.Thread); ok && cur.Token > lease.Token {
		return cur, true
	}
	owner, err := r.queue.Owner(ctx, lease.Thread)
	if err != nil || owner != "" && owner != r.cfg.Worker {
		return lease, false
	}
	again, _, err := r.queue.Claim(ctx, lease.Thread, r.cfg.Worker)
	if err != nil {
		return lease, false
	}
	r.cfg.Logger.Warn("thread lease lost in Redis; claimed again", "thread", lease.Thread)
	r.renew(lease, again)
	return again, true
}

// revalidate checks, on each heartbeat, that this worker still holds the lease of
// every thread it serves. A thread another worker holds now is dropped (after the
// item it runs, whose end is refused). A thread whose owner key is gone while nobody
// holds it, or names an older lease of this worker — a Redis crash lost the last
// writes — is claimed again under a new lease,
// so the item running goes on and ends normally; its warm sandbox is fenced again
// before its next use.
func (r *Runner) revalidate(ctx context.Context) {
	r.mu.Lock()
	leases := make([]threadq.Lease, 0, len(r.owned))
	for _, th := range r.owned {
		if !th.lost {
			leases = append(leases, th.lease)
		}
	}
	r.mu.Unlock()
	if len(leases) == 0 {
		return
	}
	holds, err := r.queue.Holds(ctx, leases)
	if err != nil {
		r.cfg.Logger.Warn("check thread leases", "err", err)
		return
	}
	for _, h := range holds {
		if h.Held {
			continue
		}
		// Nobody holds it, or Redis rolled it back to an older claim of this very
		// worker (a crash lost the last one): no other worker may take it while this
		// one lives, so this one claims it again rather than let go.
		if h.Owner == "" || h.Owner == r.cfg.Worker {
			err := r.claimAgain(ctx, h.Lease)
			if err == nil {
				continue
			}
			if !errors.Is(err, threadq.ErrOwned) {
				r.cfg.Logger.Warn("claim thread again", "thread", h.Lease.Thread, "err", err)
				continue
			}
		}
		r.lose(h.Lease)
	}
}

// claimAgain claims old's thread again for this worker, unless an item's end
// (newerLease) did meanwhile: nil when this worker holds the thread now.
func (r *Runner) claimAgain(ctx context.Context, old threadq.Lease) error {
	r.reclaim.Lock()
	defer r.reclaim.Unlock()
	if cur, ok := r.heldLease(old.Thread); ok && cur.Token > old.Token {
		return nil
	}
	lease, _, err := r.queue.Claim(ctx, old.Thread, r.cfg.Worker)
	if err != nil {
		return err
	}
	r.cfg.Logger.Warn("thread lease vanished from Redis; claimed again", "thread", old.Thread)
	r.renew(old, lease)
	return nil
}

// renew replaces old by lease, a newer claim of its thread by this worker.
func (r *Runner) renew(old, lease threadq.Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Newer than whatever it holds now: this worker may have claimed the thread again
	// meanwhile (a second offer of it), but this claim came last.
	if th := r.owned[old.Thread]; th != nil && lease.Token > th.lease.Token {
		th.lease, th.lost, th.refence = lease, false, th.sb != nil
	}
}

// lose marks the thread of lease as taken over: this worker stops touching it, now if
// no item runs, else as soon as the running one returns.
func (r *Runner) lose(lease threadq.Lease) {
	r.mu.Lock()
	th := r.owned[lease.Thread]
	if th == nil || th.lease != lease || th.lost {
		r.mu.Unlock()
		return
	}
	th.lost = true
	running := th.running
	r.mu.Unlock()
	r.cfg.Logger.Warn("thread taken over by another worker; letting go", "thread", lease.Thread)
	if !running {
		r.drop(th)
	}
}
