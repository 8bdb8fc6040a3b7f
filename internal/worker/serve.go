package worker

import (
	"context"
	"errors"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/threadq"
	"github.com/codeinterp/codeinterp/sandbox"
)

// thread is a thread this worker owns.
type thread struct {
	key        jobs.ThreadKey
	tenant, id string
	lease      threadq.Lease   // the claim this worker holds it under; under Runner.mu
	lost       bool            // the lease was found taken over: drop the thread after the item running
	sb         sandbox.Sandbox // warm sandbox, nil until an item needs one or after a reap
	profile    jobs.Profile    // of sb: set when the thread gets a sandbox
	refence    bool            // sb was fenced under an older lease: fence it again before use
	running    bool            // a runner goroutine serves the thread
	woken      bool            // woken since the runner last looked at the queue
	dirty      bool            // the workspace may have changed since the last snapshot
	lastUsed   time.Time       // for choosing what to evict under a cap
	notes      []string        // for the thread's next execution (its runner's only)

	skills map[string]string // skill name → digest put into sb (its runner's only)
}

// serve makes sure a runner serves the thread of lease; inflight is an item a
// previous owner left in flight. Calling it for a thread already served only makes
// the runner look at the queue again, so wake-ups are never lost.
func (r *Runner) serve(lease threadq.Lease, inflight string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shuttingDown() {
		go r.letGo(context.Background(), lease) // claimed just as the worker stops: hand it on
		return
	}
	tk := lease.Thread
	th := r.owned[tk]
	if th == nil {
		tenant, id := tk.Split()
		th = &thread{key: tk, tenant: tenant, id: id}
		r.owned[tk] = th
	}
	if lease.Token > th.lease.Token {
		// A new claim: the sandbox held under the old one may have been adopted by
		// another owner meanwhile; the next item finds it again under this lease.
		// (Tokens of a thread only grow: a lease older than the one held, served
		// late, changes nothing.)
		th.lease, th.lost = lease, false
		if th.sb != nil && !th.running {
			th.sb.Release()
			th.sb = nil
		}
		th.refence = th.sb != nil
	}
	th.woken = true
	if th.running {
		return
	}
	th.running = true
	r.runners.Go(func() { r.runThread(th, inflight) })
}

// runThread takes the thread's items one by one until its queue is empty. An item
// taken but neither run nor settled — its record could not be read or its start not
// recorded, as when Redis failed or this worker's lease of the thread was renewed
// under it — stays the thread's item in flight: it is taken again, after a pause,
// before any item behind it. (Taking the next one would overwrite the in-flight mark,
// and the item would wait queued forever.)
func (r *Runner) runThread(th *thread, inflight string) {
	ctx := r.runCtx
	pending := inflight
	for {
		r.mu.Lock()
		th.woken = false
		lease, lost := th.lease, th.lost
		if lost {
			r.dropLocked(th) // under the same lock, so a renewal cannot slip in between
		}
		r.mu.Unlock()
		if lost {
			return
		}
		if pending != "" {
			id := pending
			if pending = ""; !r.recoverInflight(ctx, th, id) {
				pending = id
				if !r.pause(ctx, time.Second) {
					r.idle(th, true)
					return
				}
			}
			continue
		}
		id, err := r.queue.Next(ctx, lease)
		switch {
		case errors.Is(err, threadq.ErrLost):
			if _, ok := r.newerLease(ctx, lease); !ok && r.dropIfLeased(th, lease) {
				return
			}
		case err != nil:
			r.cfg.Logger.Warn("take next item", "thread", th.key, "err", err)
			if !r.pause(ctx, time.Second) {
				r.idle(th, true)
				return
			}
		case id == "":
			if r.idle(th, false) {
				return
			}
		default:
			if !r.runItem(ctx, th, id) {
				pending = id
				if !r.pause(ctx, time.Second) {
					r.idle(th, true)
					return
				}
			}
			if r.shuttingDown() {
				r.idle(th, true)
				return
			}
		}
	}
}

// idle ends the runner unless the thread was woken meanwhile. The thread stays
// owned, its sandbox warm, for the next wake-up.
func (r *Runner) idle(th *thread, force bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if th.woken && !force {
		return false
	}
	th.running = false
	return true
}

// drop forgets a thread this worker no longer owns. Its sandbox stays for the new
// owner to adopt.
func (r *Runner) drop(th *thread) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked(th)
}

// dropIfLeased drops the thread unless its lease was renewed since lease (this worker
// claimed it again meanwhile); it reports whether it dropped it.
func (r *Runner) dropIfLeased(th *thread, lease threadq.Lease) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if th.lease != lease && !th.lost {
		return false
	}
	r.dropLocked(th)
	return true
}

func (r *Runner) dropLocked(th *thread) {
	if r.owned[th.key] != th {
		return
	}
	if th.sb != nil {
		th.sb.Release()
		th.sb = nil
	}
	th.running = false
	delete(r.owned, th.key)
}

func (r *Runner) releaseSlot(tenant string) {
	r.slots.release(tenant)
	select {
	case r.freed <- struct{}{}:
	default:
	}
}

// recoverInflight settles the item in flight — a dead owner's, or one this runner
// took and could not start: if its code may have started, it failed; if not, it runs
// now, still first in line. It reports whether the item is settled (runItem).
func (r *Runner) recoverInflight(ctx context.Context, th *thread, id string) bool {
	ex, err := r.cfg.Records.Get(ctx, "", id)
	for attempt := 1; err != nil && !errors.Is(err, records.ErrNotFound) && attempt < 5 && r.pause(ctx, time.Duration(attempt)*time.Second); attempt++ {
		ex, err = r.cfg.Records.Get(ctx, "", id)
	}
	if errors.Is(err, records.ErrNotFound) {
		return true
	}
	if err != nil {
		r.cfg.Logger.Warn("load in-flight item", "id", id, "err", err)
		return false
	}
	switch ex.Status {
	case jobs.Running:
		_ = r.finish(ctx, ex, jobs.Failed, jobs.ErrWorkerLost.With(
			"the worker running this execution died before it finished; it was not re-run because the code may already have had effects"))
	case jobs.Queued:
		return r.runItem(ctx, th, id)
	}
	return true
}

// runItem runs one queued item of a thread. Items that are no longer queued (a
// canceled execution) are skipped. It reports false when the item was neither run
// nor settled — its record could not be read, or its start could not be recorded —
// so the runner takes it again (runThread).
func (r *Runner) runItem(ctx context.Context, th *thread, id string) bool {
	ex, err := r.cfg.Records.Get(ctx, "", id)
	if errors.Is(err, records.ErrNotFound) {
		r.cfg.Logger.Warn("thread item has no record; skipping it", "id", id)
		return true
	}
	if err != nil {
		r.cfg.Logger.Warn("load thread item; taking it again after a pause", "id", id, "err", err)
		return false
	}
	if ex.Status != jobs.Queued || ex.Tenant != th.tenant || ex.ThreadID != th.id {
		return true
	}
	if !r.slots.acquire(ctx, th.tenant) {
		return false // stopping: it stays in flight for the next owner
	}
	defer r.releaseSlot(th.tenant)
	switch ex.Kind {
	case jobs.KindExecution, jobs.KindPutFile, jobs.KindGetFile:
		// The idle clock runs from the end of the thread's last item, not its start.
		r.markActive(ctx, th)
		stop := r.keepActive(ctx, th)
		defer func() {
			stop()
			r.markActive(ctx, th)
		}()
	}
	if ex.Kind == jobs.KindExecution {
		return r.runThreadExecution(ctx, th, ex)
	}
	return r.runOp(ctx, th, ex)
}

// runThreadExecution runs a thread's execution; it reports false when it did not
// start it (see runItem).
func (r *Runner) runThreadExecution(ctx context.Context, th *thread, ex *jobs.Execution) bool {
	sb, info, err := r.threadSandbox(ctx, th)
	for attempt := 1; err != nil && !errors.Is(err, sandbox.ErrFenced) && attempt < 3 && r.pause(ctx, time.Duration(attempt)*time.Second); attempt++ {
		// The code has not started: a service hiccup is worth another try.
		r.cfg.Logger.Warn("get thread sandbox; retrying", "thread", th.id, "err", err)
		sb, info, err = r.threadSandbox(ctx, th)
	}
	if errors.Is(err, sandbox.ErrFenced) {
		// A newer owner holds the thread and its sandbox; it runs this item.
		r.lose(r.leaseOf(th))
		return false
	}
	if err != nil {
		_ = r.finish(ctx, ex, jobs.Failed, r.internalError(ex, err))
		return true
	}
	ex.Sandbox = info
	ex.Notes, th.notes = append(ex.Notes, th.notes...), nil
	r.mu.Lock() // leastRecentlyUsed reads other threads' lastUsed under r.mu
	th.dirty, th.lastUsed = true, r.cfg.Now()
	r.mu.Unlock()
	if ok, err := r.start(ctx, ex); err != nil || !ok {
		return err == nil
	}
	if err := r.putInputs(ctx, sb, ex); err != nil {
		_ = r.finish(ctx, ex, jobs.Failed, r.internalError(ex, err))
		return true
	}
	if th.skills == nil {
		th.skills = map[string]string{}
	}
	if err := r.attachSkills(ctx, sb, ex, th.skills); err != nil {
		_ = r.finish(ctx, ex, jobs.Failed, r.skillFailure(ex, err))
		return true
	}
	_, err = r.execute(ctx, sb, ex, func(ctx context.Context, out sandbox.Outcome) {
		if out.Workspace != nil { // nil when the kernel died without a listing
			r.saveFiles(ctx, th, out.Workspace)
		}
	})
	if err != nil {
		// The sandbox itself broke (its container is gone): the next item gets a new one.
		r.mu.Lock()
		th.sb = nil
		r.mu.Unlock()
	}
	return true
}

// keepActive refreshes the thread's activity every ActiveEvery until the returned
// function is called, so a run longer than the janitor's idle time is not taken for
// idleness. The returned function waits for the refreshing to stop.
func (r *Runner) keepActive(ctx context.Context, th *thread) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(r.cfg.ActiveEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.markActive(ctx, th)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
