// Command worker runs executions: it takes tasks from Redis (asynq), serves the
// threads it owns in warm Docker sandboxes and stores what code produced in S3.
// Configuration: CODEINTERP_* environment variables, listed in README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/codeinterp/codeinterp/internal/app"
	"github.com/codeinterp/codeinterp/internal/app/dockerhost"
	"github.com/codeinterp/codeinterp/internal/config"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.Load(nil)
	if err != nil {
		return err
	}
	log := cfg.Logger().With("worker", cfg.WorkerID)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	rt, closeDocker, err := dockerhost.Open(cfg)
	if err != nil {
		return err
	}
	defer closeDocker()
	if err := app.WaitFor(ctx, "docker", rt.Ping); err != nil {
		return dockerhost.Explain(err)
	}
	w := a.Worker(rt, app.WorkerOptions{})
	if err := w.Start(ctx); err != nil {
		return err
	}
	log.Info("worker started", "concurrency", cfg.Concurrency)
	<-ctx.Done()
	log.Info("worker shutting down; letting running executions finish", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	w.Shutdown(sctx)
	return nil
}
