package records

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
)

// What the janitor needs of the records beyond what workers use.

// Activity is when a thread was last active.
type Activity struct {
	Thread     jobs.ThreadKey
	LastActive time.Time
}

// ActiveSince returns a page of the threads last active before cutoff, oldest first:
// up to limit of them, after skipping the first offset. The janitor pages through all
// of them (offset += limit until a page comes back short). A thread that becomes
// active meanwhile leaves the range and shifts the rest by one, so one may be missed
// until the next sweep, never for good.
func (s *Store) ActiveSince(ctx context.Context, cutoff time.Time, offset, limit int64) ([]Activity, error) {
	zs, err := s.rdb.ZRangeByScoreWithScores(ctx, s.activeKey(), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(cutoff.UnixMilli(), 10), Offset: offset, Count: limit,
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("list idle threads: %w", err)
	}
	out := make([]Activity, len(zs))
	for i, z := range zs {
		out[i] = Activity{Thread: jobs.ThreadKey(z.Member.(string)), LastActive: time.UnixMilli(int64(z.Score))}
	}
	return out, nil
}

// ActiveThreads returns every thread that has been active within the retention and
// may have a sandbox: a thread whose sandbox is gone (reaped, reclaimed) leaves the
// set until it is used again.
func (s *Store) ActiveThreads(ctx context.Context) ([]jobs.ThreadKey, error) {
	tks, err := s.rdb.ZRange(ctx, s.activeKey(), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("list active threads: %w", err)
	}
	out := make([]jobs.ThreadKey, len(tks))
	for i, tk := range tks {
		out[i] = jobs.ThreadKey(tk)
	}
	return out, nil
}

// Expire drops what the retention period has passed: threads from the activity and
// live sets, and execution ids from the listing indexes (the records themselves
// expire on their own). It returns how many entries it dropped.
func (s *Store) Expire(ctx context.Context, now time.Time) (int64, error) {
	cutoff := now.Add(-s.ttl)
	var dropped int64
	n, err := s.rdb.ZRemRangeByScore(ctx, s.activeKey(), "-inf", "("+strconv.FormatInt(cutoff.UnixMilli(), 10)).Result()
	if err != nil {
		return dropped, fmt.Errorf("expire activity: %w", err)
	}
	dropped += n
	// Listing indexes sort by id, and ids begin with their creation time.
	oldest := "(" + string(jobs.ExecutionPrefix) + strings.ToLower(ulid.MustNew(ulid.Timestamp(cutoff), zeroEntropy{}).String())
	byScore := map[string]bool{}
	for _, p := range s.scoredPatterns() {
		byScore[p] = true
	}
	for _, pattern := range append(s.indexPatterns(), s.scoredPatterns()...) {
		iter := s.rdb.Scan(ctx, 0, pattern, 500).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			var n int64
			var err error
			if byScore[pattern] {
				n, err = s.rdb.ZRemRangeByScore(ctx, key, "-inf", "("+strconv.FormatInt(cutoff.UnixMilli(), 10)).Result()
			} else {
				n, err = s.rdb.ZRemRangeByLex(ctx, key, "-", oldest).Result()
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
func (s *Store) TryLock(ctx context.Context, name string, ttl time.Duration) (bool, error) {
	return s.rdb.SetNX(ctx, s.lockKey(name), s.now().UnixMilli(), ttl).Result()
}

type zeroEntropy struct{}

func (zeroEntropy) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
