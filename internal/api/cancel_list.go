package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/codeinterp/codeinterp/internal/service"
	"github.com/codeinterp/codeinterp/jobs"
)

// cancelExecution is POST /v1/executions/{id}/cancel.
func (s *Server) cancelExecution(c echo.Context) error {
	ctx := c.Request().Context()
	ex, err := s.svc.Cancel(ctx, tenantOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	v, err := s.svc.Render(ctx, ex)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, v)
}

// listExecutions is GET /v1/executions?thread_id=&status=&limit=&cursor=.
func (s *Server) listExecutions(c echo.Context) error {
	ctx := c.Request().Context()
	req := service.ListRequest{Thread: c.QueryParam("thread_id"), Status: jobs.Status(c.QueryParam("status")), Cursor: c.QueryParam("cursor")}
	if l := c.QueryParam("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			return invalid("limit", "must be between 1 and 100")
		}
		req.Limit = n
	}
	items, next, err := s.svc.List(ctx, tenantOf(c), req)
	if err != nil {
		return err
	}
	views := make([]*jobs.View, 0, len(items))
	for _, ex := range items {
		v, err := s.svc.Render(ctx, ex)
		if err != nil {
			return err
		}
		views = append(views, v)
	}
	return c.JSON(http.StatusOK, map[string]any{"items": views, "next_cursor": next})
}
