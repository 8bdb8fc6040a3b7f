package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/api"
	"github.com/codeinterp/codeinterp/internal/service"
	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/quota"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/threadq"
)

// roundTrips counts what a Redis client sends: each command, and each pipeline as one.
type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A scrape reads every tenant's usage in a fixed number of Redis round trips, not a
// few per tenant: scrapes cost the same with 60 tenants as with one.
func TestMetricsScrapeRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr, db := testenv.RedisDB(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	t.Cleanup(func() { rdb.Close() })
	threads := threadq.New(rdb, threadq.Config{Prefix: "t:"})
	recs := records.New(rdb, records.Config{Prefix: "t:", TTL: time.Hour, Threads: threads})
	quotas := quota.NewCounters(rdb, quota.Config{Prefix: "t:", Table: quota.Table{Default: quota.Limits{UploadBytesDay: 1 << 30}}})
	const tenants = 60
	for i := range tenants {
		tenant := fmt.Sprintf("tenant%02d", i)
		if err := recs.AddUsage(ctx, tenant, records.Spent{Status: jobs.Succeeded, WallSeconds: 1.5, BytesStored: int64(i)}); err != nil {
			t.Fatal(err)
		}
		if err := quotas.Upload(ctx, tenant, int64(1000+i)); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := api.ParseKeys("acme:key-a", "")
	if err != nil {
		t.Fatal(err)
	}
	svc := service.New(service.Config{Records: recs, Threads: threads, Quotas: quotas, Profiles: testProfiles})
	srv := httptest.NewServer(api.New(api.Config{Service: svc, Keys: keys}).Metrics())
	t.Cleanup(srv.Close)

	count := &roundTrips{}
	rdb.AddHook(count)
	status, page := get(t, srv.URL)
	if status != http.StatusOK {
		t.Fatalf("metrics: %d %.200s", status, page)
	}
	if n := count.n.Load(); n > 3 {
		t.Errorf("a scrape of %d tenants took %d Redis round trips, want at most 3", tenants, n)
	}
	for i := range tenants {
		for _, want := range []string{
			fmt.Sprintf(`codeinterp_tenant_executions_total{status="succeeded",tenant="tenant%02d"} 1`, i),
			fmt.Sprintf(`codeinterp_tenant_upload_bytes_today{tenant="tenant%02d"} %d`, i, 1000+i),
			fmt.Sprintf(`codeinterp_tenant_bytes_stored_total{tenant="tenant%02d"} %d`, i, i),
		} {
			if !strings.Contains(page, want) {
				t.Fatalf("the scrape lacks %s", want)
			}
		}
	}
}
