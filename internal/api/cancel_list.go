package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/codeinterp/codeinterp/jobs"
)

// cancelExecution is POST /v1/executions/{id}/cancel.
func (s *Server) cancelExecution(c echo.Context) error {
	ctx := c.Request().Context()
	if _, err := s.execution(ctx, tenantOf(c), c.Param("id")); err != nil {
		return err
	}
	ex, err := s.cfg.Records.Cancel(ctx, tenantOf(c), c.Param("id"), s.cfg.Now)
	if err != nil {
		return err
	}
	v, err := jobs.Render(ctx, ex, s.cfg.Store)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, v)
}

// listExecutions is GET /v1/executions?thread_id=&status=&limit=&cursor=.
func (s *Server) listExecutions(c echo.Context) error {
	ctx := c.Request().Context()
	opt := jobs.ListOptions{Thread: c.QueryParam("thread_id"), Status: jobs.Status(c.QueryParam("status")), Limit: 20, Cursor: c.QueryParam("cursor")}
	if opt.Thread != "" {
		if err := validThread("thread_id", opt.Thread); err != nil {
			return err
		}
	}
	if opt.Status != "" && opt.Status != jobs.Queued && opt.Status != jobs.Running && !opt.Status.Terminal() {
		return invalid("status", "must be one of queued, running, succeeded, failed, timed_out, canceled")
	}
	if l := c.QueryParam("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			return invalid("limit", "must be between 1 and 100")
		}
		opt.Limit = n
	}
	if opt.Cursor != "" && !strings.HasPrefix(opt.Cursor, "ex_") {
		return invalid("cursor", "is not a cursor this API returned")
	}
	items, next, err := s.cfg.Records.List(ctx, tenantOf(c), opt)
	if err != nil {
		return err
	}
	views := make([]*jobs.View, 0, len(items))
	for _, ex := range items {
		v, err := jobs.Render(ctx, ex, s.cfg.Store)
		if err != nil {
			return err
		}
		views = append(views, v)
	}
	return c.JSON(http.StatusOK, map[string]any{"items": views, "next_cursor": next})
}
