package threadq

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The registry of workers: sorted sets of worker ids scored by the time of their last
// heartbeat. A worker that stops beating is dead, and its threads go to others; a
// worker is ready while its sandbox runtime answers.

// Beat records that worker id is alive now, and whether it is ready to run code.
func (q *Queue) Beat(ctx context.Context, id string, ready bool) error {
	score := redis.Z{Score: float64(q.now().UnixMilli()), Member: id}
	pipe := q.rdb.TxPipeline()
	pipe.ZAdd(ctx, q.workersKey(), score)
	if ready {
		pipe.ZAdd(ctx, q.readyKey(), score)
	} else {
		pipe.ZRem(ctx, q.readyKey(), id)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

// Ready returns the workers that beat within the TTL while their runtime answered.
func (q *Queue) Ready(ctx context.Context) ([]string, error) { return q.since(ctx, q.readyKey()) }

// Alive returns the workers that beat within the TTL.
func (q *Queue) Alive(ctx context.Context) ([]string, error) { return q.since(ctx, q.workersKey()) }

func (q *Queue) since(ctx context.Context, key string) ([]string, error) {
	min := strconv.FormatInt(q.now().Add(-q.beatTTL).UnixMilli(), 10)
	ids, err := q.rdb.ZRangeByScore(ctx, key, &redis.ZRangeBy{Min: min, Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	return ids, nil
}

// Dead returns (up to 100 of) the workers whose heartbeat stopped more than the TTL ago.
func (q *Queue) Dead(ctx context.Context) ([]string, error) {
	max := "(" + strconv.FormatInt(q.now().Add(-q.beatTTL).UnixMilli(), 10)
	ids, err := q.rdb.ZRangeByScore(ctx, q.workersKey(), &redis.ZRangeBy{Min: "-inf", Max: max, Count: 100}).Result()
	if err != nil {
		return nil, fmt.Errorf("list dead workers: %w", err)
	}
	return ids, nil
}

// Leave removes worker id from the registry, on a clean shutdown.
func (q *Queue) Leave(ctx context.Context, id string) error {
	pipe := q.rdb.TxPipeline()
	pipe.ZRem(ctx, q.workersKey(), id)
	pipe.ZRem(ctx, q.readyKey(), id)
	_, err := pipe.Exec(ctx)
	return err
}
