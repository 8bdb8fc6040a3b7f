// Command api serves codeinterp's HTTP API. Configuration: CODEINTERP_* environment
// variables, listed in README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/codeinterp/codeinterp/internal/app"
	"github.com/codeinterp/codeinterp/internal/config"
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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	x, err := a.API(ctx)
	if err != nil {
		return err
	}
	defer x.Close()
	hs := x.HTTPServer(cfg.APIAddr)
	// The metrics name every tenant: they have a listener of their own, never the API's.
	ms := x.MetricsServer(cfg.MetricsAddr)
	errc := make(chan error, 2)
	go func() { errc <- hs.ListenAndServe() }()
	go func() { errc <- ms.ListenAndServe() }()
	defer ms.Close()
	log.Info("api listening", "addr", cfg.APIAddr, "metrics", cfg.MetricsAddr)
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
