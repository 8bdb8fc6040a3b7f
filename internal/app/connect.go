// Package app is the one composition root of codeinterp: it opens the clients every
// binary needs (Redis, the artifact store, the task queue), builds the shared
// Redis-backed parts (the thread queue, the record store) and wires the API, the
// worker and the janitor from the configuration. cmd/api, cmd/worker, cmd/janitor and
// the end-to-end tests all build through it.
//
// A sandbox runtime is handed in, not opened here, so the API binary never links a
// container runtime's client: app/dockerhost opens the Docker one.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/jobs/quota"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/skills"
	"github.com/codeinterp/codeinterp/jobs/threadq"
	"github.com/codeinterp/codeinterp/jobs/webhook"
	"github.com/codeinterp/codeinterp/storage"
)

// App holds the connections and the shared parts of one process.
type App struct {
	Config  config.Config
	Logger  *slog.Logger
	Redis   *redis.Client
	Streams *redis.Client // blocking stream reads, on a pool of their own
	Store   *storage.Store
	Tasks   *asynq.Client // enqueues one-offs and webhook deliveries
	Threads *threadq.Queue
	Records *records.Store
	Quotas  *quota.Counters

	// SkillStore holds skills, in a bucket of their own without expiry; Skills is
	// their catalog.
	SkillStore *storage.Store
	Skills     *skills.Catalog
}

// Open connects to Redis and the artifact store and waits (up to a minute, as under
// compose they may still be starting) until the bucket is ready.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (*App, error) {
	opts, err := redisOptions(cfg, log)
	if err != nil {
		return nil, err
	}
	// Long-polls and blocking reads hold connections: keep room for them.
	opts.PoolSize = max(opts.PoolSize, 64)
	rdb := redis.NewClient(opts)
	sopts := *opts
	sopts.PoolSize = cfg.StreamPool
	streams := redis.NewClient(&sopts)
	store, err := storage.New(cfg.Storage())
	if err == nil {
		err = WaitFor(ctx, "storage", store.Init)
	}
	var skillStore *storage.Store
	if err == nil {
		skillStore, err = storage.New(cfg.SkillStorage())
	}
	if err == nil {
		err = WaitFor(ctx, "skill storage", skillStore.Init)
	}
	if err != nil {
		rdb.Close()
		streams.Close()
		return nil, err
	}
	a := &App{Config: cfg, Logger: log, Redis: rdb, Streams: streams, Store: store, Tasks: asynq.NewClientFromRedisClient(rdb)}
	a.SkillStore, a.Skills = skillStore, skills.New(rdb, skills.Config{Prefix: cfg.KeyPrefix, ThreadTTL: cfg.Retention, MaxVersions: cfg.SkillMaxVersions})
	quotas, err := cfg.Quotas()
	if err != nil {
		a.Close()
		return nil, err
	}
	a.Quotas = quota.NewCounters(rdb, quota.Config{Prefix: cfg.KeyPrefix, Table: quotas})
	a.Threads = threadq.New(rdb, threadq.Config{Prefix: cfg.KeyPrefix, HeartbeatTTL: cfg.HeartbeatTTL})
	a.Records = records.New(rdb, records.Config{
		Prefix: cfg.KeyPrefix, TTL: cfg.Retention, Threads: a.Threads,
		OnEnd: webhook.OnEnd(a.Tasks, log), Quotas: a.Quotas.Limits, Blocking: streams,
		// A delete, which must still happen after its caller stopped waiting, waits
		// behind one run at most: it cancels the rest.
		OpTTL: time.Duration(cfg.MaxTimeoutMS)*time.Millisecond + 5*time.Minute,
	})
	return a, nil
}

// redisOptions reads CODEINTERP_REDIS_URL; a canceled context ends a blocking read.
func redisOptions(cfg config.Config, log *slog.Logger) (*redis.Options, error) {
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, errors.New("CODEINTERP_REDIS_URL: not a redis:// URL") // its error may quote the password
	}
	opts.ContextTimeoutEnabled = true
	redisLogOnce.Do(func() { redis.SetLogger(redisLogger{log}) })
	return opts, nil
}

// Close closes what Open opened.
func (a *App) Close() {
	a.Tasks.Close()
	a.Streams.Close()
	a.Redis.Close()
}

// redisLogOnce sets go-redis's logger (a global) for the process, once.
var redisLogOnce sync.Once

// redisLogger passes go-redis's own messages (a dial that failed, a subscription
// reconnecting) to the process's log at debug level: while Redis is down it says so
// many times a second, and the API, the worker and the janitor already log what they
// could not do, at the level it deserves.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}
