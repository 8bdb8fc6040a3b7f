// Command egress is the egress proxy (issue 23, under way): the one endpoint a
// sandbox with egress can reach. It serves HTTP forward requests and CONNECT tunnels
// for sandboxes, knowing each from its source address through the registry workers
// fill in Redis, allows what the sandbox's tenant (and execution) may reach, and
// writes every attempt to the execution's ledger. It needs Redis and nothing else.
// Configuration: CODEINTERP_* variables (README.md).
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

	"github.com/codeinterp/codeinterp/internal/app"
	"github.com/codeinterp/codeinterp/internal/config"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "egress:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.Load(nil)
	if err != nil {
		return err
	}
	log := cfg.Logger().With("service", "egress")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rdb, err := app.RedisOnly(cfg, log)
	if err != nil {
		return err
	}
	defer rdb.Close()
	proxy, err := app.EgressProxy(cfg, rdb, log)
	if err != nil {
		return err
	}
	// No write timeout: tunnels last as long as they carry bytes (the proxy's own
	// idle timeout ends quiet ones).
	srv := &http.Server{Addr: cfg.EgressListen, Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("egress proxy listening", "addr", cfg.EgressListen)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
