package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/codeinterp/codeinterp/sandbox"
)

// threadSandbox returns the thread's sandbox, in this order: the warm one this worker
// holds (resumed if paused); the thread's sandbox on this host, adopted from a worker
// that let go of it; a blank one from the pool; a new one. A sandbox that is not the
// warm one gets the thread's last snapshot restored, if it has one, and so reports a
// restarted kernel.
func (r *Runner) threadSandbox(ctx context.Context, th *thread) (Sandbox, SandboxInfo, error) {
	if th.sb != nil {
		resumed, err := th.sb.Resume(ctx)
		if err != nil {
			return nil, SandboxInfo{}, err
		}
		if resumed {
			r.setThreadState(ctx, th, "sandbox", "running")
		}
		return th.sb, SandboxInfo{Reused: true, Resumed: resumed}, nil
	}
	spec := sandbox.Spec{Tenant: th.tenant, Thread: th.id, Owner: r.cfg.Worker, Limits: r.cfg.Limits, Preload: true}
	sb, err := r.cfg.Runtime.Find(ctx, spec)
	if err != nil {
		return nil, SandboxInfo{}, err
	}
	if sb != nil {
		return r.keep(ctx, th, sb, SandboxInfo{Reused: true, KernelRestarted: true})
	}
	r.makeRoom(ctx, th)
	if sb, err = r.newThreadSandbox(ctx, spec); err != nil {
		return nil, SandboxInfo{}, err
	}
	info := SandboxInfo{}
	restored, err := r.restoreSnapshot(ctx, th, sb)
	if err != nil {
		_ = sb.Remove(context.WithoutCancel(ctx))
		return nil, SandboxInfo{}, err
	}
	info.KernelRestarted = restored
	return r.keep(ctx, th, sb, info)
}

func (r *Runner) keep(ctx context.Context, th *thread, sb Sandbox, info SandboxInfo) (Sandbox, SandboxInfo, error) {
	r.mu.Lock()
	th.sb = sb
	r.mu.Unlock()
	r.cfg.Records.sandboxLive(ctx, th.tenant, ThreadKey(th.tenant, th.id), r.cfg.Now())
	return sb, info, nil
}

// newThreadSandbox takes a blank sandbox from the pool, or creates one.
func (r *Runner) newThreadSandbox(ctx context.Context, spec sandbox.Spec) (Sandbox, error) {
	if blank := r.pool.take(); blank != nil {
		err := blank.Assign(ctx, spec.Tenant, spec.Thread)
		if err == nil {
			return blank, nil
		}
		_ = blank.Remove(context.WithoutCancel(ctx))
		if !errors.Is(err, sandbox.ErrExists) {
			r.cfg.Logger.Warn("assign pooled sandbox", "thread", spec.Thread, "err", err)
		}
	}
	sb, err := r.cfg.Runtime.Create(ctx, spec)
	if errors.Is(err, sandbox.ErrExists) {
		// Created meanwhile by a worker that has since let go: adopt it.
		if sb, err = r.cfg.Runtime.Find(ctx, spec); err == nil && sb == nil {
			err = fmt.Errorf("thread %s: sandbox vanished while being adopted", spec.Thread)
		}
	}
	return sb, err
}

// restoreSnapshot fills a new sandbox with the thread's last snapshot, if any.
func (r *Runner) restoreSnapshot(ctx context.Context, th *thread, sb Sandbox) (bool, error) {
	st, err := r.cfg.Records.ThreadState(ctx, th.tenant, th.id)
	if err != nil || st == nil || !st.Snapshot {
		return false, err
	}
	rc, _, err := r.cfg.Artifacts.Open(ctx, snapshotKey(th.tenant, th.id))
	if err != nil {
		return false, fmt.Errorf("open snapshot of thread %s: %w", th.id, err)
	}
	defer rc.Close()
	if err := sb.Restore(ctx, rc); err != nil {
		return false, err
	}
	return true, nil
}

// makeRoom enforces the sandbox caps before a new sandbox is made: past a cap, the
// least recently used sandbox is snapshotted and removed rather than refusing work.
// The reap is queued on that thread, so it happens between its executions, never
// during one, and the new sandbox need not wait for it.
func (r *Runner) makeRoom(ctx context.Context, th *thread) {
	if r.cfg.MaxSandboxes > 0 {
		if n, err := r.cfg.Runtime.Count(ctx); err == nil && n >= r.cfg.MaxSandboxes {
			if victim := r.leastRecentlyUsed(th); victim != "" {
				r.cfg.Logger.Info("host at its sandbox cap; reaping the least recently used", "cap", r.cfg.MaxSandboxes, "thread", victim)
				if err := r.cfg.Records.EnqueueLifecycle(ctx, victim, KindReap, r.cfg.Now()); err != nil {
					r.cfg.Logger.Warn("reap for host cap", "thread", victim, "err", err)
				}
			}
		}
	}
	if r.cfg.MaxPerTenant > 0 {
		// Fleet-wide: the owner of the least recently used one reaps it, in its queue.
		victims, err := r.cfg.Records.overTenantCap(ctx, th.tenant, ThreadKey(th.tenant, th.id), r.cfg.MaxPerTenant)
		if err != nil {
			r.cfg.Logger.Warn("tenant sandbox cap", "err", err)
		}
		for _, tk := range victims {
			r.cfg.Logger.Info("tenant at its sandbox cap; reaping the least recently used", "tenant", th.tenant, "thread", tk)
			if err := r.cfg.Records.EnqueueLifecycle(ctx, tk, KindReap, r.cfg.Now()); err != nil {
				r.cfg.Logger.Warn("reap for tenant cap", "thread", tk, "err", err)
			}
		}
	}
}

// leastRecentlyUsed picks the thread key of the sandbox this worker holds that was
// used longest ago, other than th's.
func (r *Runner) leastRecentlyUsed(th *thread) string {
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
	return ThreadKey(lru.tenant, lru.id)
}
