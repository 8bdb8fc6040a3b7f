package api

import (
	"errors"
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

type threadView struct {
	ID           string      `json:"id"`
	Profile      string      `json:"profile"`
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
		if err != nil {
			return invalid("limit", "must be between 1 and 1000")
		}
		limit = n
	}
	threads, err := s.svc.ListThreads(c.Request().Context(), tenantOf(c), limit)
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
	th, err := s.svc.Thread(c.Request().Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	v := threadView{ID: th.ID, Profile: th.Profile, Sandbox: string(th.Sandbox), LastActiveAt: th.LastActiveAt, Queued: th.Queued, Files: []fileEntry{}}
	for _, f := range th.Files {
		v.Files = append(v.Files, fileEntry{Name: f.Name, Size: f.Size, ModifiedAt: f.ModTime})
	}
	return c.JSON(http.StatusOK, v)
}

// deleteThread is DELETE /v1/threads/{id}: queued executions are canceled, then the
// sandbox and workspace are removed, in order after whatever is running.
func (s *Server) deleteThread(c echo.Context) error {
	if err := s.svc.DeleteThread(c.Request().Context(), tenantOf(c), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// resetThread is POST /v1/threads/{id}/reset: the thread's kernel restarts, in order
// after the executions queued before it (variables and processes gone, files kept).
func (s *Server) resetThread(c echo.Context) error {
	id := c.Param("id")
	if err := s.svc.ResetThread(c.Request().Context(), tenantOf(c), id); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"thread_id": id, "reset": true})
}

// putThreadFile is PUT /v1/threads/{id}/files/{path}: the raw body becomes a file in
// the thread's workspace, applied in order with the thread's executions: every
// execution accepted after this answer sees it.
func (s *Server) putThreadFile(c echo.Context) error {
	req := c.Request()
	name, obj, err := s.svc.PutFile(req.Context(), tenantOf(c), c.Param("id"), c.Param("*"), req.Body, req.ContentLength)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return tooLarge("", "the file is over %d bytes", tooBig.Limit)
		}
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{"name": name, "size": obj.Size, "sha256": obj.SHA256})
}

// getThreadFile is GET /v1/threads/{id}/files/{path}: a redirect to a presigned URL of
// the file as it is after the thread's earlier executions, or with ?inline=1 the bytes
// (never as a page a browser would run: setFileHeaders).
func (s *Server) getThreadFile(c echo.Context) error {
	ctx := c.Request().Context()
	f, err := s.svc.GetFile(ctx, tenantOf(c), c.Param("id"), c.Param("*"))
	if err != nil {
		return err
	}
	inline, _ := strconv.ParseBool(c.QueryParam("inline"))
	if !inline {
		url, err := s.svc.FileURL(ctx, f, path.Base(f.Name))
		if err != nil {
			return err
		}
		return c.Redirect(http.StatusFound, url)
	}
	rc, obj, err := s.svc.OpenFile(ctx, f)
	if err != nil {
		return err
	}
	defer rc.Close()
	h := c.Response().Header()
	h.Set(echo.HeaderContentLength, strconv.FormatInt(obj.Size, 10))
	setFileHeaders(h, f.ContentType, path.Base(f.Name))
	return c.Stream(http.StatusOK, f.ContentType, rc)
}
