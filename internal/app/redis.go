package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// redisMemory is the share of Redis's maxmemory in use, read at each scrape.
func (a *App) redisMemory() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "codeinterp_redis_memory_used_ratio",
		Help: "Share of Redis's maxmemory in use (0 when Redis has no maxmemory); /readyz fails past CODEINTERP_REDIS_FULL_RATIO.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		ratio, _ := a.redisFull(ctx)
		return ratio
	})
}

// redisReady checks that Redis answers and is not near full: with maxmemory and
// noeviction (as shipped), a full Redis refuses writes, so the API should stop
// taking work before that.
func (a *App) redisReady(ctx context.Context) error {
	ratio, err := a.redisFull(ctx)
	if err != nil {
		return err
	}
	if ratio >= a.Config.RedisFullRatio {
		return fmt.Errorf("redis near full: %.0f%% of its memory used", 100*ratio)
	}
	return nil
}

// redisFull returns the share of Redis's maxmemory in use (0 without a maxmemory).
func (a *App) redisFull(ctx context.Context) (float64, error) {
	info, err := a.Redis.Info(ctx, "memory").Result()
	if err != nil {
		return 0, errors.New("redis does not answer")
	}
	used, limit := infoInt(info, "used_memory"), infoInt(info, "maxmemory")
	if limit <= 0 {
		return 0, nil
	}
	return float64(used) / float64(limit), nil
}

func infoInt(info, field string) int64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
