package quota_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs/quota"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

func counters(t *testing.T, table quota.Table) (*quota.Counters, *testenv.Clock) {
	addr, db := testenv.RedisDB(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	t.Cleanup(func() { rdb.Close() })
	clk := testenv.NewClock(time.Date(2026, 12, 1, 23, 59, 0, 0, time.UTC))
	return quota.NewCounters(rdb, quota.Config{Table: table, Now: clk.Now}), clk
}

func exceeded(t *testing.T, err error, name string) *quota.Exceeded {
	t.Helper()
	var e *quota.Exceeded
	if !errors.As(err, &e) || e.Quota != name {
		t.Fatalf("err = %v, want quota %s exceeded", err, name)
	}
	return e
}

// The bucket lets a burst through, then the rate, and says when to come back; one
// tenant's bucket is not another's.
func TestSubmissionRate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clk := counters(t, quota.Table{Default: quota.Limits{Rate: 2, Burst: 3}, Tenants: map[string]quota.Limits{"big": {Rate: 100, Burst: 100}}})
	for i := range 3 {
		if err := c.Submit(ctx, "acme"); err != nil {
			t.Fatalf("submission %d of the burst: %v", i, err)
		}
	}
	e := exceeded(t, c.Submit(ctx, "acme"), "rate")
	if e.RetryAfter < 1 || e.Limit != 2 {
		t.Fatalf("exceeded %+v", e)
	}
	for i := range 50 {
		if err := c.Submit(ctx, "big"); err != nil {
			t.Fatalf("another tenant's submission %d: %v", i, err)
		}
	}
	clk.Advance(500 * time.Millisecond) // one token at 2/s
	if err := c.Submit(ctx, "acme"); err != nil {
		t.Fatalf("after a refill: %v", err)
	}
	exceeded(t, c.Submit(ctx, "acme"), "rate")
	clk.Advance(time.Hour) // refills to the burst, no more
	for range 3 {
		if err := c.Submit(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
	}
	exceeded(t, c.Submit(ctx, "acme"), "rate")
}

// Many API replicas share the bucket: concurrent submissions never pass the burst.
func TestSubmissionRateConcurrent(t *testing.T) {
	t.Parallel()
	c, _ := counters(t, quota.Table{Default: quota.Limits{Rate: 1, Burst: 10}})
	var mu sync.Mutex
	ok := 0
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			if c.Submit(context.Background(), "acme") == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ok != 10 {
		t.Fatalf("%d of 40 concurrent submissions passed a burst of 10", ok)
	}
}

// Upload bytes are counted per UTC day; past the quota nothing is counted, and the
// next day starts afresh.
func TestUploadBytesPerDay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clk := counters(t, quota.Table{Default: quota.Limits{UploadBytesDay: 1000}})
	if err := c.Upload(ctx, "acme", 600); err != nil {
		t.Fatal(err)
	}
	e := exceeded(t, c.Upload(ctx, "acme", 500), "upload_bytes_day")
	if e.RetryAfter < 1 || e.RetryAfter > 60 { // the clock is a minute before midnight
		t.Fatalf("retry after %d s, want until midnight", e.RetryAfter)
	}
	if n, _ := c.Uploaded(ctx, "acme"); n != 600 {
		t.Fatalf("counted %d, want 600: a refused upload counts nothing", n)
	}
	if err := c.Upload(ctx, "acme", 400); err != nil {
		t.Fatalf("up to the quota exactly: %v", err)
	}
	if err := c.Upload(ctx, "globex", 1000); err != nil {
		t.Fatalf("another tenant: %v", err)
	}
	clk.Advance(2 * time.Minute)
	if err := c.Upload(ctx, "acme", 1000); err != nil {
		t.Fatalf("the next day: %v", err)
	}
}

func TestParseOverrides(t *testing.T) {
	def := quota.Limits{Rate: 20, Burst: 40, Active: 200}
	tab, err := quota.ParseOverrides(def, "acme:rate=100,active=0; globex:streams=2")
	if err != nil {
		t.Fatal(err)
	}
	if a := tab.For("acme"); a.Rate != 100 || a.Active != 0 || a.Burst != 40 {
		t.Fatalf("acme %+v", a)
	}
	if g := tab.For("globex"); g.Streams != 2 || g.Rate != 20 {
		t.Fatalf("globex %+v", g)
	}
	if o := tab.For("other"); o != def {
		t.Fatalf("other %+v", o)
	}
	for _, bad := range []string{"acme", "acme:rate", "acme:speed=3", "acme:rate=-1"} {
		if _, err := quota.ParseOverrides(def, bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
