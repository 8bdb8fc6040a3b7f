// Package api is codeinterp's HTTP API (the contract is docs/API.md and
// internal/api/openapi.json), an echo adapter over internal/service: it decodes
// requests, authenticates tenants, maps errors to HTTP answers, frames server-sent
// events and serves health and metrics. The use cases themselves live in the
// service; the API never talks to a sandbox runtime.
package api

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"

	"github.com/codeinterp/codeinterp/internal/service"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// Check is one dependency /readyz probes.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// Limits bound request bodies.
type Limits struct {
	MaxRequestBytes int64 // a whole POST /v1/executions body
	MaxUploadBytes  int64 // one POST /v1/files or PUT .../files/... body
}

// Config wires a Server.
type Config struct {
	Service *service.Service
	Keys    *Keys
	Limits  Limits
	Ready   []Check
	Logger  *slog.Logger
}

// Server answers the HTTP API.
type Server struct {
	cfg Config
	svc *service.Service
	e   *echo.Echo
}

// New returns a Server with every route registered. It does no I/O.
func New(cfg Config) *Server {
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	s := &Server{cfg: cfg, svc: cfg.Service, e: echo.New()}
	e := s.e
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = errorHandler(cfg.Logger)
	e.Use(middleware.RequestID(), middleware.Recover(), metricsMiddleware())

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(metricsHandler()))
	e.GET("/openapi.json", openapi)

	v1 := e.Group("/v1", authenticate(cfg.Keys))
	v1.POST("/executions", s.createExecution, bodyLimit(cfg.Limits.MaxRequestBytes))
	v1.GET("/executions", s.listExecutions)
	v1.GET("/executions/:id", s.getExecution)
	v1.POST("/executions/:id/cancel", s.cancelExecution)
	v1.GET("/executions/:id/events", s.events)
	v1.GET("/threads", s.listThreads)
	v1.GET("/threads/:id", s.getThread)
	v1.DELETE("/threads/:id", s.deleteThread)
	v1.PUT("/threads/:id/files/*", s.putThreadFile, bodyLimit(cfg.Limits.MaxUploadBytes))
	v1.GET("/threads/:id/files/*", s.getThreadFile)
	v1.POST("/files", s.upload, bodyLimit(cfg.Limits.MaxUploadBytes))
	return s
}

// ServeHTTP makes the Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.e.ServeHTTP(w, r) }

// bodyLimit refuses bodies over n bytes with 413, whether or not they declare a length.
func bodyLimit(n int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if req.ContentLength > n {
				return tooLarge("", "the request body is %d bytes; the limit is %d", req.ContentLength, n)
			}
			req.Body = http.MaxBytesReader(c.Response(), req.Body, n)
			return next(c)
		}
	}
}
