package jobs

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"
)

// What the janitor needs of the records beyond what workers use.

// ActiveSince returns the threads last active before cutoff, oldest first, with the
// time they were last active.
func (r *Records) ActiveSince(ctx context.Context, cutoff time.Time, limit int64) ([]redis.Z, error) {
	zs, err := r.rdb.ZRangeByScoreWithScores(ctx, r.activeKey(), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(cutoff.UnixMilli(), 10), Count: limit,
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("list idle threads: %w", err)
	}
	return zs, nil
}

// ActiveThreads returns every thread that has been active within the retention.
func (r *Records) ActiveThreads(ctx context.Context) ([]string, error) {
	return r.rdb.ZRange(ctx, r.activeKey(), 0, -1).Result()
}

// SetThreadSandbox records the state of a thread's sandbox after the janitor acted
// on it: "none" with a snapshot stored, after it snapshotted and removed an orphan.
func (r *Records) SetThreadSandbox(ctx context.Context, tk, state string, snapshot bool) error {
	fields := []any{"sandbox", state}
	if snapshot {
		fields = append(fields, "snapshot", "1")
	}
	pipe := r.rdb.TxPipeline()
	pipe.HSet(ctx, r.thread(tk, "meta"), fields...)
	pipe.Expire(ctx, r.thread(tk, "meta"), r.ttl)
	if state == "none" {
		tenant, _ := SplitThreadKey(tk)
		pipe.ZRem(ctx, r.liveKey(tenant), tk)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Expire drops what the retention period has passed: threads from the activity and
// live sets, and execution ids from the listing indexes (the records themselves
// expire on their own). It returns how many entries it dropped.
func (r *Records) Expire(ctx context.Context, now time.Time) (int64, error) {
	cutoff := now.Add(-r.ttl)
	var dropped int64
	n, err := r.rdb.ZRemRangeByScore(ctx, r.activeKey(), "-inf", "("+strconv.FormatInt(cutoff.UnixMilli(), 10)).Result()
	if err != nil {
		return dropped, fmt.Errorf("expire activity: %w", err)
	}
	dropped += n
	// Listing indexes sort by id, and ids begin with their creation time.
	oldest := "(ex_" + strings.ToLower(ulid.MustNew(ulid.Timestamp(cutoff), zeroEntropy{}).String())
	for _, pattern := range []string{r.prefix + "ten:*:ex", r.prefix + "t:*:ex", r.prefix + "live:*", r.prefix + "ten:*:threads"} {
		iter := r.rdb.Scan(ctx, 0, pattern, 500).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			var n int64
			var err error
			if strings.HasPrefix(key, r.prefix+"live:") || strings.HasSuffix(key, ":threads") {
				n, err = r.rdb.ZRemRangeByScore(ctx, key, "-inf", "("+strconv.FormatInt(cutoff.UnixMilli(), 10)).Result()
			} else {
				n, err = r.rdb.ZRemRangeByLex(ctx, key, "-", oldest).Result()
			}
			if err != nil {
				return dropped, fmt.Errorf("expire %s: %w", key, err)
			}
			dropped += n
		}
		if err := iter.Err(); err != nil {
			return dropped, fmt.Errorf("scan %s: %w", pattern, err)
		}
	}
	return dropped, nil
}

// TryLock takes a named lock for ttl if nobody holds it: for sweeps that should run
// once per period across several janitors.
func (r *Records) TryLock(ctx context.Context, name string, ttl time.Duration) (bool, error) {
	return r.rdb.SetNX(ctx, r.prefix+"lock:"+name, time.Now().UnixMilli(), ttl).Result()
}

type zeroEntropy struct{}

func (zeroEntropy) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
