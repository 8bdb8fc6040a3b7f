package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// runOp applies a thread operation that is not code, in its place in the queue.
func (r *Runner) runOp(ctx context.Context, th *thread, op *Execution) {
	if ok, err := r.start(ctx, op); err != nil || !ok {
		return
	}
	var failure *sandbox.Error
	var err error
	switch op.Kind {
	case KindPutFile:
		err = r.putFileOp(ctx, th, op)
	case KindGetFile:
		failure, err = r.getFileOp(ctx, th, op)
	case KindDeleteThread:
		err = r.deleteThreadOp(ctx, th)
	case KindPause:
		err = r.pauseOp(ctx, th)
	case KindReap:
		err = r.reapOp(ctx, th)
	default:
		err = fmt.Errorf("unknown operation %q", op.Kind)
	}
	status := Succeeded
	if err != nil {
		failure = sandboxError(err)
	}
	if failure != nil {
		status = Failed
	}
	_ = r.finish(context.WithoutCancel(ctx), op, status, failure)
}

func (r *Runner) putFileOp(ctx context.Context, th *thread, op *Execution) error {
	sb, _, err := r.threadSandbox(ctx, th)
	if err != nil {
		return err
	}
	th.dirty = true
	if err := r.putInputs(ctx, sb, op); err != nil {
		return err
	}
	r.refreshThreadState(ctx, th, sb)
	return nil
}

func (r *Runner) getFileOp(ctx context.Context, th *thread, op *Execution) (*sandbox.Error, error) {
	notFound := &sandbox.Error{Name: "NotFound", Value: "no regular file " + op.Path + " in the thread's workspace"}
	sb, _, err := r.threadSandbox(ctx, th)
	if err != nil {
		return nil, err
	}
	f, err := r.storeOutput(ctx, sb, op, op.Path)
	if errors.Is(err, sandbox.ErrNoFile) || errors.Is(err, sandbox.ErrNotRegular) || errors.Is(err, sandbox.ErrBadPath) {
		return notFound, nil
	}
	if err != nil {
		return nil, err
	}
	op.Files = []File{f}
	return nil, nil
}

// deleteThreadOp removes the thread's sandbox and workspace. The thread stays usable:
// its next execution starts from scratch.
func (r *Runner) deleteThreadOp(ctx context.Context, th *thread) error {
	sb := th.sb
	if sb == nil {
		found, err := r.cfg.Runtime.Find(ctx, sandbox.Spec{Tenant: th.tenant, Thread: th.id, Owner: r.cfg.Worker, Limits: r.cfg.Limits})
		if err != nil {
			return err
		}
		sb = found
	}
	if sb != nil {
		if err := sb.Remove(context.WithoutCancel(ctx)); err != nil {
			return err
		}
	}
	r.mu.Lock()
	th.sb, th.dirty = nil, false
	r.mu.Unlock()
	if _, err := r.cfg.Artifacts.DeletePrefix(ctx, snapshotKey(th.tenant, th.id)); err != nil {
		return err
	}
	tk := ThreadKey(th.tenant, th.id)
	r.cfg.Records.sandboxGone(ctx, th.tenant, tk)
	pipe := r.cfg.Records.rdb.TxPipeline()
	pipe.Del(ctx, r.cfg.Records.thread(tk, "meta"))
	pipe.ZRem(ctx, r.cfg.Records.activeKey(), tk)
	pipe.ZRem(ctx, r.cfg.Records.tenantThreadsKey(th.tenant), th.id)
	_, err := pipe.Exec(ctx)
	return err
}

// ThreadState is what GET /v1/threads/{id} shows beyond the queue. It is a hash in
// Redis, written by the thread's owner: a thread exists while it has one.
type ThreadState struct {
	LastActiveAt time.Time
	Sandbox      string // "running", "paused" or "none"
	Snapshot     bool   // a workspace snapshot is stored
	Files        []sandbox.FileInfo
}

// markActive records that the thread's owner is working on it, which also restarts
// its idle clock for the janitor.
func (r *Runner) markActive(ctx context.Context, th *thread) {
	now := r.cfg.Now()
	r.setThreadState(ctx, th, "last_active_at", now.UTC().Format(time.RFC3339Nano), "sandbox", "running")
	pipe := r.cfg.Records.rdb.Pipeline()
	pipe.ZAdd(context.WithoutCancel(ctx), r.cfg.Records.activeKey(), zmember(now, ThreadKey(th.tenant, th.id)))
	pipe.ZAdd(context.WithoutCancel(ctx), r.cfg.Records.tenantThreadsKey(th.tenant), zmember(now, th.id))
	_, _ = pipe.Exec(context.WithoutCancel(ctx))
}

func (r *Records) tenantThreadsKey(tenant string) string {
	return r.prefix + "ten:" + tenant + ":threads"
}

// ThreadSummary is one entry of a tenant's thread list.
type ThreadSummary struct {
	ID           string
	LastActiveAt time.Time
}

// TenantThreads returns up to limit of a tenant's threads, most recently active first.
func (r *Records) TenantThreads(ctx context.Context, tenant string, limit int) ([]ThreadSummary, error) {
	zs, err := r.rdb.ZRevRangeWithScores(ctx, r.tenantThreadsKey(tenant), 0, int64(limit)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	out := make([]ThreadSummary, 0, len(zs))
	for _, z := range zs {
		out = append(out, ThreadSummary{ID: z.Member.(string), LastActiveAt: time.UnixMilli(int64(z.Score)).UTC()})
	}
	return out, nil
}

func (r *Records) activeKey() string { return r.prefix + "active" }

// saveThreadState records the thread's workspace listing after a run.
func (r *Runner) saveThreadState(ctx context.Context, th *thread, files []sandbox.FileInfo) {
	data, _ := json.Marshal(files)
	r.setThreadState(ctx, th, "last_active_at", r.cfg.Now().UTC().Format(time.RFC3339Nano), "files", data)
}

func (r *Runner) setThreadState(ctx context.Context, th *thread, fields ...any) {
	key := r.cfg.Records.thread(ThreadKey(th.tenant, th.id), "meta")
	ctx = context.WithoutCancel(ctx)
	pipe := r.cfg.Records.rdb.TxPipeline()
	pipe.HSet(ctx, key, fields...)
	pipe.Expire(ctx, key, r.cfg.Records.ttl)
	if _, err := pipe.Exec(ctx); err != nil {
		r.cfg.Logger.Warn("save thread state", "thread", th.id, "err", err)
	}
}

func (r *Runner) refreshThreadState(ctx context.Context, th *thread, sb Sandbox) {
	files, err := sb.Files(ctx)
	if err != nil {
		r.cfg.Logger.Warn("list workspace", "thread", th.id, "err", err)
		return
	}
	r.saveThreadState(ctx, th, files)
}

// ThreadState returns the saved state of a thread, or nil if it has none.
func (r *Records) ThreadState(ctx context.Context, tenant, thread string) (*ThreadState, error) {
	h, err := r.rdb.HGetAll(ctx, r.thread(ThreadKey(tenant, thread), "meta")).Result()
	if err != nil {
		return nil, fmt.Errorf("thread state: %w", err)
	}
	if len(h) == 0 {
		return nil, nil
	}
	st := &ThreadState{Sandbox: h["sandbox"], Snapshot: h["snapshot"] == "1"}
	st.LastActiveAt, _ = time.Parse(time.RFC3339Nano, h["last_active_at"])
	if f := h["files"]; f != "" {
		_ = json.Unmarshal([]byte(f), &st.Files)
	}
	return st, nil
}
