package quota

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// What workers store for a tenant — output files, full logs, copies of thread files
// made for readers — is bounded per UTC day (StoredBytesDay). Unlike uploads, the
// size is known only as files are read out of a sandbox, so the quota is checked
// before a run's files are stored and counted after: one run may pass it by at most
// what one run may store (its collect budget); every later run stores nothing more
// that day. Artifacts live for the retention, so this also bounds what a tenant holds.

// CheckStored returns an *Exceeded if the tenant has stored its bytes of today.
func (c *Counters) CheckStored(ctx context.Context, tenant string) error {
	l := c.Limits(tenant)
	if l.StoredBytesDay <= 0 {
		return nil
	}
	n, err := c.StoredToday(ctx, tenant)
	if err != nil {
		return err
	}
	if n < l.StoredBytesDay {
		return nil
	}
	now := c.now().UTC()
	midnight := now.Truncate(24 * time.Hour).Add(24 * time.Hour)
	return &Exceeded{Quota: "stored_bytes_day", Limit: float64(l.StoredBytesDay), RetryAfter: int(math.Ceil(midnight.Sub(now).Seconds()))}
}

// AddStored counts n bytes stored for the tenant today.
func (c *Counters) AddStored(ctx context.Context, tenant string, n int64) error {
	if c == nil || n <= 0 {
		return nil
	}
	key := c.storedKey(tenant, c.now().UTC())
	pipe := c.rdb.TxPipeline()
	pipe.IncrBy(ctx, key, n)
	pipe.Expire(ctx, key, 48*time.Hour)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("count stored bytes of %s: %w", tenant, err)
	}
	return nil
}

// StoredToday returns the bytes counted as stored for the tenant today.
func (c *Counters) StoredToday(ctx context.Context, tenant string) (int64, error) {
	if c == nil {
		return 0, nil
	}
	n, err := c.rdb.Get(ctx, c.storedKey(tenant, c.now().UTC())).Int64()
	if err == redis.Nil {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("stored bytes of %s: %w", tenant, err)
	}
	return n, nil
}
