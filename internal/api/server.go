// Package api is codeinterp's HTTP API (the contract is ../shared/API.md and
// internal/api/openapi.json): it validates requests, stores execution records,
// enqueues work for the workers and answers with what they recorded. It never runs
// code itself.
package api

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/storage"
)

// Storage is what the API needs of artifact storage; *storage.Store provides it.
type Storage interface {
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) (storage.Object, error)
	Open(ctx context.Context, key string) (io.ReadCloser, storage.Object, error)
	Stat(ctx context.Context, key string) (storage.Object, error)
	PresignGet(ctx context.Context, key, filename string) (string, time.Time, error)
	Retention() time.Duration
}

// Queue is what the API needs of the task queue; *jobs.Enqueuer provides it.
type Queue interface {
	Enqueue(ctx context.Context, ex *jobs.Execution) error
}

// Check is one dependency /readyz probes.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// Config wires a Server.
type Config struct {
	Records *jobs.Records
	Waiter  *jobs.Waiter
	Queue   Queue
	Store   Storage
	Keys    *Keys
	Limits  Limits
	// Webhooks: the tenants that may use them (those with a signing secret) and the
	// addresses they may target.
	WebhookTenants map[string]bool
	WebhookGuard   jobs.WebhookGuard
	Ready          []Check
	Logger         *slog.Logger
	NewID          func() string
	Now            func() time.Time
}

// Server answers the HTTP API.
type Server struct {
	cfg Config
	e   *echo.Echo
}

// New returns a Server with every route registered. It does no I/O.
func New(cfg Config) *Server {
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = jobs.NewID
	}
	s := &Server{cfg: cfg, e: echo.New()}
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
