package jobs

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// HeartbeatTTL is how long a worker counts as live after its last heartbeat.
const HeartbeatTTL = 15 * time.Second

// Workers is the registry of live workers: a sorted set of worker ids scored by the
// time of their last heartbeat. A worker beats only while its Docker engine answers,
// so "live" means "can run code".
type Workers struct {
	rdb redis.UniversalClient
	key string
}

// NewWorkers returns the registry under prefix.
func NewWorkers(rdb redis.UniversalClient, prefix string) *Workers {
	if prefix == "" {
		prefix = "ci:"
	}
	return &Workers{rdb: rdb, key: prefix + "workers"}
}

// Beat records that worker id is live at now.
func (w *Workers) Beat(ctx context.Context, id string, now time.Time) error {
	if err := w.rdb.ZAdd(ctx, w.key, redis.Z{Score: float64(now.UnixMilli()), Member: id}).Err(); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

// Leave removes worker id, on a clean shutdown.
func (w *Workers) Leave(ctx context.Context, id string) error {
	return w.rdb.ZRem(ctx, w.key, id).Err()
}

// Live returns the workers that beat within HeartbeatTTL of now.
func (w *Workers) Live(ctx context.Context, now time.Time) ([]string, error) {
	min := strconv.FormatInt(now.Add(-HeartbeatTTL).UnixMilli(), 10)
	ids, err := w.rdb.ZRangeByScore(ctx, w.key, &redis.ZRangeBy{Min: min, Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	return ids, nil
}
