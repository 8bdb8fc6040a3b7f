package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// usage is GET /v1/usage: the tenant's usage counters, what it holds now, and its
// quotas, so a client sees how near a limit it is.
func (s *Server) usage(c echo.Context) error {
	tenant := tenantOf(c)
	u, err := s.svc.Usage(c.Request().Context(), tenant)
	if err != nil {
		return err
	}
	byStatus := map[string]int64{}
	for st, n := range u.Executions {
		byStatus[string(st)] = n
	}
	q := u.Quotas
	return c.JSON(http.StatusOK, map[string]any{
		"tenant":       tenant,
		"executions":   byStatus,
		"cpu_seconds":  u.CPUSeconds,
		"wall_seconds": u.WallSeconds,
		"bytes_stored": u.BytesStored,
		"current": map[string]any{
			"live_sandboxes":     u.LiveSandbox,
			"active_executions":  u.Active,
			"upload_bytes_today": u.UploadsToday,
			"stored_bytes_today": u.StoredToday,
			"skill_bytes":        u.SkillBytes,
			"open_streams":       s.streams.openOf(tenant),
		},
		"quotas": map[string]any{
			"submissions_per_second": q.Rate, "burst": q.Burst, "active_executions": q.Active,
			"queued_per_thread": q.ThreadQueue, "streams": q.Streams, "upload_bytes_per_day": q.UploadBytesDay,
			"stored_bytes_per_day": q.StoredBytesDay,
			"skill_bytes":          q.SkillBytes, "mcp_sessions": q.MCPSessions,
		},
	})
}
