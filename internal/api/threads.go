package api

import (
	"context"
	"errors"
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// opWait bounds how long a thread operation that the client waits for (get a file,
// delete the thread) may take, including the executions queued before it.
const opWait = 60 * time.Second

type threadView struct {
	ID           string      `json:"id"`
	Sandbox      string      `json:"sandbox"`
	LastActiveAt *time.Time  `json:"last_active_at"`
	Queued       int64       `json:"queued"`
	Files        []fileEntry `json:"files"`
}

type fileEntry struct {
	Name       string    `json:"name"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
}

// listThreads is GET /v1/threads: the tenant's threads, most recently active first.
func (s *Server) listThreads(c echo.Context) error {
	limit := 100
	if l := c.QueryParam("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			return invalid("limit", "must be between 1 and 1000")
		}
		limit = n
	}
	threads, err := s.cfg.Records.TenantThreads(c.Request().Context(), tenantOf(c), limit)
	if err != nil {
		return err
	}
	items := make([]map[string]any, 0, len(threads))
	for _, t := range threads {
		items = append(items, map[string]any{"id": t.ID, "last_active_at": t.LastActiveAt})
	}
	return c.JSON(http.StatusOK, map[string]any{"items": items})
}

// getThread is GET /v1/threads/{id}.
func (s *Server) getThread(c echo.Context) error {
	ctx, tenant, id := c.Request().Context(), tenantOf(c), c.Param("id")
	v, err := s.thread(ctx, tenant, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// thread assembles a thread's view, or answers 404 for a thread never used.
func (s *Server) thread(ctx context.Context, tenant, id string) (*threadView, error) {
	if err := validThread("id", id); err != nil {
		return nil, err
	}
	tk := jobs.ThreadKey(tenant, id)
	threads := s.cfg.Records.Threads()
	state, err := s.cfg.Records.ThreadState(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	queued, err := threads.Queued(ctx, tk)
	if err != nil {
		return nil, err
	}
	owner, err := threads.OwnerAlive(ctx, tk, s.cfg.Now())
	if err != nil {
		return nil, err
	}
	if state == nil && queued == 0 {
		return nil, notFound("thread " + id)
	}
	v := &threadView{ID: id, Sandbox: "none", Queued: queued, Files: []fileEntry{}}
	if state != nil {
		t := state.LastActiveAt
		v.LastActiveAt = &t
		for _, f := range state.Files {
			v.Files = append(v.Files, fileEntry{Name: f.Name, Size: f.Size, ModifiedAt: f.ModTime})
		}
		// The owner's word counts only while it is alive: a dead worker's kernel is gone.
		if owner != "" && state.Sandbox != "" {
			v.Sandbox = state.Sandbox
		}
	}
	return v, nil
}

// deleteThread is DELETE /v1/threads/{id}: queued executions are canceled, then the
// sandbox and workspace are removed, in order after whatever is running.
func (s *Server) deleteThread(c echo.Context) error {
	ctx, tenant, id := c.Request().Context(), tenantOf(c), c.Param("id")
	if _, err := s.thread(ctx, tenant, id); err != nil {
		return err
	}
	items, err := s.cfg.Records.Threads().Items(ctx, jobs.ThreadKey(tenant, id))
	if err != nil {
		return err
	}
	for _, item := range items {
		if _, err := s.cfg.Records.Cancel(ctx, tenant, item, s.cfg.Now); err != nil && !errors.Is(err, jobs.ErrNotFound) {
			return err
		}
	}
	op, err := s.runOp(c, &jobs.Execution{Kind: jobs.KindDeleteThread, Tenant: tenant, ThreadID: id})
	if err != nil {
		return err
	}
	if op.Status != jobs.Succeeded {
		return unavailable("deleting thread %s: %s", id, opProblem(op))
	}
	return c.NoContent(http.StatusNoContent)
}

// putThreadFile is PUT /v1/threads/{id}/files/{path}: the raw body becomes a file in
// the thread's workspace, applied in order with the thread's executions: every
// execution accepted after this answer sees it.
func (s *Server) putThreadFile(c echo.Context) error {
	ctx, tenant, id := c.Request().Context(), tenantOf(c), c.Param("id")
	if err := validThread("id", id); err != nil {
		return err
	}
	name, err := sandbox.CleanPath(c.Param("*"))
	if err != nil {
		return invalid("path", "%v", err)
	}
	op := &jobs.Execution{ID: newOpID(), Kind: jobs.KindPutFile, Tenant: tenant, ThreadID: id, Status: jobs.Queued, CreatedAt: s.cfg.Now().UTC()}
	key := jobs.InputKey(op, name)
	obj, err := s.cfg.Store.Put(ctx, key, c.Request().Body, c.Request().ContentLength, "")
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return tooLarge("", "the file is over %d bytes", tooBig.Limit)
		}
		return err
	}
	op.Inputs = []jobs.Input{{Name: name, Key: key, Size: obj.Size}}
	if err := s.submitOp(ctx, op); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{"name": name, "size": obj.Size, "sha256": obj.SHA256})
}

// getThreadFile is GET /v1/threads/{id}/files/{path}: a redirect to a presigned URL of
// the file as it is after the thread's earlier executions, or with ?inline=1 the bytes.
func (s *Server) getThreadFile(c echo.Context) error {
	ctx, tenant, id := c.Request().Context(), tenantOf(c), c.Param("id")
	if _, err := s.thread(ctx, tenant, id); err != nil {
		return err
	}
	name, err := sandbox.CleanPath(c.Param("*"))
	if err != nil {
		return invalid("path", "%v", err)
	}
	op, err := s.runOp(c, &jobs.Execution{Kind: jobs.KindGetFile, Tenant: tenant, ThreadID: id, Path: name})
	if err != nil {
		return err
	}
	switch {
	case op.Status == jobs.Failed && op.Error != nil && op.Error.Name == "NotFound":
		return notFound("file " + name)
	case op.Status != jobs.Succeeded || len(op.Files) == 0:
		return unavailable("reading %s: %s", name, opProblem(op))
	}
	f := op.Files[0]
	inline, _ := strconv.ParseBool(c.QueryParam("inline"))
	if !inline {
		url, _, err := s.cfg.Store.PresignGet(ctx, f.Key, path.Base(name))
		if err != nil {
			return err
		}
		return c.Redirect(http.StatusFound, url)
	}
	rc, obj, err := s.cfg.Store.Open(ctx, f.Key)
	if err != nil {
		return err
	}
	defer rc.Close()
	c.Response().Header().Set(echo.HeaderContentLength, strconv.FormatInt(obj.Size, 10))
	return c.Stream(http.StatusOK, f.ContentType, rc)
}

// runOp queues a thread operation and waits for it to end.
func (s *Server) runOp(c echo.Context, op *jobs.Execution) (*jobs.Execution, error) {
	ctx := c.Request().Context()
	op.ID, op.Status, op.CreatedAt = newOpID(), jobs.Queued, s.cfg.Now().UTC()
	done, stop := s.cfg.Waiter.Watch(op.ID)
	defer stop()
	if err := s.submitOp(ctx, op); err != nil {
		return nil, err
	}
	return s.awaitEnd(ctx, op.Tenant, op.ID, done, opWait)
}

func (s *Server) submitOp(ctx context.Context, op *jobs.Execution) error {
	_, err := s.cfg.Records.Create(ctx, op, "", "")
	return err
}

func opProblem(op *jobs.Execution) string {
	if op.Error != nil {
		return op.Error.Value
	}
	return "still " + string(op.Status) + " after " + opWait.String() + "; try again"
}

func newOpID() string { return "op_" + jobs.NewID()[3:] }
