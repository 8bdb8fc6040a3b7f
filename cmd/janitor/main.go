// Command janitor reclaims what executions leave behind, on a schedule: it asks
// owners to pause idle thread sandboxes and to snapshot and remove long-idle ones,
// removes the sandboxes of dead workers on its host (keeping a snapshot of a thread's
// workspace), and deletes expired artifacts and index entries. Run one per Docker
// host; several may run at once. Configuration: CODEINTERP_* variables (README.md).
//
//	janitor          sweep every CODEINTERP_JANITOR_INTERVAL until stopped
//	janitor -once    sweep once and exit (for cron)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/codeinterp/codeinterp/internal/app"
	"github.com/codeinterp/codeinterp/internal/app/dockerhost"
	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/internal/janitor"
)

func main() {
	once := flag.Bool("once", false, "sweep once and exit")
	flag.Parse()
	if err := run(*once); err != nil {
		fmt.Fprintln(os.Stderr, "janitor:", err)
		os.Exit(1)
	}
}

func run(once bool) error {
	cfg, err := config.Load(nil)
	if err != nil {
		return err
	}
	log := cfg.Logger().With("janitor", cfg.WorkerID)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	host, closeDocker, err := dockerhost.Open(cfg)
	if err != nil {
		return err
	}
	defer closeDocker()
	j := a.Janitor(host)
	if once {
		j.Sweep(ctx)
		return nil
	}
	srv := &http.Server{Addr: cfg.MetricsAddr, Handler: janitor.MetricsHandler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	log.Info("janitor started", "interval", cfg.JanitorInterval, "idle_pause", cfg.IdlePause, "idle_reap", cfg.IdleReap)
	j.Run(ctx, cfg.JanitorInterval)
	return srv.Shutdown(context.Background())
}
