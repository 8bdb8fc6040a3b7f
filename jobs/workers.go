package jobs

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultHeartbeatTTL is how long a worker counts as alive after its last heartbeat.
const DefaultHeartbeatTTL = 15 * time.Second

// Workers is the registry of workers: sorted sets of worker ids scored by the time of
// their last heartbeat. A worker that stops beating is dead, and its threads go to
// others; a worker is ready while its Docker engine answers.
type Workers struct{ r *Records }

// Workers returns the worker registry.
func (r *Records) Workers() *Workers { return &Workers{r: r} }

func (r *Records) workersKey() string       { return r.prefix + "workers" }
func (r *Records) readyKey() string         { return r.prefix + "workers:ready" }
func (r *Records) ownedKey(w string) string { return r.prefix + "owned:" + w }
func (r *Records) unownedKey() string       { return r.prefix + "unowned" }
func (r *Records) offersKey() string        { return r.prefix + "offers" }

// HeartbeatTTL returns how long a silent worker counts as alive.
func (w *Workers) HeartbeatTTL() time.Duration { return w.r.beatTTL }

// Beat records that worker id is alive at now, and whether it is ready to run code.
func (w *Workers) Beat(ctx context.Context, id string, now time.Time, ready bool) error {
	score := redis.Z{Score: float64(now.UnixMilli()), Member: id}
	pipe := w.r.rdb.TxPipeline()
	pipe.ZAdd(ctx, w.r.workersKey(), score)
	if ready {
		pipe.ZAdd(ctx, w.r.readyKey(), score)
	} else {
		pipe.ZRem(ctx, w.r.readyKey(), id)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

// Ready returns the workers that beat within the TTL of now while their Docker
// engine answered.
func (w *Workers) Ready(ctx context.Context, now time.Time) ([]string, error) {
	return w.since(ctx, w.r.readyKey(), now)
}

// Alive returns the workers that beat within the TTL of now.
func (w *Workers) Alive(ctx context.Context, now time.Time) ([]string, error) {
	return w.since(ctx, w.r.workersKey(), now)
}

func (w *Workers) since(ctx context.Context, key string, now time.Time) ([]string, error) {
	min := strconv.FormatInt(now.Add(-w.r.beatTTL).UnixMilli(), 10)
	ids, err := w.r.rdb.ZRangeByScore(ctx, key, &redis.ZRangeBy{Min: min, Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	return ids, nil
}

// Dead returns the workers whose heartbeat stopped more than the TTL before now.
func (w *Workers) Dead(ctx context.Context, now time.Time) ([]string, error) {
	max := "(" + strconv.FormatInt(now.Add(-w.r.beatTTL).UnixMilli(), 10)
	ids, err := w.r.rdb.ZRangeByScore(ctx, w.r.workersKey(), &redis.ZRangeBy{Min: "-inf", Max: max, Count: 100}).Result()
	if err != nil {
		return nil, fmt.Errorf("list dead workers: %w", err)
	}
	return ids, nil
}

// leave removes worker id from the registry, on a clean shutdown.
func (w *Workers) leave(ctx context.Context, id string) error {
	pipe := w.r.rdb.TxPipeline()
	pipe.ZRem(ctx, w.r.workersKey(), id)
	pipe.ZRem(ctx, w.r.readyKey(), id)
	_, err := pipe.Exec(ctx)
	return err
}
