package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/codeinterp/codeinterp/internal/service"
	"github.com/codeinterp/codeinterp/jobs"
)

// createExecution is POST /v1/executions.
func (s *Server) createExecution(c echo.Context) error {
	ctx, tenant := c.Request().Context(), tenantOf(c)
	body, err := readBody(c)
	if err != nil {
		return err
	}
	idem := service.Idempotency{Key: c.Request().Header.Get("Idempotency-Key"), Hash: hashBytes(body)}
	// Answer a replay before decoding, so its files are never stored a second time.
	if ex, err := s.svc.Replay(ctx, tenant, idem); err != nil || ex != nil {
		if err != nil {
			return err
		}
		return s.respondCreated(c, ex)
	}
	var req service.SubmitRequest
	if err := decodeJSON(c.Request(), &req, body); err != nil {
		return err
	}
	ex, err := s.svc.Submit(ctx, tenant, req, idem)
	if err != nil {
		return err
	}
	return s.respondCreated(c, ex)
}

func (s *Server) respondCreated(c echo.Context, ex *jobs.Execution) error {
	v, err := s.svc.Render(c.Request().Context(), ex)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/v1/executions/"+ex.ID)
	return c.JSON(http.StatusAccepted, v)
}

// getExecution is GET /v1/executions/{id}[?wait=duration].
func (s *Server) getExecution(c echo.Context) error {
	ctx := c.Request().Context()
	wait, err := parseWait(c.QueryParam("wait"))
	if err != nil {
		return err
	}
	ex, err := s.svc.Get(ctx, tenantOf(c), c.Param("id"), wait)
	if err != nil {
		return err
	}
	v, err := s.svc.Render(ctx, ex)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// parseWait reads ?wait= as a Go duration ("30s", "1m") or a number of seconds.
func parseWait(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, serr := strconv.ParseFloat(s, 64)
		if serr != nil {
			return 0, invalid("wait", "must be a duration like 30s, or seconds")
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 || d > service.MaxWait {
		return 0, invalid("wait", "must be between 0 and %s", service.MaxWait)
	}
	return d, nil
}

func readBody(c echo.Context) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(c.Request().Body); err != nil {
		return nil, jsonError(err)
	}
	return buf.Bytes(), nil
}

// hashBytes identifies a request body for Idempotency-Key replays: the raw bytes, so
// hashing costs no second decoded copy of a large body. A retry must resend the same
// bytes, as HTTP clients do.
func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
