// Package api is codeinterp's HTTP API (the contract is docs/API.md and
// internal/api/openapi.json), an echo adapter over internal/service: it decodes
// requests, authenticates tenants, maps errors to HTTP answers, frames server-sent
// events and serves health, and metrics on a handler of their own (Server.Metrics),
// which the binary serves on an internal listener, never beside the API: they name
// every tenant. The use cases themselves live in the service; the API never talks to
// a sandbox runtime.
package api

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"

	"github.com/codeinterp/codeinterp/internal/service"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// Check is one dependency /readyz probes.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
	// Public says the check's errors are safe to show anyone (they name no address
	// and carry no raw error); others show as "unavailable", and are logged.
	Public bool
}

// Limits bound request bodies and long-lived requests.
type Limits struct {
	MaxRequestBytes int64 // a whole POST /v1/executions body
	MaxUploadBytes  int64 // one POST /v1/files or PUT .../files/... body
	// Streams bounds the event streams and long-polls open at once; default 256.
	Streams int
	// TenantStreams is a tenant's share of Streams (0: no limit of its own).
	TenantStreams func(tenant string) int
	// MaxSkillBytes bounds a POST /v1/skills archive; default 50 MiB.
	MaxSkillBytes int64
}

// Config wires a Server.
type Config struct {
	Service *service.Service
	Keys    *Keys
	Limits  Limits
	Ready   []Check
	// Collectors are exported by Metrics beside the API's own.
	Collectors []prometheus.Collector
	Logger     *slog.Logger
	// MCP, if set, is served at /mcp (every method), behind the API's authentication,
	// body limits and stream accounting (internal/mcp).
	MCP http.Handler
}

// Server answers the HTTP API.
type Server struct {
	cfg     Config
	svc     *service.Service
	e       *echo.Echo
	streams *streams
	bodies  *service.Budget // the service's: fetched input files share it
	routes  map[string]bool // registered paths: the only route labels of metrics
	metrics http.Handler
}

// New returns a Server with every route registered. It does no I/O.
func New(cfg Config) *Server {
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Limits.TenantStreams == nil {
		cfg.Limits.TenantStreams = func(string) int { return 0 }
	}
	s := &Server{cfg: cfg, svc: cfg.Service, e: echo.New(),
		streams: newStreams(cmp.Or(cfg.Limits.Streams, 256), cfg.Limits.TenantStreams),
		bodies:  cfg.Service.Bodies(),
	}
	e := s.e
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = errorHandler(cfg.Logger)
	e.Use(middleware.RequestID(), middleware.Recover(), s.metricsMiddleware())

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/openapi.json", openapi)

	v1 := e.Group("/v1", authenticate(cfg.Keys))
	req, up := cfg.Limits.MaxRequestBytes, cfg.Limits.MaxUploadBytes
	v1.POST("/executions", s.createExecution, bodyLimit(req), s.budgeted(req, false))
	v1.GET("/executions", s.listExecutions)
	v1.GET("/executions/:id", s.getExecution, s.longLived(false))
	v1.POST("/executions/:id/cancel", s.cancelExecution)
	v1.GET("/executions/:id/events", s.events, s.longLived(true))
	v1.GET("/threads", s.listThreads)
	v1.GET("/threads/:id", s.getThread)
	v1.DELETE("/threads/:id", s.deleteThread, s.longLived(true))
	v1.POST("/threads/:id/reset", s.resetThread, s.longLived(true))
	v1.PUT("/threads/:id/files/*", s.putThreadFile, bodyLimit(up), s.budgeted(up, false))
	v1.GET("/threads/:id/files/*", s.getThreadFile, s.longLived(true))
	v1.POST("/files", s.upload, bodyLimit(up), s.budgeted(up, false))
	v1.GET("/usage", s.usage)
	v1.GET("/runtimes", s.runtimes)
	skillMax := cmp.Or(cfg.Limits.MaxSkillBytes, 50<<20) + 1<<20 // room for a form's other fields
	v1.POST("/skills", s.uploadSkill, bodyLimit(skillMax), s.budgeted(skillMax, false))
	v1.GET("/skills", s.listSkills)
	v1.DELETE("/skills/:name", s.deleteSkill)
	if cfg.MCP != nil {
		// Every MCP request may be long-lived (a tool call waits for its execution,
		// a GET is the session's event stream): each holds one of the tenant's streams.
		e.Any("/mcp", echo.WrapHandler(cfg.MCP), authenticate(cfg.Keys), s.longLived(true), bodyLimit(req), s.budgeted(req, true))
	}
	s.metrics = s.metricsHandler()
	s.routes = map[string]bool{}
	for _, r := range e.Routes() {
		s.routes[r.Path] = true
	}
	return s
}

// Metrics serves the Prometheus metrics: the API's requests and, read from Redis at
// each scrape, every tenant's usage. Serve it on an internal listener only
// (CODEINTERP_METRICS_ADDR): the API's own port does not answer /metrics.
func (s *Server) Metrics() http.Handler { return s.metrics }

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
