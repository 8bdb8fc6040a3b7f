package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// healthz is GET /healthz: the process is up.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz is GET /readyz: every dependency answers. It reports each check by name.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
	defer cancel()
	results := make(map[string]string, len(s.cfg.Ready))
	var mu sync.Mutex
	var wg sync.WaitGroup
	ready := true
	for _, chk := range s.cfg.Ready {
		wg.Go(func() {
			res := "ok"
			if err := chk.Check(ctx); err != nil {
				// Anyone may ask: a raw error could show internal addresses.
				res = "unavailable"
				if chk.Public {
					res = err.Error()
				}
				s.cfg.Logger.Warn("readiness check failed", "check", chk.Name, "err", err)
			}
			mu.Lock()
			defer mu.Unlock()
			results[chk.Name] = res
			ready = ready && res == "ok"
		})
	}
	wg.Wait()
	status, code := "ready", http.StatusOK
	if !ready {
		status, code = "unavailable", http.StatusServiceUnavailable
	}
	return c.JSON(code, map[string]any{"status": status, "checks": results})
}
