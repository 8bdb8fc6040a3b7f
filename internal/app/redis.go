package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
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

// redisReady checks that Redis answers, has its data loaded and is not near full:
// with maxmemory and noeviction (as shipped), a full Redis refuses writes, so the API
// should stop taking work before that. While Redis restarts and loads its data
// (seconds per GB, see DESIGN.md "Redis durability"), it says so.
func (a *App) redisReady(ctx context.Context) error {
	info, err := a.Redis.Info(ctx, "persistence", "memory").Result()
	if err != nil {
		if redis.IsLoadingError(err) {
			return errors.New("redis is loading its data after a restart")
		}
		return errors.New("redis does not answer")
	}
	if infoInt(info, "loading") == 1 {
		return fmt.Errorf("redis is loading its data after a restart (%s%% done, about %s s left)",
			infoField(info, "loading_loaded_perc"), infoField(info, "loading_eta_seconds"))
	}
	if ratio := memoryRatio(info); ratio >= a.Config.RedisFullRatio {
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
	return memoryRatio(info), nil
}

// memoryRatio is the share of maxmemory in use that an INFO memory section reports.
func memoryRatio(info string) float64 {
	used, limit := infoInt(info, "used_memory"), infoInt(info, "maxmemory")
	if limit <= 0 {
		return 0
	}
	return float64(used) / float64(limit)
}

func infoInt(info, field string) int64 {
	n, _ := strconv.ParseInt(infoField(info, field), 10, 64)
	return n
}

func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}
