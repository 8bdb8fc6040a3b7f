package records

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// What the janitor needs of the tenants' active executions (ten:<tenant>:active, see
// keys.go): finding the ones queued or running for too long, and dropping entries
// whose record ended or expired without leaving the index.

// Stale is an execution in a tenant's active index since a cutoff or earlier.
type Stale struct {
	Tenant  string
	ID      string
	Created time.Time // its score: when the execution was created
}

// staleBatch is how many entries one ZSCAN step asks for.
const staleBatch = 200

// StaleActive calls f with every execution of every tenant's active index created at
// or before cutoff, until f returns an error. It walks each index with ZSCAN, in no
// particular order: an entry present for the whole walk is seen (at least) once
// whatever is added or removed meanwhile, f included, so no number of long-running
// executions can hide a stuck one. The cost is one step per staleBatch entries of
// every index, each bounded by the tenant's active quota.
func (s *Store) StaleActive(ctx context.Context, cutoff time.Time, f func(Stale) error) error {
	keys := s.rdb.Scan(ctx, 0, s.activePattern(), 500).Iterator()
	for keys.Next(ctx) {
		key := keys.Val()
		tenant, ok := s.activeTenant(key)
		if !ok {
			continue
		}
		if err := s.staleIn(ctx, key, tenant, cutoff.UnixMilli(), f); err != nil {
			return err
		}
	}
	if err := keys.Err(); err != nil {
		return fmt.Errorf("scan active executions: %w", err)
	}
	return nil
}

func (s *Store) staleIn(ctx context.Context, key, tenant string, cutoffMS int64, f func(Stale) error) error {
	var cursor uint64
	for {
		kv, next, err := s.rdb.ZScan(ctx, key, cursor, "", staleBatch).Result()
		if err != nil {
			return fmt.Errorf("scan %s: %w", key, err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			score, err := strconv.ParseFloat(kv[i+1], 64)
			if err != nil || int64(score) > cutoffMS {
				continue
			}
			if err := f(Stale{Tenant: tenant, ID: kv[i], Created: time.UnixMilli(int64(score))}); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// DropActive removes an execution from its tenant's active index: for a record that
// ended, or expired, without leaving it. An entry there counts against the tenant's
// active quota, so one left behind would hold a slot for good.
func (s *Store) DropActive(ctx context.Context, tenant, id string) error {
	if err := s.rdb.ZRem(ctx, s.activeIndex(tenant), id).Err(); err != nil {
		return fmt.Errorf("drop %s from the active executions: %w", id, err)
	}
	return nil
}
