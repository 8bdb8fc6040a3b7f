package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/codeinterp/codeinterp/internal/api"
	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/internal/mcp"
	"github.com/codeinterp/codeinterp/internal/service"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/prometheus/client_golang/prometheus"
)

// API is a wired HTTP API: its handler, and the subscription long-polls wait on.
type API struct {
	Handler http.Handler
	// Metrics serves /metrics, on a listener of its own (CODEINTERP_METRICS_ADDR):
	// the metrics name every tenant, so the API's port does not serve them.
	Metrics http.Handler
	Service *service.Service
	waiter  *records.Waiter
	cfg     config.Config
}

// API builds the HTTP API and starts its end-of-execution subscription. It does not
// wait for Redis: while Redis is down or loading its data the API already serves,
// answering 503 with Retry-After to the requests that need Redis and saying why on
// /readyz, and the subscription connects as soon as Redis answers. Call Close when
// done.
func (a *App) API(ctx context.Context) (*API, error) {
	cfg := a.Config
	keysFile := ""
	if cfg.APIKeysFile != "" {
		b, err := os.ReadFile(cfg.APIKeysFile)
		if err != nil {
			return nil, fmt.Errorf("CODEINTERP_API_KEYS_FILE: %w", err)
		}
		keysFile = string(b)
	}
	keys, err := api.ParseKeys(cfg.APIKeys, keysFile)
	if err != nil {
		return nil, err
	}
	hooks, err := cfg.Webhooks()
	if err != nil {
		return nil, err
	}
	fetches, err := cfg.Fetches()
	if err != nil {
		return nil, err
	}
	profiles, err := cfg.SandboxProfiles()
	if err != nil {
		return nil, err
	}
	egressPolicies, err := cfg.EgressPolicies()
	if err != nil {
		return nil, err
	}
	waiter := a.Records.NewWaiter()
	if err := waiter.Start(ctx); err != nil {
		return nil, err
	}
	svc := service.New(service.Config{
		Records: a.Records, Threads: a.Threads, Waiter: waiter, Queue: jobs.NewEnqueuer(a.Tasks), Store: a.Store, Quotas: a.Quotas,
		WebhookTenants: tenantSet(hooks.Secrets), WebhookGuard: hooks.Guard, Logger: a.Logger, Profiles: profiles,
		Egress: egressPolicies,
		Fetch:  service.Fetch{Guard: fetches, MaxFiles: cfg.FetchMaxFiles, Timeout: cfg.FetchTimeout},
		// One budget for the bodies the API reads and the files it fetches; the largest
		// single body always fits.
		Bodies: service.NewBudget(max(cfg.InflightBytes, cfg.MaxRequestBytes, cfg.WorkspaceMB<<20)),
		Skills: a.Skills, SkillStore: a.SkillStore,
		SkillLimits: service.SkillLimits{
			MaxBytes: cfg.SkillMaxBytes, MaxUnpacked: cfg.SkillMaxUnpacked, MaxFiles: cfg.SkillMaxFiles,
			PerExecution: cfg.SkillsPerExecution,
		},
		Limits: service.Limits{
			MaxUploadBytes: cfg.WorkspaceMB << 20, WorkspaceBytes: cfg.WorkspaceMB << 20,
			DefaultTimeoutMS: cfg.TimeoutMS, MaxTimeoutMS: cfg.MaxTimeoutMS,
		},
	})
	endpoint := mcp.New(mcp.Config{
		Service: svc, Tenant: keys.Tenant, Logger: a.Logger, SessionTimeout: cfg.MCPSessionTimeout,
		Sessions: func(t string) int { return a.Quotas.Limits(t).MCPSessions },
		Limits: mcp.Limits{
			TextBytes: cfg.MCPTextBytes, ImageSide: cfg.MCPImageSide, ImageBytes: cfg.MCPImageBytes,
			ImagePixels: cfg.MCPImagePixels, Images: cfg.MCPImages,
			FileBytes: cfg.WorkspaceMB << 20, RequestBytes: cfg.MaxRequestBytes,
		},
	})
	srv := api.New(api.Config{
		Service: svc, Keys: keys, MCP: endpoint, Logger: a.Logger, Collectors: []prometheus.Collector{a.redisMemory(), endpoint},
		Limits: api.Limits{
			MaxRequestBytes: cfg.MaxRequestBytes, MaxUploadBytes: cfg.WorkspaceMB << 20,
			Streams: cfg.StreamPool, TenantStreams: func(t string) int { return a.Quotas.Limits(t).Streams },
			MaxSkillBytes: cfg.SkillMaxBytes,
		},
		Ready: []api.Check{
			{Name: "redis", Check: a.redisReady, Public: true},
			{Name: "storage", Check: a.Store.Ping},
			{Name: "workers", Public: true, Check: func(ctx context.Context) error {
				live, err := a.Threads.Ready(ctx)
				if err != nil {
					return errors.New("the worker registry does not answer")
				}
				if len(live) == 0 {
					return errors.New("no worker with a reachable Docker engine has sent a heartbeat")
				}
				return nil
			}},
		},
	})
	return &API{Handler: srv, Metrics: srv.Metrics(), Service: svc, waiter: waiter, cfg: cfg}, nil
}

// HTTPServer returns the API's HTTP server on addr, with the timeouts and header
// limit of the configuration. Long-lived routes (event streams, long-polls) clear the
// write timeout for themselves and keep their own deadlines.
func (x *API) HTTPServer(addr string) *http.Server {
	return &http.Server{
		Addr: addr, Handler: x.Handler,
		ReadHeaderTimeout: x.cfg.HTTPHeaderTimeout, ReadTimeout: x.cfg.HTTPReadTimeout,
		WriteTimeout: x.cfg.HTTPWriteTimeout, IdleTimeout: x.cfg.HTTPIdleTimeout,
		MaxHeaderBytes: x.cfg.HTTPHeaderBytes,
	}
}

// MetricsServer returns the server of /metrics on addr (and nothing else).
func (x *API) MetricsServer(addr string) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", x.Metrics)
	return &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: x.cfg.HTTPHeaderTimeout, IdleTimeout: x.cfg.HTTPIdleTimeout}
}

// Close ends the API's subscription.
func (x *API) Close() { x.waiter.Shutdown() }

func tenantSet(secrets map[string]string) map[string]bool {
	set := make(map[string]bool, len(secrets))
	for t := range secrets {
		set[t] = true
	}
	return set
}
