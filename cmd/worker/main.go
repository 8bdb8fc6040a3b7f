// Command worker runs executions: it takes tasks from Redis (asynq), runs the code in
// Docker sandboxes and stores what it produced in S3. Configuration: CODEINTERP_*
// environment variables, listed in README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/docker/docker/client"
	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/internal/worker"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/storage"
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
	rdb, err := cfg.Redis()
	if err != nil {
		return err
	}
	defer rdb.Close()
	store, err := storage.New(cfg.Storage())
	if err != nil {
		return err
	}
	docker, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer docker.Close()
	runtime := sandbox.New(docker, cfg.Sandbox())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := config.WaitFor(ctx, "storage", store.Init); err != nil {
		return err
	}
	if err := config.WaitFor(ctx, "docker", runtime.Ping); err != nil {
		return err
	}

	runner := jobs.NewRunner(jobs.RunnerConfig{
		Records:   jobs.NewRecords(rdb, cfg.KeyPrefix, cfg.Retention),
		Artifacts: store,
		NewSandbox: func(ctx context.Context, spec sandbox.Spec) (jobs.Sandbox, error) {
			return runtime.Create(ctx, spec)
		},
		Limits: cfg.Limits(), Worker: cfg.WorkerID, MaxLog: cfg.MaxLogBytes, Logger: log,
	})
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency:       cfg.Concurrency,
		Queues:            map[string]int{jobs.QueueExecutions: 1},
		TaskCheckInterval: cfg.TaskCheckInterval,
		ShutdownTimeout:   cfg.ShutdownTimeout,
		RetryDelayFunc:    jobs.RetryDelay,
		Logger:            worker.AsynqLogger{L: log},
	})
	mux := asynq.NewServeMux()
	mux.Handle(jobs.TypeRun, runner)

	hb := &worker.Heartbeat{
		Workers: jobs.NewWorkers(rdb, cfg.KeyPrefix), ID: cfg.WorkerID, Ping: runtime.Ping,
		Interval: 5 * time.Second, Logger: log,
	}
	hb.Start(ctx)
	defer hb.Shutdown(context.Background())
	if err := srv.Start(mux); err != nil {
		return err
	}
	log.Info("worker started", "concurrency", cfg.Concurrency)
	<-ctx.Done()
	log.Info("worker shutting down; waiting for running executions", "timeout", cfg.ShutdownTimeout)
	srv.Shutdown()
	return nil
}
