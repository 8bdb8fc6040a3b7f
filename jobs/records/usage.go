package records

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
)

// Usage is what a tenant has used, for billing and for seeing who is near a limit.
// Counters grow for as long as the usage hash is kept (no expiry): an operator reads
// them as totals, or as rates through the Prometheus counters built on them.
type Usage struct {
	Executions   map[jobs.Status]int64 // ended executions by status
	CPUSeconds   float64               // CPU time of the code, in the sandbox
	WallSeconds  float64               // run time of executions, start to end
	BytesStored  int64                 // artifacts and inputs written to storage
	LiveSandbox  int64                 // threads with a sandbox now
	Active       int64                 // executions queued or running now
	UploadsToday int64                 // bytes counted against today's upload quota (see jobs/quota)
}

// Spent is one execution's contribution to its tenant's usage.
type Spent struct {
	Status      jobs.Status
	CPUSeconds  float64
	WallSeconds float64
	BytesStored int64
}

// AddUsage adds one ended execution's use to its tenant's counters.
func (s *Store) AddUsage(ctx context.Context, tenant string, sp Spent) error {
	key := s.usageKey(tenant)
	pipe := s.rdb.TxPipeline()
	if sp.Status != "" {
		pipe.HIncrBy(ctx, key, "executions:"+string(sp.Status), 1)
	}
	if sp.CPUSeconds > 0 {
		pipe.HIncrByFloat(ctx, key, "cpu_seconds", sp.CPUSeconds)
	}
	if sp.WallSeconds > 0 {
		pipe.HIncrByFloat(ctx, key, "wall_seconds", sp.WallSeconds)
	}
	if sp.BytesStored > 0 {
		pipe.HIncrBy(ctx, key, "bytes_stored", sp.BytesStored)
	}
	pipe.SAdd(ctx, s.usageTenantsKey(), tenant)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("record usage of %s: %w", tenant, err)
	}
	return nil
}

// Usage returns a tenant's usage counters and current use.
func (s *Store) Usage(ctx context.Context, tenant string) (Usage, error) {
	all, err := s.usageOf(ctx, []string{tenant})
	if err != nil {
		return Usage{}, err
	}
	return all[tenant], nil
}

// UsageAll returns the usage of every tenant with usage recorded, for metrics, in two
// round trips whatever the number of tenants: the set of tenants, then one pipeline.
func (s *Store) UsageAll(ctx context.Context) (map[string]Usage, error) {
	tenants, err := s.UsageTenants(ctx)
	if err != nil {
		return nil, err
	}
	return s.usageOf(ctx, tenants)
}

// usageOf reads the tenants' usage in one pipeline.
func (s *Store) usageOf(ctx context.Context, tenants []string) (map[string]Usage, error) {
	type reads struct {
		h            *redis.MapStringStringCmd
		live, active *redis.IntCmd
	}
	out := make(map[string]Usage, len(tenants))
	if len(tenants) == 0 {
		return out, nil
	}
	pipe := s.rdb.Pipeline()
	rs := make([]reads, len(tenants))
	for i, t := range tenants {
		rs[i] = reads{pipe.HGetAll(ctx, s.usageKey(t)), pipe.ZCard(ctx, s.liveKey(t)), pipe.ZCard(ctx, s.activeIndex(t))}
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("read usage of %d tenants: %w", len(tenants), err)
	}
	for i, t := range tenants {
		u := Usage{Executions: map[jobs.Status]int64{}, LiveSandbox: rs[i].live.Val(), Active: rs[i].active.Val()}
		for k, v := range rs[i].h.Val() {
			switch {
			case strings.HasPrefix(k, "executions:"):
				n, _ := strconv.ParseInt(v, 10, 64)
				u.Executions[jobs.Status(strings.TrimPrefix(k, "executions:"))] = n
			case k == "cpu_seconds":
				u.CPUSeconds, _ = strconv.ParseFloat(v, 64)
			case k == "wall_seconds":
				u.WallSeconds, _ = strconv.ParseFloat(v, 64)
			case k == "bytes_stored":
				u.BytesStored, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		out[t] = u
	}
	return out, nil
}

// UsageTenants returns the tenants with usage recorded, for metrics.
func (s *Store) UsageTenants(ctx context.Context) ([]string, error) {
	return s.rdb.SMembers(ctx, s.usageTenantsKey()).Result()
}
