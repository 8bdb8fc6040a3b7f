package app

import (
	"cmp"
	"context"
	"time"

	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/internal/worker"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/egressreg"
	"github.com/codeinterp/codeinterp/jobs/webhook"
	"github.com/codeinterp/codeinterp/sandbox"
)

// WorkerOptions are knobs tests turn; the zero value is production's.
type WorkerOptions struct {
	ID         string               // overrides the configured worker id: several workers in one process
	Linger     time.Duration        // how long a blocking wait lasts; default 30 s
	RetryDelay asynq.RetryDelayFunc // default worker.RetryDelay
}

// Worker is a wired worker: the thread runner and the asynq server of one-offs and
// webhook deliveries.
type Worker struct {
	Runner *worker.Runner
	srv    *asynq.Server
	mux    *asynq.ServeMux
	// hookSrv delivers webhooks, from a queue of their own.
	hookSrv *asynq.Server
	hookMux *asynq.ServeMux
}

// Worker builds a worker running sandboxes on rt. It does no I/O; call Start.
func (a *App) Worker(rt sandbox.Runtime, opt WorkerOptions) *Worker {
	cfg := a.Config
	cfg.WorkerID = cmp.Or(opt.ID, cfg.WorkerID)
	hooks, _ := cfg.Webhooks()           // validated by config.Load
	profiles, _ := cfg.SandboxProfiles() // validated by config.Load
	manifests, _ := rt.(worker.ManifestReader)
	if j := a.journal(cfg.WorkerID); j != nil {
		rt = j.Runtime(rt)
	}
	var egressRegistry worker.EgressRegistry // none without a proxy: egress executions fail clearly
	if cfg.EgressProxy != "" {
		egressRegistry = egressreg.New(a.Redis, egressreg.Config{Prefix: cfg.KeyPrefix})
	}
	runner := worker.NewRunner(worker.Config{
		Records: a.Records, Threads: a.Threads, Artifacts: a.Store,
		Skills: a.SkillStore, SkillCache: worker.SkillCacheConfig{Dir: cfg.SkillCacheDir, MaxBytes: cfg.SkillCacheBytes},
		Runtime: rt, Limits: cfg.Limits(), Profiles: profiles, Manifests: manifests, WarmPool: cfg.WarmPool,
		OneOffPool: cfg.OneOffPool, Recycle: cfg.OneOffRecycle, RecycleIdle: cfg.OneOffRecycleIdle,
		RecyclePerTenant: cfg.OneOffRecyclePerTenant, RecycleMax: cfg.OneOffRecycleMax,
		MaxSandboxes: cfg.MaxSandboxes, MaxPerTenant: cfg.MaxSandboxesPerTenant,
		Worker: cfg.WorkerID, Concurrency: cfg.Concurrency, OneOffShare: cfg.OneOffShare, Stored: a.Quotas, MaxLog: cfg.MaxLogBytes, Logger: a.Logger,
		// Activity is refreshed while code runs, often enough that no idle pause
		// lands during a long run.
		ActiveEvery: min(10*time.Second, cfg.IdlePause/3),
		Budgets: worker.Budgets{
			MaxResults: cfg.MaxResults, MaxResultBytes: cfg.MaxResultBytes, StreamBytes: cfg.StreamBytes,
			CollectBytes: cfg.CollectBytes, MaxRecordBytes: cfg.MaxRecordBytes,
		},
		Linger: opt.Linger,
		Egress: egressRegistry,
	})
	retry := opt.RetryDelay
	if retry == nil {
		retry = worker.RetryDelay
	}
	srv := asynq.NewServerFromRedisClient(a.Redis, asynq.Config{
		Concurrency:       cfg.Concurrency,
		Queues:            map[string]int{jobs.QueueTasks: 1},
		TaskCheckInterval: cfg.TaskCheckInterval,
		ShutdownTimeout:   cfg.ShutdownTimeout,
		RetryDelayFunc:    retry,
		IsFailure:         worker.IsFailure,
		Logger:            worker.AsynqLogger{L: a.Logger},
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(jobs.TypeRun, runner.ProcessOneOff)
	// Webhooks have a queue and a server of their own: receivers that are slow or
	// never answer hold only these slots, never the ones one-offs run in. Deliveries
	// are not latency-critical, so their queue is polled once a second.
	hookSrv := asynq.NewServerFromRedisClient(a.Redis, asynq.Config{
		Concurrency:       cfg.WebhookConcurrency,
		Queues:            map[string]int{jobs.QueueWebhooks: 1},
		TaskCheckInterval: max(time.Second, cfg.TaskCheckInterval),
		ShutdownTimeout:   cfg.WebhookTimeout + time.Second,
		RetryDelayFunc:    retry,
		Logger:            worker.AsynqLogger{L: a.Logger},
	})
	hookMux := asynq.NewServeMux()
	hookMux.Handle(jobs.TypeWebhook, &webhook.Deliverer{
		Records: a.Records, Presigner: a.Store, Secrets: hooks.Secrets,
		Client: hooks.Guard.Client(cfg.WebhookTimeout), Logger: a.Logger,
		TenantConcurrency: cfg.WebhookTenantConcurrency,
	})
	return &Worker{Runner: runner, srv: srv, mux: mux, hookSrv: hookSrv, hookMux: hookMux}
}

// Start starts the thread runner and the task server.
func (w *Worker) Start(ctx context.Context) error {
	if err := w.Runner.Start(ctx); err != nil {
		return err
	}
	if err := w.hookSrv.Start(w.hookMux); err != nil {
		return err
	}
	return w.srv.Start(w.mux)
}

// Shutdown stops taking tasks, lets running ones finish for up to the configured
// shutdown timeout (one-offs) or until ctx ends (threads), then stops.
func (w *Worker) Shutdown(ctx context.Context) {
	w.srv.Shutdown()
	w.hookSrv.Shutdown()
	w.Runner.Shutdown(ctx)
}
