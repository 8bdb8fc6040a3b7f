package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/storage"
)

// threadSandbox returns the thread's sandbox, in this order: the warm one this worker
// holds (resumed if paused); the thread's sandbox on this host, adopted from a worker
// that let go of it; a blank one from its profile's warm pool; a new one. A sandbox
// that is not the warm one gets the thread's last snapshot restored, if it has one,
// and so reports a restarted kernel.
func (r *Runner) threadSandbox(ctx context.Context, th *thread) (sandbox.Sandbox, jobs.SandboxInfo, error) {
	if th.sb != nil && th.refence {
		// Held across a new claim of the thread: fence it with the new lease's token.
		if err := th.sb.Fence(ctx, r.leaseOf(th).Token); err != nil {
			return nil, jobs.SandboxInfo{}, err
		}
		th.refence = false
	}
	if th.sb != nil {
		resumed, err := th.sb.Resume(ctx)
		if err != nil {
			return nil, jobs.SandboxInfo{}, err
		}
		if resumed {
			r.setSandboxState(ctx, th, jobs.SandboxRunning)
		}
		return th.sb, jobs.SandboxInfo{Reused: true, Resumed: resumed}, nil
	}
	prof, err := r.threadProfile(ctx, th)
	if err != nil {
		return nil, jobs.SandboxInfo{}, err
	}
	th.profile = prof
	spec := r.threadSpec(th, prof)
	sb, err := r.cfg.Runtime.Find(ctx, spec)
	if err != nil {
		return nil, jobs.SandboxInfo{}, err
	}
	if sb != nil {
		return r.keep(ctx, th, sb, jobs.SandboxInfo{Reused: true, KernelRestarted: true})
	}
	r.makeRoom(ctx, th)
	if sb, err = r.newThreadSandbox(ctx, spec, prof); err != nil {
		return nil, jobs.SandboxInfo{}, err
	}
	info := jobs.SandboxInfo{}
	restored, err := r.restoreSnapshot(ctx, th, sb)
	if err != nil {
		_ = sb.Remove(context.WithoutCancel(ctx))
		return nil, jobs.SandboxInfo{}, err
	}
	info.KernelRestarted = restored
	return r.keep(ctx, th, sb, info)
}

func (r *Runner) threadSpec(th *thread, p jobs.Profile) sandbox.Spec {
	return sandbox.Spec{Tenant: th.tenant, Thread: th.id, Owner: r.cfg.Worker, Image: p.Image, Limits: p.Limits, Preload: true,
		Fence: r.leaseOf(th).Token}
}

func (r *Runner) keep(ctx context.Context, th *thread, sb sandbox.Sandbox, info jobs.SandboxInfo) (sandbox.Sandbox, jobs.SandboxInfo, error) {
	r.mu.Lock()
	th.sb = sb
	r.mu.Unlock()
	th.skills = nil // a sandbox other than the warm one: its skills are unknown
	if err := r.cfg.Records.SandboxLive(ctx, th.key, r.cfg.Now()); err != nil {
		r.cfg.Logger.Warn("record live sandbox", "thread", th.key, "err", err)
	}
	return sb, info, nil
}

// newThreadSandbox takes a blank sandbox from profile p's warm pool, if it has one
// ready, or creates one.
func (r *Runner) newThreadSandbox(ctx context.Context, spec sandbox.Spec, p jobs.Profile) (sandbox.Sandbox, error) {
	if blank := r.warmPools[p.Name].take(); blank != nil {
		err := blank.Assign(ctx, spec.Tenant, spec.Thread)
		if err != nil {
			_ = blank.Remove(context.WithoutCancel(ctx))
			if !errors.Is(err, sandbox.ErrExists) {
				r.cfg.Logger.Warn("assign pooled sandbox", "thread", spec.Thread, "err", err)
			}
		} else {
			// Fenced before its first run: from now on no older owner of the thread
			// can adopt it (and kill its kernel). It is the thread's sandbox now, so
			// it is never removed here: if the fence fails, a newer owner may already
			// have adopted it and written to its workspace.
			if err := blank.Fence(ctx, spec.Fence); err != nil {
				blank.Release()
				return nil, err
			}
			return blank, nil
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

// expiredNote tells an execution that its thread's workspace did not come back.
const expiredNote = "the thread's saved workspace had expired; it starts empty"

// restoreSnapshot fills a new sandbox with the thread's last snapshot, if any. A
// snapshot gone from storage (expired) leaves the workspace empty, and the thread's
// next execution is told so: the thread goes on rather than failing every run.
func (r *Runner) restoreSnapshot(ctx context.Context, th *thread, sb sandbox.Sandbox) (bool, error) {
	st, err := r.cfg.Records.ThreadState(ctx, th.key)
	if err != nil || st == nil || !st.Snapshot {
		return false, err
	}
	rc, _, err := r.cfg.Artifacts.Open(ctx, jobs.SnapshotKey(th.key))
	if errors.Is(err, storage.ErrNotFound) {
		r.cfg.Logger.Info("thread snapshot expired; starting with an empty workspace", "thread", th.key)
		th.notes = append(th.notes, expiredNote)
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("open snapshot of thread %s: %w", th.id, err)
	}
	defer rc.Close()
	if err := sb.Restore(ctx, rc); err != nil {
		return false, err
	}
	return true, nil
}
