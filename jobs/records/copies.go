package records

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Copies of workspace files made for a reader (a thread's file got over the API) are
// wanted only while their download link lives, not for the retention: each is noted
// here, by the prefix it is stored under and when it was made, before it is stored,
// and the janitor deletes the ones whose links have expired (CopiesBefore).

// NoteCopy notes a copy about to be stored under prefix at time at.
func (s *Store) NoteCopy(ctx context.Context, prefix string, at time.Time) error {
	if err := s.rdb.ZAdd(ctx, s.copiesKey(), redis.Z{Score: float64(at.UnixMilli()), Member: prefix}).Err(); err != nil {
		return fmt.Errorf("note copy %s: %w", prefix, err)
	}
	return nil
}

// CopiesBefore returns up to n prefixes of copies made before t, oldest first.
func (s *Store) CopiesBefore(ctx context.Context, t time.Time, n int64) ([]string, error) {
	due, err := s.rdb.ZRangeByScore(ctx, s.copiesKey(), &redis.ZRangeBy{
		Min: "-inf", Max: "(" + strconv.FormatInt(t.UnixMilli(), 10), Count: n,
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("copies due: %w", err)
	}
	return due, nil
}

// ForgetCopies drops deleted copies from the notes.
func (s *Store) ForgetCopies(ctx context.Context, prefixes ...string) error {
	if len(prefixes) == 0 {
		return nil
	}
	members := make([]any, len(prefixes))
	for i, p := range prefixes {
		members[i] = p
	}
	if err := s.rdb.ZRem(ctx, s.copiesKey(), members...).Err(); err != nil {
		return fmt.Errorf("forget copies: %w", err)
	}
	return nil
}
