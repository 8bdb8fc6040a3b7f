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

	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/internal/worker"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
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
	svc, err := cfg.Connect(ctx)
	if err != nil {
		return err
	}
	defer svc.Close()
	rdb, store := svc.Redis, svc.Store
	docker, err := config.Docker()
	if err != nil {
		return err
	}
	defer docker.Close()
	runtime := sandbox.New(docker, cfg.Sandbox())
	if err := config.WaitFor(ctx, "docker", runtime.Ping); err != nil {
		return err
	}

	queue := asynq.NewClientFromRedisClient(rdb)
	defer queue.Close()
	hooks, _ := cfg.Webhooks() // validated by Load
	rc := cfg.Records()
	rc.OnEnd = jobs.WebhookOnEnd(jobs.NewEnqueuer(queue), log)
	records := jobs.NewRecords(rdb, rc)
	runner := jobs.NewRunner(jobs.RunnerConfig{
		Records: records, Artifacts: store,
		Runtime: worker.Runtime{D: runtime}, Limits: cfg.Limits(), WarmPool: cfg.WarmPool,
		MaxSandboxes: cfg.MaxSandboxes, MaxPerTenant: cfg.MaxSandboxesPerTenant,
		Worker: cfg.WorkerID, Concurrency: cfg.Concurrency, MaxLog: cfg.MaxLogBytes, Logger: log,
	})
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency:       cfg.Concurrency,
		Queues:            map[string]int{jobs.QueueTasks: 1},
		TaskCheckInterval: cfg.TaskCheckInterval,
		ShutdownTimeout:   cfg.ShutdownTimeout,
		RetryDelayFunc:    jobs.RetryDelay,
		Logger:            worker.AsynqLogger{L: log},
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(jobs.TypeRun, runner.ProcessOneOff)
	mux.Handle(jobs.TypeWebhook, &jobs.Webhooks{
		Records: records, Presigner: store, Secrets: hooks.Secrets,
		Client: hooks.Guard.Client(cfg.WebhookTimeout), Logger: log,
	})

	if err := runner.Start(ctx); err != nil {
		return err
	}
	if err := srv.Start(mux); err != nil {
		return err
	}
	log.Info("worker started", "concurrency", cfg.Concurrency)
	<-ctx.Done()
	log.Info("worker shutting down; letting running executions finish", "timeout", cfg.ShutdownTimeout)
	srv.Shutdown()
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	runner.Shutdown(sctx)
	return nil
}
