// Command api serves codeinterp's HTTP API. Configuration: CODEINTERP_* environment
// variables, listed in README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/internal/api"
	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/jobs"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.Load(nil)
	if err != nil {
		return err
	}
	log := cfg.Logger()
	keysFile := ""
	if cfg.APIKeysFile != "" {
		b, err := os.ReadFile(cfg.APIKeysFile)
		if err != nil {
			return fmt.Errorf("CODEINTERP_API_KEYS_FILE: %w", err)
		}
		keysFile = string(b)
	}
	keys, err := api.ParseKeys(cfg.APIKeys, keysFile)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	svc, err := cfg.Connect(ctx)
	if err != nil {
		return err
	}
	defer svc.Close()
	rdb, store := svc.Redis, svc.Store
	queue := asynq.NewClientFromRedisClient(rdb)
	defer queue.Close()
	hooks, _ := cfg.Webhooks() // validated by Load
	enqueuer := jobs.NewEnqueuer(queue)
	rc := cfg.Records()
	rc.OnEnd = jobs.WebhookOnEnd(enqueuer, log)
	records := jobs.NewRecords(rdb, rc)
	waiter := records.NewWaiter()
	if err := config.WaitFor(ctx, "redis", waiter.Start); err != nil {
		return err
	}
	defer waiter.Shutdown()
	workers := records.Workers()

	srv := api.New(api.Config{
		Records: records, Waiter: waiter, Queue: enqueuer, Store: store, Keys: keys, Logger: log,
		WebhookTenants: tenantSet(hooks.Secrets), WebhookGuard: hooks.Guard,
		Limits: api.Limits{
			MaxRequestBytes: cfg.MaxRequestBytes, MaxUploadBytes: cfg.WorkspaceMB << 20, WorkspaceBytes: cfg.WorkspaceMB << 20,
			DefaultTimeoutMS: cfg.TimeoutMS, MaxTimeoutMS: cfg.MaxTimeoutMS,
		},
		Ready: []api.Check{
			{Name: "redis", Check: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
			{Name: "storage", Check: store.Ping},
			{Name: "workers", Check: func(ctx context.Context) error {
				live, err := workers.Ready(ctx, time.Now())
				if err == nil && len(live) == 0 {
					err = errors.New("no worker with a reachable Docker engine has sent a heartbeat")
				}
				return err
			}},
		},
	})
	hs := &http.Server{Addr: cfg.APIAddr, Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	log.Info("api listening", "addr", cfg.APIAddr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("api shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 65*time.Second) // lets long-polls answer
	defer cancel()
	return hs.Shutdown(sctx)
}

func tenantSet(secrets map[string]string) map[string]bool {
	set := make(map[string]bool, len(secrets))
	for t := range secrets {
		set[t] = true
	}
	return set
}
