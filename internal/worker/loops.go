package worker

import (
	"context"
	"errors"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/threadq"
)

// errWorkerStopping is the cause of contexts canceled because the worker shuts down.
var errWorkerStopping = errors.New("worker shutting down")

// Start announces the worker and starts its background loops: the heartbeat (which
// also buries dead workers and hands their threads on), the wake-up wait for owned
// threads, the offer wait, the fill loop of each pool and the cancel listener. Call
// Shutdown to stop.
func (r *Runner) Start(ctx context.Context) error {
	r.beat(ctx)
	cancels, err := r.cfg.Records.SubscribeCancels(ctx)
	if err != nil {
		return err
	}
	r.runCtx, r.stopRun = context.WithCancelCause(context.WithoutCancel(ctx))
	bgCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stopBG = stop
	r.bg.Go(func() { cancels.Each(r.cancelLocal) })
	r.bg.Go(func() {
		<-bgCtx.Done()
		cancels.Close()
	})
	r.bg.Go(func() { r.heartbeatLoop(bgCtx) })
	r.bg.Go(func() { r.wakeLoop(bgCtx) })
	r.bg.Go(func() { r.offerLoop(bgCtx) })
	for _, pools := range []map[string]*pool{r.warmPools, r.oneOffPools} {
		for _, p := range pools {
			r.bg.Go(func() { r.fillLoop(bgCtx, p) })
		}
	}
	if r.cfg.Recycle {
		r.bg.Go(func() { r.recycleLoop(bgCtx) })
	}
	if r.cfg.Manifests != nil {
		r.bg.Go(func() { r.publishManifests(bgCtx) })
	}
	return nil
}

// Shutdown lets running thread executions finish until ctx ends, then interrupts
// them (they end failed with WorkerStopped), lets go of every owned thread (their
// sandboxes stay, for another worker to adopt) and leaves the registry.
func (r *Runner) Shutdown(ctx context.Context) {
	close(r.stopped)
	done := make(chan struct{})
	go func() { r.runners.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		r.stopRun(errWorkerStopping)
		<-done
	}
	cleanup := context.WithoutCancel(ctx)
	r.mu.Lock()
	owned := r.owned
	r.owned = map[jobs.ThreadKey]*thread{}
	r.mu.Unlock()
	for _, th := range owned {
		if th.sb != nil {
			th.sb.Release()
		}
		r.letGo(cleanup, th.lease)
	}
	if r.stopBG != nil {
		r.stopBG()
	}
	r.bg.Wait()
	_ = r.queue.Leave(cleanup, r.cfg.Worker)
}

func (r *Runner) shuttingDown() bool {
	select {
	case <-r.stopped:
		return true
	default:
		return false
	}
}

// letGo releases a thread; if it still has work, it is offered to other workers.
func (r *Runner) letGo(ctx context.Context, lease threadq.Lease) {
	if _, err := r.queue.Release(ctx, lease); err != nil {
		r.cfg.Logger.Error("release thread", "thread", lease.Thread, "err", err)
	}
}

func (r *Runner) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.Beat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.beat(ctx)
			r.revalidate(ctx)
			r.sweep(ctx)
		}
	}
}

func (r *Runner) beat(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, r.cfg.Beat)
	defer cancel()
	ready := r.cfg.Runtime.Ping(pctx) == nil
	if err := r.queue.Beat(ctx, r.cfg.Worker, ready); err != nil {
		r.beatFailed = true
		r.cfg.Logger.Warn("heartbeat", "err", err)
		return
	}
	if r.beatFailed {
		// Redis is back. Every live worker beats again within a third of the TTL.
		r.beatFailed, r.sweepFrom = false, r.cfg.Now().Add(r.queue.HeartbeatTTL())
	}
}

// sweep buries workers whose heartbeat stopped and hands their threads on, and offers
// again threads that waited too long for an owner.
//
// It does nothing while this worker's heartbeats do not get through, and for a TTL
// after they get through again: Redis was then likely out of every worker's reach (a
// restart loads its data for seconds per GB), so their heartbeats are stale for that
// reason alone, and burying live workers would end their running executions
// WorkerLost and hand their warm threads to others.
func (r *Runner) sweep(ctx context.Context) {
	if r.beatFailed || r.cfg.Now().Before(r.sweepFrom) {
		return
	}
	again, err := r.queue.Reoffer(ctx, r.cfg.Now().Add(-2*r.queue.HeartbeatTTL()))
	if err != nil {
		r.cfg.Logger.Warn("sweep", "err", err)
	}
	if len(again) > 0 {
		r.cfg.Logger.Info("threads waited too long for an owner; offered again", "threads", again)
	}
	dead, err := r.queue.Dead(ctx)
	if err != nil {
		r.cfg.Logger.Warn("sweep", "err", err)
		return
	}
	for _, w := range dead {
		orphans, err := r.queue.Bury(ctx, w)
		if err != nil {
			r.cfg.Logger.Warn("bury worker", "worker", w, "err", err)
			continue
		}
		r.cfg.Logger.Info("worker stopped beating; its threads go to others", "dead", w, "threads_with_work", len(orphans))
	}
}

// wakeLoop serves the owned threads that the API woke. The wait blocks in Redis, so
// an idle worker costs one command per Linger.
func (r *Runner) wakeLoop(ctx context.Context) {
	for ctx.Err() == nil {
		tk, err := r.queue.Wait(ctx, r.cfg.Worker, r.cfg.Linger)
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Logger.Warn("wait for thread work", "err", err)
				r.pause(ctx, time.Second)
			}
			continue
		}
		if tk != "" {
			r.wake(ctx, tk)
		}
	}
}

// offerLoop takes threads offered to all workers while this one has a free slot,
// claims them and serves them.
func (r *Runner) offerLoop(ctx context.Context) {
	for ctx.Err() == nil {
		if !r.waitForSlot(ctx) {
			return
		}
		tk, err := r.queue.TakeOffer(ctx, r.cfg.Linger)
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Logger.Warn("wait for offered threads", "err", err)
				r.pause(ctx, time.Second)
			}
			continue
		}
		if tk == "" {
			continue
		}
		// A worker that dies between taking and claiming loses the offer; the
		// sweep offers the thread again.
		r.claim(ctx, tk)
	}
}

// waitForSlot blocks until fewer than Concurrency thread executions run here.
func (r *Runner) waitForSlot(ctx context.Context) bool {
	for r.slots.full() {
		select {
		case <-ctx.Done():
			return false
		case <-r.freed:
		}
	}
	return true
}

// pause waits d, or less if ctx ends; it reports whether the wait completed.
func (r *Runner) pause(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// claim claims thread tk and serves it. A thread this worker holds already (offered
// twice: re-offered while its first offer waited) is served under the lease it has:
// claiming it again would change the lease under the item running.
func (r *Runner) claim(ctx context.Context, tk jobs.ThreadKey) {
	if lease, ok := r.heldLease(tk); ok {
		r.serve(lease, "")
		return
	}
	lease, inflight, err := r.queue.Claim(ctx, tk, r.cfg.Worker)
	switch {
	case errors.Is(err, threadq.ErrOwned):
		_ = r.queue.Wake(ctx, inflight, tk) // a live owner serves it: nudge it
	case err != nil:
		r.cfg.Logger.Warn("claim thread", "thread", tk, "err", err)
	default:
		r.serve(lease, inflight)
	}
}

// wake serves an owned thread the API woke. A thread this worker does not hold (it
// was dropped, or its lease lost to a Redis failover) is claimed afresh: the API
// wakes whoever Redis names as the owner.
func (r *Runner) wake(ctx context.Context, tk jobs.ThreadKey) {
	r.mu.Lock()
	th := r.owned[tk]
	var lease threadq.Lease
	if th != nil && !th.lost {
		lease = th.lease
	}
	r.mu.Unlock()
	if !lease.Valid() {
		r.claim(ctx, tk)
		return
	}
	r.serve(lease, "")
}
