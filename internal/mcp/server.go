// Package mcp is codeinterp's Model Context Protocol endpoint (Streamable HTTP, the
// official Go SDK), for AI agents: a stateful code_interpreter tool and the thread's
// files, as tools and as resources. It is a thin adapter over internal/service, like
// the HTTP API: it authenticates the API keys the API accepts (a session belongs to
// the tenant that opened it), turns tool calls into the service's use cases, and
// shapes their results for a model (text clipped to a budget, figures as small PNG
// images, output files as links). Each MCP session has a thread of its own, so state
// persists across the calls of one agent conversation.
//
// It owns no state beyond the SDK's sessions (in the memory of the API process that
// opened them) and their count per tenant. It must not import echo or internal/api, a sandbox runtime, or Redis.
package mcp

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/codeinterp/codeinterp/internal/service"
	"github.com/codeinterp/codeinterp/jobs"
)

// Limits bound what a tool result costs a model, and what a call may carry.
type Limits struct {
	// TextBytes bounds each of stdout, stderr, a traceback and a result as text
	// content: past it the head and tail are kept around a marker. Default 16 KiB.
	TextBytes int
	// ImageSide (pixels, the longer side) and ImageBytes bound each figure sent as an
	// image: larger ones are downscaled. Defaults 1024 and 256 KiB.
	ImageSide  int
	ImageBytes int
	// ImagePixels bounds a figure decoded to be downscaled (default 4 Mi pixels);
	// a larger one, or a 16-bit one, is a link. Images bounds the figures of one
	// result sent as images (default 4); the others are links.
	ImagePixels int
	Images      int
	// InlineBytes bounds a file read_file returns inline (as text) and a resource
	// read returns; larger files are links. Default 64 KiB for read_file; resources
	// up to 16 times that.
	InlineBytes int
	// FileBytes bounds a file uploaded through upload_file (after decoding).
	FileBytes int64
	// RequestBytes bounds an MCP request body; default 8 MiB.
	RequestBytes int64
}

// Config wires the MCP endpoint.
type Config struct {
	Service *service.Service
	// Tenant resolves an API key to its tenant: the keys of the HTTP API.
	Tenant func(key string) (tenant string, ok bool)
	// Sessions is the tenant's mcp_sessions quota: the sessions it may have open in
	// this process at once (0: no limit).
	Sessions func(tenant string) int
	Limits   Limits
	// SessionTimeout closes a session idle this long (default 1h); its thread stays
	// until the janitor reaps it, like any thread.
	SessionTimeout time.Duration
	// Progress is how often a running tool call reports progress; default 1s.
	Progress time.Duration
	// MaxWait bounds how long code_interpreter waits for an execution, queueing
	// included, beyond its own timeout; default 10m.
	MaxWait time.Duration
	Version string
	Logger  *slog.Logger
}

// server holds the tools' handlers.
type server struct {
	cfg      Config
	svc      *service.Service
	log      *slog.Logger
	budget   imageBudget
	figures  *prometheus.CounterVec
	sessions *sessionCounts
}

// Endpoint is the MCP endpoint: an http.Handler to mount at /mcp, and a
// prometheus.Collector of what became of figures and of the sessions open.
type Endpoint struct {
	http.Handler
	s *server
}

var sessionsDesc = prometheus.NewDesc("codeinterp_mcp_sessions", "MCP sessions open in this process, by tenant.", []string{"tenant"}, nil)

// Describe implements prometheus.Collector.
func (e *Endpoint) Describe(ch chan<- *prometheus.Desc) {
	e.s.figures.Describe(ch)
	ch <- sessionsDesc
}

// Collect implements prometheus.Collector.
func (e *Endpoint) Collect(ch chan<- prometheus.Metric) {
	e.s.figures.Collect(ch)
	e.s.sessions.each(func(tenant string, n int) {
		ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(n), tenant)
	})
}

// New returns the MCP endpoint, to be mounted at /mcp. It does no I/O.
func New(cfg Config) *Endpoint {
	l := &cfg.Limits
	l.TextBytes = cmp.Or(l.TextBytes, 16<<10)
	l.ImageSide = cmp.Or(l.ImageSide, 1024)
	l.ImageBytes = cmp.Or(l.ImageBytes, 256<<10)
	l.ImagePixels = cmp.Or(l.ImagePixels, 4<<20)
	l.Images = cmp.Or(l.Images, 4)
	l.InlineBytes = cmp.Or(l.InlineBytes, 64<<10)
	l.FileBytes = cmp.Or(l.FileBytes, 100<<20)
	l.RequestBytes = cmp.Or(l.RequestBytes, 8<<20)
	cfg.SessionTimeout = cmp.Or(cfg.SessionTimeout, time.Hour)
	cfg.Progress = cmp.Or(cfg.Progress, time.Second)
	cfg.MaxWait = cmp.Or(cfg.MaxWait, 10*time.Minute)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Sessions == nil {
		cfg.Sessions = func(string) int { return 0 }
	}
	s := &server{cfg: cfg, svc: cfg.Service, log: cfg.Logger,
		budget: imageBudget{side: l.ImageSide, bytes: l.ImageBytes, pixels: int64(l.ImagePixels)},
		figures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "codeinterp_mcp_figures_total",
			Help: "Figures of MCP results by what became of them (only downscaled and unfit ones were decoded)."}, []string{"outcome"}),
		sessions: newSessionCounts(cfg.Sessions),
	}

	srv := mcp.NewServer(&mcp.Implementation{Name: "codeinterp", Title: "codeinterp code interpreter", Version: cmp.Or(cfg.Version, "dev")},
		&mcp.ServerOptions{Instructions: instructions, GetSessionID: newSessionID, Capabilities: &mcp.ServerCapabilities{}})
	s.addTools(srv)
	s.addResources(srv)
	srv.AddReceivingMiddleware(s.listResources, s.countSessions)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		SessionTimeout: cfg.SessionTimeout, MaxRequestBodyBytes: l.RequestBytes, Logger: cfg.Logger,
		// Every request carries an API key, so a page that rebinds a name to the
		// loopback address gains nothing; and the API may sit behind a local proxy.
		DisableLocalhostProtection: true,
	})
	// The SDK binds each session to the tenant (TokenInfo.UserID) that opened it: a
	// session id presented with another tenant's key is refused.
	return &Endpoint{s: s, Handler: auth.RequireBearerToken(func(_ context.Context, key string, _ *http.Request) (*auth.TokenInfo, error) {
		tenant, ok := cfg.Tenant(key)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: tenant}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(s.admitSessions(h))}
}

const instructions = `codeinterp runs code in a sandbox that keeps its state: variables, imports and files persist from one code_interpreter call to the next within this session, like cells of a notebook. Python has numpy, pandas and matplotlib; figures come back as images, and files written under outputs/ come back as download links. The working directory is the workspace: put input files there with the files argument or upload_file, inspect it with list_files and read_file.`

// newSessionID names a session, and the session's thread: 128 random bits.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "mcp-" + hex.EncodeToString(b[:])
}

// tenantOf returns the tenant that the request's API key belongs to (the bearer
// middleware put it in the request's token info).
func tenantOf(extra *mcp.RequestExtra) (string, error) {
	if extra == nil || extra.TokenInfo == nil || extra.TokenInfo.UserID == "" {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "unauthenticated: send Authorization: Bearer <API key>"}
	}
	return extra.TokenInfo.UserID, nil
}

// target returns the tenant a tool call acts for and the thread it acts on: the one
// it names, or its session's.
func target(req *mcp.CallToolRequest, given string) (tenant, thread string, err error) {
	if tenant, err = tenantOf(req.Extra); err != nil {
		return "", "", err
	}
	thread, err = threadOf(req, given)
	return tenant, thread, err
}

// threadOf returns the thread a call acts on: the one it names, or its session's.
func threadOf(req *mcp.CallToolRequest, given string) (string, error) {
	if given != "" {
		return given, nil
	}
	if id := req.Session.ID(); id != "" {
		return id, nil
	}
	return "", errors.New("invalid_argument: thread_id: this connection has no MCP session; name a thread")
}

// callError turns an error of the service into what a tool call returns: a failure
// the client can fix (a bad argument, a missing file, a quota) becomes a tool
// error the model reads; the service's own failure becomes a protocol error, logged.
func (s *server) callError(tool string, err error) error {
	var se *service.Error
	switch {
	case errors.As(err, &se):
		c := *se
		switch {
		case c.Field == "id": // the service's name of a thread in a path
			c.Field = "thread_id"
		case c.Field == "path" && tool == "upload_file":
			c.Field = "name"
		case c.Field == "timeout_ms":
			c.Field, c.Message = "timeout_s", "is out of range: "+c.Message+" (milliseconds)"
		}
		return errors.New(c.Error())
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case service.Outage(err) != nil:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: service.Outage(err).Message}
	}
	// The error's words may name internal hosts and stores: logged under a reference,
	// which is all the client is told.
	ref := jobs.ErrorRefPrefix.New()
	s.log.Error("mcp tool failed", "tool", tool, "ref", ref, "err", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error (reference " + ref + "); the operator's logs have the details"}
}
