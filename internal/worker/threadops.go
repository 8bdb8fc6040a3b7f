package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// runOp applies a thread operation that is not code, in its place in the queue. It
// reports false when it could not record the operation's start (see runItem).
func (r *Runner) runOp(ctx context.Context, th *thread, op *jobs.Execution) bool {
	if ok, err := r.start(ctx, op); err != nil || !ok {
		return err == nil
	}
	var failure *sandbox.Error
	var err error
	switch op.Kind {
	case jobs.KindPutFile:
		err = r.putFileOp(ctx, th, op)
	case jobs.KindGetFile:
		failure, err = r.getFileOp(ctx, th, op)
	case jobs.KindDeleteThread:
		err = r.deleteThreadOp(ctx, th)
	case jobs.KindPause:
		err = r.pauseOp(ctx, th)
	case jobs.KindReap:
		err = r.reapOp(ctx, th)
	case jobs.KindReset:
		err = r.resetOp(ctx, th)
	default:
		err = fmt.Errorf("unknown operation %q", op.Kind)
	}
	status := jobs.Succeeded
	if err != nil {
		failure = r.internalError(op, err)
	}
	if failure != nil {
		status = jobs.Failed
	}
	_ = r.finish(context.WithoutCancel(ctx), op, status, failure)
	return true
}

func (r *Runner) putFileOp(ctx context.Context, th *thread, op *jobs.Execution) error {
	sb, _, err := r.threadSandbox(ctx, th)
	if err != nil {
		return err
	}
	th.dirty = true
	if err := r.putInputs(ctx, sb, op); err != nil {
		return err
	}
	files, err := sb.Files(ctx)
	if err != nil {
		r.cfg.Logger.Warn("list workspace", "thread", th.id, "err", err)
		return nil
	}
	r.saveFiles(ctx, th, files)
	return nil
}

func (r *Runner) getFileOp(ctx context.Context, th *thread, op *jobs.Execution) (*sandbox.Error, error) {
	sb, _, err := r.threadSandbox(ctx, th)
	if err != nil {
		return nil, err
	}
	if err := jobs.CheckKey(jobs.ArtifactKey(op, op.Path)); err != nil {
		return jobs.ErrSandboxError.With(fmt.Sprintf("%s cannot be copied out: its storage key would be invalid (%v)", op.Path, err)), nil
	}
	if why := r.storedSpent(ctx, op.Tenant); why != "" {
		return jobs.ErrQuotaExceeded.With(op.Path + " not copied: " + why), nil
	}
	// The copy is for one reader: noted before it is stored, so that the janitor
	// deletes it once its download link has expired, whatever happens after.
	if err := r.cfg.Records.NoteCopy(ctx, jobs.ArtifactKey(op, ""), r.cfg.Now()); err != nil {
		return nil, err
	}
	// Only a sparse file can be larger than the workspace; copying it would cost its
	// whole size.
	var size int64
	ws := th.profile.Limits.WithDefaults().Workspace
	f, err := r.storeOutput(ctx, sb, op, op.Path, func(_ string, n int64) bool { size = n; return n <= ws })
	if errors.Is(err, sandbox.ErrNoFile) || errors.Is(err, sandbox.ErrNotRegular) || errors.Is(err, sandbox.ErrBadPath) {
		return jobs.ErrFileNotFound.With("no regular file " + op.Path + " in the thread's workspace"), nil
	}
	if errors.Is(err, errSkipped) {
		return jobs.ErrSandboxError.With(fmt.Sprintf("%s is %d bytes, over the %d-byte workspace: not copied", op.Path, size, ws)), nil
	}
	if err != nil {
		return nil, err
	}
	op.Files = []jobs.File{f}
	r.countStored(ctx, op.Tenant, op.Files)
	return nil, nil
}

// deleteThreadOp removes the thread's sandbox and workspace. The thread stays usable:
// its next execution starts from scratch.
func (r *Runner) deleteThreadOp(ctx context.Context, th *thread) error {
	sb := th.sb
	if sb == nil {
		found, err := r.cfg.Runtime.Find(ctx, r.threadSpec(th, th.profile))
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
	if _, err := r.cfg.Artifacts.DeletePrefix(ctx, jobs.SnapshotKey(th.key)); err != nil {
		return err
	}
	return r.cfg.Records.ForgetThread(ctx, th.key)
}

// resetOp restarts the thread's kernel: Python state goes, the sandbox and its
// workspace stay. The warm sandbox's kernel is let go and the sandbox adopted again
// (which kills whatever the old kernel left and starts a fresh one), so the next run
// is warm. A thread with no sandbox held here has no kernel state to lose: its next
// run starts a fresh kernel anyway.
func (r *Runner) resetOp(ctx context.Context, th *thread) error {
	r.mu.Lock()
	sb := th.sb
	th.sb = nil
	r.mu.Unlock()
	if sb == nil {
		return nil
	}
	sb.Release()
	_, _, err := r.threadSandbox(ctx, th)
	return err
}

// markActive records that the thread's owner is working on it, which also restarts
// its idle clock for the janitor.
func (r *Runner) markActive(ctx context.Context, th *thread) {
	if err := r.cfg.Records.MarkActive(context.WithoutCancel(ctx), th.key, r.cfg.Now()); err != nil {
		r.cfg.Logger.Warn("save thread state", "thread", th.id, "err", err)
	}
}

// saveFiles records the thread's workspace listing after a run.
func (r *Runner) saveFiles(ctx context.Context, th *thread, files []sandbox.FileInfo) {
	if err := r.cfg.Records.SaveFiles(context.WithoutCancel(ctx), th.key, files, r.cfg.Now()); err != nil {
		r.cfg.Logger.Warn("save thread state", "thread", th.id, "err", err)
	}
}

func (r *Runner) setSandboxState(ctx context.Context, th *thread, state jobs.SandboxState) {
	if err := r.cfg.Records.SetThreadSandbox(context.WithoutCancel(ctx), th.key, state, false); err != nil {
		r.cfg.Logger.Warn("save thread state", "thread", th.id, "err", err)
	}
}
