package worker

import (
	"context"

	"github.com/codeinterp/codeinterp/jobs"
)

// makeRoom enforces the sandbox caps before a new sandbox is made: past a cap, the
// least recently used sandbox is snapshotted and removed rather than refusing work.
// The reap is queued on that thread, so it happens between its executions, never
// during one, and the new sandbox need not wait for it.
func (r *Runner) makeRoom(ctx context.Context, th *thread) {
	if r.cfg.MaxSandboxes > 0 {
		if n, err := r.cfg.Runtime.Count(ctx); err == nil && n >= r.cfg.MaxSandboxes {
			if victim := r.leastRecentlyUsed(th); victim != "" {
				r.cfg.Logger.Info("host at its sandbox cap; reaping the least recently used", "cap", r.cfg.MaxSandboxes, "thread", victim)
				if err := r.cfg.Records.EnqueueLifecycle(ctx, victim, jobs.KindReap); err != nil {
					r.cfg.Logger.Warn("reap for host cap", "thread", victim, "err", err)
				}
			}
		}
	}
	if r.cfg.MaxPerTenant > 0 {
		// Fleet-wide: the owner of the least recently used one reaps it, in its queue.
		victims, err := r.cfg.Records.OverTenantCap(ctx, th.key, r.cfg.MaxPerTenant)
		if err != nil {
			r.cfg.Logger.Warn("tenant sandbox cap", "err", err)
		}
		for _, tk := range victims {
			r.cfg.Logger.Info("tenant at its sandbox cap; reaping the least recently used", "tenant", th.tenant, "thread", tk)
			if err := r.cfg.Records.EnqueueLifecycle(ctx, tk, jobs.KindReap); err != nil {
				r.cfg.Logger.Warn("reap for tenant cap", "thread", tk, "err", err)
			}
		}
	}
}

// leastRecentlyUsed picks the thread key of the sandbox this worker holds that was
// used longest ago, other than th's.
func (r *Runner) leastRecentlyUsed(th *thread) jobs.ThreadKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lru *thread
	for _, o := range r.owned {
		if o == th || o.sb == nil {
			continue
		}
		if lru == nil || o.lastUsed.Before(lru.lastUsed) {
			lru = o
		}
	}
	if lru == nil {
		return ""
	}
	return lru.key
}
