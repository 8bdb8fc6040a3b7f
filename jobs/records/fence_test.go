package records_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/threadq"
)

// A thread item is started and ended only by the holder of the thread's current
// lease: after another worker took the thread over, the stale owner can neither
// start the item (so it never runs twice) nor overwrite its end.
func TestTransitionAsRefusesStaleLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr, db := testenv.RedisDB(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	t.Cleanup(func() { rdb.Close() })
	clk := testenv.NewClock(time.UnixMilli(1_700_000_000_000))
	q := threadq.New(rdb, threadq.Config{Prefix: "t:", HeartbeatTTL: 10 * time.Second, Now: clk.Now})
	r := records.New(rdb, records.Config{Prefix: "t:", TTL: time.Hour, Threads: q})
	tk := jobs.NewThreadKey("acme", "th")

	ex := &jobs.Execution{ID: "ex_1", Tenant: "acme", ThreadID: "th", Status: jobs.Queued, Code: "1"}
	if _, err := r.Create(ctx, ex, "", ""); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"A", "B"} {
		if err := q.Beat(ctx, w, true); err != nil {
			t.Fatal(err)
		}
	}
	a, _, err := q.Claim(ctx, tk, "A")
	if err != nil {
		t.Fatal(err)
	}
	if id, err := q.Next(ctx, a); err != nil || id != "ex_1" {
		t.Fatalf("Next = %q, %v", id, err)
	}
	// A stalls past its heartbeat; B takes over.
	clk.Advance(11 * time.Second)
	if err := q.Beat(ctx, "B", true); err != nil {
		t.Fatal(err)
	}
	b, inflight, err := q.Claim(ctx, tk, "B")
	if err != nil || inflight != "ex_1" {
		t.Fatalf("B's claim = %q, %v", inflight, err)
	}

	started := *ex
	started.Status, started.Worker = jobs.Running, "A"
	if ok, _, err := r.TransitionAs(ctx, a, &started, jobs.Queued); ok || !errors.Is(err, threadq.ErrLost) {
		t.Fatalf("stale start = %v, %v; want ErrLost", ok, err)
	}
	if got, _ := r.Get(ctx, "acme", "ex_1"); got.Status != jobs.Queued {
		t.Fatalf("after the stale start the record is %s, want queued", got.Status)
	}
	started.Worker = "B"
	if ok, _, err := r.TransitionAs(ctx, b, &started, jobs.Queued); !ok || err != nil {
		t.Fatalf("owner's start = %v, %v", ok, err)
	}
	ended := started
	ended.Status, ended.Worker = jobs.Succeeded, "A"
	if ok, _, err := r.TransitionAs(ctx, a, &ended, jobs.Running); ok || !errors.Is(err, threadq.ErrLost) {
		t.Fatalf("stale finish = %v, %v; want ErrLost", ok, err)
	}
	if got, _ := r.Get(ctx, "acme", "ex_1"); got.Status != jobs.Running || got.Worker != "B" {
		t.Fatalf("after the stale finish the record is %s by %s, want running by B", got.Status, got.Worker)
	}
	ended.Worker = "B"
	if ok, _, err := r.TransitionAs(ctx, b, &ended, jobs.Running); !ok || err != nil {
		t.Fatalf("owner's finish = %v, %v", ok, err)
	}
}
