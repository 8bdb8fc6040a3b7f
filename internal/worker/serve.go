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
	sb         sandbox.Sandbox // warm sandbox, nil until an item needs one or after a reap
	running    bool            // a runner goroutine serves the thread
	woken      bool            // woken since the runner last looked at the queue
	dirty      bool            // the workspace may have changed since the last snapshot
	lastUsed   time.Time       // for choosing what to evict under a cap
	notes      []string        // for the thread's next execution (its runner's only)
}

// serve makes sure a runner serves thread tk; inflight is an item a previous owner
// left in flight. Calling it for a thread already served only makes the runner look
// at the queue again, so wake-ups are never lost.
func (r *Runner) serve(tk jobs.ThreadKey, inflight string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shuttingDown() {
		go r.letGo(context.Background(), tk) // claimed just as the worker stops: hand it on
		return
	}
	th := r.owned[tk]
	if th == nil {
		tenant, id := tk.Split()
		th = &thread{key: tk, tenant: tenant, id: id}
		r.owned[tk] = th
	}
	th.woken = true
	if th.running {
		return
	}
	th.running = true
	r.runners.Go(func() { r.runThread(th, inflight) })
}

// runThread takes the thread's items one by one until its queue is empty.
func (r *Runner) runThread(th *thread, inflight string) {
	ctx := r.runCtx
	if inflight != "" {
		r.recoverInflight(ctx, th, inflight)
	}
	for {
		r.mu.Lock()
		th.woken = false
		r.mu.Unlock()
		id, err := r.queue.Next(ctx, th.key, r.cfg.Worker)
		switch {
		case errors.Is(err, threadq.ErrLost):
			r.drop(th)
			return
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
			r.runItem(ctx, th, id)
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

// recoverInflight settles the item a dead owner had in flight: if its code may have
// started, it failed; if not, it runs now, still first in line.
func (r *Runner) recoverInflight(ctx context.Context, th *thread, id string) {
	ex, err := r.cfg.Records.Get(ctx, "", id)
	for attempt := 1; err != nil && !errors.Is(err, records.ErrNotFound) && attempt < 5 && r.pause(ctx, time.Duration(attempt)*time.Second); attempt++ {
		ex, err = r.cfg.Records.Get(ctx, "", id)
	}
	if err != nil {
		r.cfg.Logger.Warn("load in-flight item", "id", id, "err", err)
		return
	}
	switch ex.Status {
	case jobs.Running:
		_ = r.finish(ctx, ex, jobs.Failed, jobs.ErrWorkerLost.With(
			"the worker running this execution died before it finished; it was not re-run because the code may already have had effects"))
	case jobs.Queued:
		r.runItem(ctx, th, id)
	}
}

// runItem runs one queued item of a thread. Items that are no longer queued (a
// canceled execution) are skipped. An item whose record cannot be read goes back to
// the head of the queue, to be taken again after a pause.
func (r *Runner) runItem(ctx context.Context, th *thread, id string) {
	ex, err := r.cfg.Records.Get(ctx, "", id)
	if errors.Is(err, records.ErrNotFound) {
		r.cfg.Logger.Warn("thread item has no record; skipping it", "id", id)
		return
	}
	if err != nil {
		r.cfg.Logger.Warn("load thread item; it goes back to the head of the queue", "id", id, "err", err)
		if err := r.queue.Requeue(ctx, th.key, r.cfg.Worker, id); err != nil {
			r.cfg.Logger.Error("requeue thread item", "id", id, "err", err)
		}
		r.pause(ctx, time.Second)
		return
	}
	if ex.Status != jobs.Queued || ex.Tenant != th.tenant || ex.ThreadID != th.id {
		return
	}
	if !r.slots.acquire(ctx, th.tenant) {
		return
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
	switch ex.Kind {
	case jobs.KindExecution:
		r.runThreadExecution(ctx, th, ex)
	default:
		r.runOp(ctx, th, ex)
	}
}

func (r *Runner) runThreadExecution(ctx context.Context, th *thread, ex *jobs.Execution) {
	sb, info, err := r.threadSandbox(ctx, th)
	for attempt := 1; err != nil && attempt < 3 && r.pause(ctx, time.Duration(attempt)*time.Second); attempt++ {
		// The code has not started: a service hiccup is worth another try.
		r.cfg.Logger.Warn("get thread sandbox; retrying", "thread", th.id, "err", err)
		sb, info, err = r.threadSandbox(ctx, th)
	}
	if err != nil {
		_ = r.finish(ctx, ex, jobs.Failed, sandboxError(err))
		return
	}
	ex.Sandbox = info
	ex.Notes, th.notes = append(ex.Notes, th.notes...), nil
	r.mu.Lock() // leastRecentlyUsed reads other threads' lastUsed under r.mu
	th.dirty, th.lastUsed = true, r.cfg.Now()
	r.mu.Unlock()
	if ok, err := r.start(ctx, ex); err != nil || !ok {
		return
	}
	if err := r.putInputs(ctx, sb, ex); err != nil {
		_ = r.finish(ctx, ex, jobs.Failed, sandboxError(err))
		return
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
