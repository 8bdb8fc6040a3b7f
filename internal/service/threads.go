package service

import (
	"cmp"
	"context"
	"errors"
	"io"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/quota"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/storage"
)

// OpWait bounds how long a thread operation that the client waits for (get a file,
// delete the thread) may take, including the executions queued before it.
const OpWait = 60 * time.Second

// Thread is what a client sees of a thread.
type Thread struct {
	ID           string
	Profile      string // the profile the thread was created with
	Sandbox      jobs.SandboxState
	LastActiveAt *time.Time
	Queued       int64
	Files        []sandbox.FileInfo
}

// ListThreads returns up to limit (1 to 1000) of the tenant's threads, most recently
// active first.
func (s *Service) ListThreads(ctx context.Context, tenant string, limit int) ([]records.ThreadSummary, error) {
	if limit < 1 || limit > 1000 {
		return nil, Invalid("limit", "must be between 1 and 1000")
	}
	return s.cfg.Records.TenantThreads(ctx, tenant, limit)
}

// Thread returns one of the tenant's threads, or NotFound for a thread never used.
func (s *Service) Thread(ctx context.Context, tenant, id string) (*Thread, error) {
	if err := ValidThread("id", id); err != nil {
		return nil, err
	}
	tk := jobs.NewThreadKey(tenant, id)
	state, err := s.cfg.Records.ThreadState(ctx, tk)
	if err != nil {
		return nil, err
	}
	q, err := s.cfg.Threads.State(ctx, tk)
	if err != nil {
		return nil, err
	}
	owner, err := s.cfg.Threads.OwnerAlive(ctx, tk)
	if err != nil {
		return nil, err
	}
	// A new thread's first item may be in flight before the thread has any state (its
	// owner is still getting it a sandbox): it exists all the same.
	if state == nil && len(q.Queued) == 0 && q.Inflight == "" {
		return nil, NotFound("thread " + id)
	}
	profile, err := s.cfg.Records.ThreadProfile(ctx, tk)
	if err != nil {
		return nil, err
	}
	th := &Thread{ID: id, Profile: cmp.Or(profile, jobs.DefaultProfile), Sandbox: jobs.SandboxNone, Queued: int64(len(q.Queued))}
	if state != nil {
		t := state.LastActiveAt
		th.LastActiveAt = &t
		th.Files = state.Files
		// The owner's word counts only while it is alive: a dead worker's kernel is gone.
		if owner != "" && state.Sandbox != "" {
			th.Sandbox = state.Sandbox
		}
	}
	return th, nil
}

// DeleteThread cancels the thread's queued executions, then removes its sandbox and
// workspace, in order after whatever is running.
func (s *Service) DeleteThread(ctx context.Context, tenant, id string) error {
	if _, err := s.Thread(ctx, tenant, id); err != nil {
		return err
	}
	items, err := s.cfg.Threads.Items(ctx, jobs.NewThreadKey(tenant, id))
	if err != nil {
		return err
	}
	for _, item := range items {
		if _, err := s.cfg.Records.Cancel(ctx, tenant, item); err != nil && !errors.Is(err, records.ErrNotFound) {
			return err
		}
	}
	op, err := s.runOp(ctx, &jobs.Execution{Kind: jobs.KindDeleteThread, Tenant: tenant, ThreadID: id})
	if err != nil {
		return err
	}
	if op.Status != jobs.Succeeded {
		return Unavailable("deleting thread %s: %s", id, opProblem(op))
	}
	if s.cfg.Skills != nil {
		// The thread may be used again: from an empty workspace, with no skills.
		return s.cfg.Skills.Detach(ctx, jobs.NewThreadKey(tenant, id))
	}
	return nil
}

// PutFile stores body as a file of the thread's workspace, applied in order with the
// thread's executions: every execution submitted after it returns sees it. body may
// be of unknown size (-1).
func (s *Service) PutFile(ctx context.Context, tenant, id, path string, body io.Reader, size int64) (string, storage.Object, error) {
	return s.putFile(ctx, tenant, id, path, func(ctx context.Context, key string, _ int64) (storage.Object, error) {
		return s.storeCounted(ctx, tenant, key, body, size)
	})
}

// PutFileURL is PutFile of a file the service downloads from raw (field in errors):
// the tenant's rate token is taken before any connection, the file may be as large as
// the thread's workspace and must arrive within the fetch deadline, and its bytes
// count against the upload quota once stored.
func (s *Service) PutFileURL(ctx context.Context, tenant, id, path, field, raw string) (string, storage.Object, error) {
	return s.putFile(ctx, tenant, id, path, func(ctx context.Context, key string, workspace int64) (storage.Object, error) {
		fctx, cancel := s.withFetchDeadline(ctx)
		defer cancel()
		obj, err := s.fetchTo(fctx, field, raw, workspace, key)
		if err != nil {
			return obj, err
		}
		if err := s.cfg.Quotas.Upload(ctx, tenant, obj.Size); err != nil {
			_, _ = s.cfg.Store.DeletePrefix(context.WithoutCancel(ctx), key)
			return storage.Object{}, asQuota(err, "")
		}
		return obj, nil
	})
}

// putFile checks a thread file's target, takes the rate token, has store put the
// file under key (within the workspace's size), and queues the thread operation.
func (s *Service) putFile(ctx context.Context, tenant, id, path string, store func(ctx context.Context, key string, workspace int64) (storage.Object, error)) (string, storage.Object, error) {
	if err := ValidThread("id", id); err != nil {
		return "", storage.Object{}, err
	}
	name, err := ValidName("path", path)
	if err != nil {
		return "", storage.Object{}, err
	}
	if err := s.Admit(ctx, tenant); err != nil {
		return "", storage.Object{}, err
	}
	// A file put to a new thread creates it, in the tenant's default profile.
	prof, err := s.profile(ctx, tenant, "", id)
	if err != nil {
		return "", storage.Object{}, err
	}
	// Refuse what the quotas refuse before storing or counting anything.
	if err := s.cfg.Records.Admit(ctx, tenant, id); err != nil {
		return "", storage.Object{}, s.quotaError(err)
	}
	op := &jobs.Execution{ID: jobs.NewOpID(), Kind: jobs.KindPutFile, Tenant: tenant, ThreadID: id, Profile: prof.Name, Status: jobs.Queued, CreatedAt: s.cfg.Now().UTC()}
	key := jobs.InputKey(op, name)
	obj, err := store(ctx, key, s.limitsOf(prof).WorkspaceBytes)
	if err != nil {
		return "", storage.Object{}, err
	}
	op.Inputs = []jobs.Input{{Name: name, Key: key, Size: obj.Size}}
	if _, err := s.cfg.Records.Create(ctx, op, "", ""); err != nil {
		// Refused after all (a quota raced, or the thread's profile): keep nothing.
		_ = s.cfg.Quotas.Refund(context.WithoutCancel(ctx), tenant, obj.Size)
		_, _ = s.cfg.Store.DeletePrefix(context.WithoutCancel(ctx), key)
		return "", storage.Object{}, s.opCreateError(err)
	}
	return name, obj, nil
}

// GetFile reads a file of the thread's workspace as it is after the thread's earlier
// executions: it is copied to storage, and returned as an artifact.
func (s *Service) GetFile(ctx context.Context, tenant, id, path string) (jobs.File, error) {
	if _, err := s.Thread(ctx, tenant, id); err != nil {
		return jobs.File{}, err
	}
	name, err := sandbox.CleanPath(path)
	if err != nil {
		return jobs.File{}, Invalid("path", "%v", err)
	}
	op, err := s.runOp(ctx, &jobs.Execution{Kind: jobs.KindGetFile, Tenant: tenant, ThreadID: id, Path: name})
	if err != nil {
		return jobs.File{}, err
	}
	switch {
	case op.Status == jobs.Failed && jobs.ErrFileNotFound.Is(op.Error):
		return jobs.File{}, NotFound("file " + name)
	case op.Status == jobs.Failed && jobs.ErrQuotaExceeded.Is(op.Error):
		now := s.cfg.Now().UTC()
		return jobs.File{}, &Error{Code: CodeQuota, Message: op.Error.Value,
			RetryAfter: max(1, int(now.Truncate(24*time.Hour).Add(24*time.Hour).Sub(now).Seconds()))}
	case op.Status != jobs.Succeeded || len(op.Files) == 0:
		return jobs.File{}, Unavailable("reading %s: %s", name, opProblem(op))
	}
	return op.Files[0], nil
}

// FileURL presigns a download of an artifact.
func (s *Service) FileURL(ctx context.Context, f jobs.File, filename string) (string, error) {
	url, _, err := s.cfg.Store.PresignGet(ctx, f.Key, filename)
	return url, err
}

// OpenFile streams an artifact.
func (s *Service) OpenFile(ctx context.Context, f jobs.File) (io.ReadCloser, storage.Object, error) {
	return s.cfg.Store.Open(ctx, f.Key)
}

// OpenFileTail streams the last n bytes of an artifact: the end of a long log
// without reading the whole of it.
func (s *Service) OpenFileTail(ctx context.Context, f jobs.File, n int64) (io.ReadCloser, error) {
	rc, _, err := s.cfg.Store.OpenTail(ctx, f.Key, n)
	return rc, err
}

// runOp queues a thread operation and waits for it to end. An operation costs like
// a submission: it takes a rate token, and but for a delete it is refused past the
// tenant's active and thread-queue quotas (it holds a place in both until it ends). A get that is still
// queued when its caller stops waiting (gone, or past OpWait) is canceled: its copy
// would be read by nobody.
func (s *Service) runOp(ctx context.Context, op *jobs.Execution) (*jobs.Execution, error) {
	if err := s.Admit(ctx, op.Tenant); err != nil {
		return nil, err
	}
	op.ID, op.Status, op.CreatedAt = jobs.NewOpID(), jobs.Queued, s.cfg.Now().UTC()
	done, stop := s.cfg.Waiter.Watch(op.ID)
	defer stop()
	if _, err := s.cfg.Records.Create(ctx, op, "", ""); err != nil {
		return nil, s.opCreateError(err)
	}
	ended, err := s.awaitEnd(ctx, op.Tenant, op.ID, done, OpWait)
	if op.Kind == jobs.KindGetFile && (err != nil || !ended.Status.Terminal()) {
		if _, cerr := s.cfg.Records.Cancel(context.WithoutCancel(ctx), op.Tenant, op.ID); cerr != nil {
			s.cfg.Logger.Warn("cancel an abandoned file read", "op", op.ID, "err", cerr)
		}
	}
	return ended, err
}

// opCreateError is the client's error for an operation the records refused.
func (s *Service) opCreateError(err error) error {
	var over *quota.Exceeded
	if errors.As(err, &over) {
		return s.quotaError(err)
	}
	return asProfileMismatch(err)
}

func opProblem(op *jobs.Execution) string {
	if op.Error != nil {
		return op.Error.Value
	}
	return "still " + string(op.Status) + " after " + OpWait.String() + "; try again"
}
