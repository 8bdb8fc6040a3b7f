package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The lifecycle of a thread's sandbox: the janitor (or a cap) queues a pause or a
// reap on the thread, and the owner applies it in order with the thread's other
// items, so a sandbox is never paused or removed while an item runs, and skips it if
// more items are queued behind it.

// snapshotKey is where a thread's latest workspace snapshot is stored.
func snapshotKey(tenant, thread string) string { return tenant + "/" + thread + "/snapshot.tar" }

// SnapshotKey is where the snapshot of thread tk is stored.
func SnapshotKey(tk string) string { return snapshotKey(SplitThreadKey(tk)) }

// EnqueueLifecycle queues a pause or reap on thread tk.
func (r *Records) EnqueueLifecycle(ctx context.Context, tk string, kind Kind, now time.Time) error {
	tenant, thread := SplitThreadKey(tk)
	op := &Execution{ID: "op_" + NewID()[3:], Kind: kind, Tenant: tenant, ThreadID: thread, Status: Queued, CreatedAt: now.UTC()}
	_, err := r.Create(ctx, op, "", "")
	return err
}

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
	r.setThreadState(ctx, th, "sandbox", "paused")
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
	r.setThreadState(ctx, th, "sandbox", "none")
	r.cfg.Records.sandboxGone(ctx, th.tenant, ThreadKey(th.tenant, th.id))
	return nil
}

func (r *Runner) busy(ctx context.Context, th *thread) bool {
	n, err := r.threads.Queued(ctx, ThreadKey(th.tenant, th.id))
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
	if _, err := r.cfg.Artifacts.Put(ctx, snapshotKey(th.tenant, th.id), rc, -1, "application/x-tar"); err != nil {
		return fmt.Errorf("store snapshot of thread %s: %w", th.id, err)
	}
	th.dirty = false
	r.setThreadState(ctx, th, "snapshot", "1", "snapshot_at", r.cfg.Now().UTC().Format(time.RFC3339Nano))
	return nil
}

// sandboxLive records that tk has a sandbox, for the tenant cap and the janitor.
func (r *Records) sandboxLive(ctx context.Context, tenant, tk string, now time.Time) {
	r.rdb.ZAdd(ctx, r.liveKey(tenant), zmember(now, tk))
}

func (r *Records) sandboxGone(ctx context.Context, tenant, tk string) {
	r.rdb.ZRem(ctx, r.liveKey(tenant), tk)
}

func (r *Records) liveKey(tenant string) string { return r.prefix + "live:" + tenant }

// overTenantCap returns the tenant's least recently used threads with sandboxes that
// must go for one more to fit under limit, leaving out tk.
func (r *Records) overTenantCap(ctx context.Context, tenant, tk string, limit int) ([]string, error) {
	n, err := r.rdb.ZCard(ctx, r.liveKey(tenant)).Result()
	if err != nil || int(n) < limit {
		return nil, err
	}
	lru, err := r.rdb.ZRange(ctx, r.liveKey(tenant), 0, n-int64(limit)).Result()
	if err != nil {
		return nil, err
	}
	out := lru[:0]
	for _, v := range lru {
		if v != tk {
			out = append(out, v)
		}
	}
	return out, nil
}

func zmember(t time.Time, member string) redis.Z {
	return redis.Z{Score: float64(t.UnixMilli()), Member: member}
}
