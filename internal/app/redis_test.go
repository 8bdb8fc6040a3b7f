package app

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// A Redis near its maxmemory makes the API unready, saying why, before writes fail.
func TestRedisNearFull(t *testing.T) {
	ctx := context.Background()
	addr := testenv.RedisWith(t, "--maxmemory", "8mb", "--maxmemory-policy", "noeviction")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	cfg, err := config.Load(map[string]string{"CODEINTERP_REDIS_FULL_RATIO": "0.9", "CODEINTERP_DEV_MODE": "true"})
	if err != nil {
		t.Fatal(err)
	}
	a := &App{Config: cfg, Redis: rdb}
	if err := a.redisReady(ctx); err != nil {
		t.Fatalf("an empty Redis: %v", err)
	}
	// Fill it until Redis itself refuses writes.
	val := strings.Repeat("x", 64<<10)
	var werr error
	for i := 0; i < 1000 && werr == nil; i++ {
		werr = rdb.Set(ctx, "fill:"+strings.Repeat("k", i%7)+string(rune('a'+i%26))+string(rune(i)), val, 0).Err()
	}
	if werr == nil || !strings.Contains(werr.Error(), "OOM") {
		t.Fatalf("Redis never refused a write: %v", werr)
	}
	err = a.redisReady(ctx)
	if err == nil || !strings.Contains(err.Error(), "redis near full") {
		t.Fatalf("a full Redis: readiness %v", err)
	}
	if ratio, _ := a.redisFull(ctx); ratio < 0.9 {
		t.Fatalf("ratio %g", ratio)
	}
}
