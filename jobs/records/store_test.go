package records_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/threadq"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

func newRecords(t *testing.T) *records.Store {
	r, _ := newStore(t)
	return r
}

// newStore returns a store over its own Redis database, under the key prefix "t:",
// and the client, for tests that write what older versions left (see keys.go).
func newStore(t *testing.T) (*records.Store, *redis.Client) {
	t.Helper()
	addr, db := testenv.RedisDB(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	t.Cleanup(func() { rdb.Close() })
	return records.New(rdb, records.Config{Prefix: "t:", TTL: time.Hour, Threads: threadq.New(rdb, threadq.Config{Prefix: "t:"})}), rdb
}

func TestRecordsCreateAndIdempotency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRecords(t)
	ex := &jobs.Execution{ID: "ex_1", Tenant: "acme", Status: jobs.Queued, Code: "1"}
	if c, err := r.Create(ctx, ex, "key", "h1"); err != nil || !c.Created || c.ID != "ex_1" {
		t.Fatalf("create: %+v %v", c, err)
	}
	dup := &jobs.Execution{ID: "ex_2", Tenant: "acme", Status: jobs.Queued}
	if c, err := r.Create(ctx, dup, "key", "h1"); err != nil || c.Created || c.ID != "ex_1" {
		t.Fatalf("replay: %+v %v", c, err)
	}
	if _, err := r.Create(ctx, dup, "key", "h2"); !errors.Is(err, records.ErrIdempotencyMismatch) {
		t.Fatalf("mismatch: %v", err)
	}
	if _, err := r.Get(ctx, "acme", "ex_2"); !errors.Is(err, records.ErrNotFound) {
		t.Fatalf("a replay must not store a record: %v", err)
	}
	if _, err := r.Get(ctx, "globex", "ex_1"); !errors.Is(err, records.ErrNotFound) {
		t.Fatalf("another tenant: %v", err)
	}
}

func TestRecordsTransition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRecords(t)
	ex := &jobs.Execution{ID: "ex_t", Tenant: "acme", Status: jobs.Queued}
	if _, err := r.Create(ctx, ex, "", ""); err != nil {
		t.Fatal(err)
	}
	ex.Status = jobs.Running
	if ok, found, err := r.Transition(ctx, ex, jobs.Queued); !ok || found != jobs.Queued || err != nil {
		t.Fatalf("queued→running: %v %s %v", ok, found, err)
	}
	// A second attempt to start it (a duplicate delivery) is refused.
	if ok, found, _ := r.Transition(ctx, ex, jobs.Queued); ok || found != jobs.Running {
		t.Fatalf("second start: %v %s", ok, found)
	}
	ex.Status = jobs.Succeeded
	if ok, _, _ := r.Transition(ctx, ex, jobs.Running); !ok {
		t.Fatal("running→succeeded refused")
	}
	got, err := r.Get(ctx, "acme", "ex_t")
	if err != nil || got.Status != jobs.Succeeded {
		t.Fatalf("stored: %+v %v", got, err)
	}
}
