package quota

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// Counters enforce the quotas shared by every API replica, in Redis.
type Counters struct {
	rdb    redis.UniversalClient
	prefix string
	table  Table
	now    func() time.Time
}

// Config configures [NewCounters].
type Config struct {
	Prefix string // namespaces every key; default "ci:"
	Table  Table
	Now    func() time.Time
}

// NewCounters returns the counters over rdb. It does no I/O.
func NewCounters(rdb redis.UniversalClient, cfg Config) *Counters {
	c := &Counters{rdb: rdb, prefix: cmp.Or(cfg.Prefix, "ci:"), table: cfg.Table, now: cfg.Now}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// Limits returns a tenant's quotas. A nil *Counters enforces none (unit tests).
func (c *Counters) Limits(tenant string) Limits {
	if c == nil {
		return Limits{}
	}
	return c.table.For(tenant)
}

var (
	//go:embed lua/bucket.lua
	bucketSrc string
	//go:embed lua/reserve.lua
	reserveSrc string

	bucketScript  = redis.NewScript(bucketSrc)
	reserveScript = redis.NewScript(reserveSrc)
)

// Submit takes one of the tenant's submissions per second, or returns an *Exceeded
// saying when to try again.
func (c *Counters) Submit(ctx context.Context, tenant string) error {
	l := c.Limits(tenant)
	if l.Rate <= 0 {
		return nil
	}
	burst := max(l.Burst, 1)
	res, err := bucketScript.Run(ctx, c.rdb, []string{c.bucketKey(tenant)}, l.Rate, burst, c.now().UnixMilli()).Int64Slice()
	if err != nil {
		return fmt.Errorf("submission quota of %s: %w", tenant, err)
	}
	if res[0] == 1 {
		return nil
	}
	return &Exceeded{Quota: "rate", Limit: l.Rate, RetryAfter: int(math.Ceil(float64(res[1]) / 1000))}
}

// Upload counts n bytes against the tenant's uploads of today (UTC), or returns an
// *Exceeded if they would pass the quota (and counts nothing).
func (c *Counters) Upload(ctx context.Context, tenant string, n int64) error {
	l := c.Limits(tenant)
	if l.UploadBytesDay <= 0 || n <= 0 {
		return nil
	}
	now := c.now().UTC()
	res, err := reserveScript.Run(ctx, c.rdb, []string{c.uploadKey(tenant, now)}, n, l.UploadBytesDay, int((48 * time.Hour).Seconds())).Int64Slice()
	if err != nil {
		return fmt.Errorf("upload quota of %s: %w", tenant, err)
	}
	if res[0] == 1 {
		return nil
	}
	midnight := now.Truncate(24 * time.Hour).Add(24 * time.Hour)
	return &Exceeded{Quota: "upload_bytes_day", Limit: float64(l.UploadBytesDay), RetryAfter: int(math.Ceil(midnight.Sub(now).Seconds()))}
}

// Refund takes back n bytes counted by Upload today, for a submission refused after.
func (c *Counters) Refund(ctx context.Context, tenant string, n int64) error {
	if c == nil || n <= 0 || c.Limits(tenant).UploadBytesDay <= 0 {
		return nil
	}
	return c.rdb.DecrBy(ctx, c.uploadKey(tenant, c.now().UTC()), n).Err()
}

// UploadedAll returns the bytes counted against each tenant's uploads of today, in
// one round trip (metrics read every tenant's at each scrape).
func (c *Counters) UploadedAll(ctx context.Context, tenants []string) (map[string]int64, error) {
	out := make(map[string]int64, len(tenants))
	if c == nil || len(tenants) == 0 {
		return out, nil
	}
	day := c.now().UTC()
	pipe := c.rdb.Pipeline()
	gets := make([]*redis.StringCmd, len(tenants))
	for i, t := range tenants {
		gets[i] = pipe.Get(ctx, c.uploadKey(t, day))
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("upload counters of %d tenants: %w", len(tenants), err)
	}
	for i, t := range tenants {
		out[t], _ = gets[i].Int64() // redis.Nil: nothing uploaded today
	}
	return out, nil
}

// Uploaded returns the bytes counted against the tenant's uploads of today.
func (c *Counters) Uploaded(ctx context.Context, tenant string) (int64, error) {
	if c == nil {
		return 0, nil
	}
	n, err := c.rdb.Get(ctx, c.uploadKey(tenant, c.now().UTC())).Int64()
	if err == redis.Nil {
		return 0, nil
	}
	return n, err
}
