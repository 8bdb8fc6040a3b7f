package worker

import (
	"context"
	"fmt"

	"github.com/codeinterp/codeinterp/jobs"
)

// The lifecycle of a thread's sandbox: the janitor (or a cap) queues a pause or a
// reap on the thread, and the owner applies it in order with the thread's other
// items, so a sandbox is never paused or removed while an item runs, and skips it if
// more items are queued behind it.

// pauseOp snapshots the workspace (for a failover to another host) and pauses the
// sandbox, unless more work is queued.
func (r *Runner) pauseOp(ctx context.Context, th *thread) error {
	if th.sb == nil || r.busy(ctx, th) {
		return nil
	}
	if err := r.snapshot(ctx, th); err != nil {
		return err
	}
	if err := th.sb.Pause(ctx); err != nil {
		return err
	}
	r.setSandboxState(ctx, th, jobs.SandboxPaused)
	return nil
}

// reapOp snapshots the workspace and removes the sandbox, unless more work is
// queued. The thread's next item restores the snapshot into a new sandbox.
func (r *Runner) reapOp(ctx context.Context, th *thread) error {
	if th.sb == nil || r.busy(ctx, th) {
		return nil
	}
	if err := r.snapshot(ctx, th); err != nil {
		return err
	}
	if err := th.sb.Remove(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	r.mu.Lock()
	th.sb = nil
	r.mu.Unlock()
	r.setSandboxState(ctx, th, jobs.SandboxNone)
	return nil
}

func (r *Runner) busy(ctx context.Context, th *thread) bool {
	n, err := r.queue.Queued(ctx, th.key)
	return err != nil || n > 0
}

// snapshot stores the workspace, if it changed since the last snapshot.
func (r *Runner) snapshot(ctx context.Context, th *thread) error {
	if !th.dirty {
		return nil
	}
	rc, err := th.sb.Snapshot(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, err := r.cfg.Artifacts.Put(ctx, jobs.SnapshotKey(th.key), rc, -1, "application/x-tar"); err != nil {
		return fmt.Errorf("store snapshot of thread %s: %w", th.id, err)
	}
	th.dirty = false
	if err := r.cfg.Records.SnapshotSaved(context.WithoutCancel(ctx), th.key, r.cfg.Now()); err != nil {
		r.cfg.Logger.Warn("record snapshot", "thread", th.key, "err", err)
	}
	return nil
}
