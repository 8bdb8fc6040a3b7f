package records_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/quota"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/threadq"
)

// A tenant's thread operations count against its quotas as executions do; the
// service's own (pause, reap) and deletes never are refused. An awaited operation's
// record lives OpTTL; a put's, which is applied later, lives as long as
// an execution's.
func TestOperationsCountAgainstQuotas(t *testing.T) {
	ctx := context.Background()
	addr, db := testenv.RedisDB(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	t.Cleanup(func() { rdb.Close() })
	r := records.New(rdb, records.Config{Prefix: "t:", TTL: 24 * time.Hour, Threads: threadq.New(rdb, threadq.Config{Prefix: "t:"}),
		Quotas: func(string) quota.Limits { return quota.Limits{Active: 3, ThreadQueue: 2} }})
	create := func(thread string, kind jobs.Kind) (string, error) {
		op := &jobs.Execution{ID: jobs.NewOpID(), Kind: kind, Tenant: "acme", ThreadID: thread, Status: jobs.Queued, CreatedAt: time.Now()}
		_, err := r.Create(ctx, op, "", "")
		return op.ID, err
	}
	refused := func(err error, want string) {
		t.Helper()
		var over *quota.Exceeded
		if !errors.As(err, &over) || over.Quota != want {
			t.Fatalf("got %v, want the %s quota", err, want)
		}
	}
	get, err := create("t1", jobs.KindGetFile)
	if err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.TTL(ctx, "t:ex:"+get).Val(); ttl <= 0 || ttl > records.MinOpTTL {
		t.Fatalf("a get's record lives %v, want at most %v", ttl, records.MinOpTTL)
	}
	put, err := create("t1", jobs.KindPutFile)
	if err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.TTL(ctx, "t:ex:"+put).Val(); ttl <= time.Hour {
		t.Fatalf("a put's record lives %v, want the records' TTL", ttl)
	}
	_, err = create("t1", jobs.KindReset)
	refused(err, "thread_queue")
	for _, kind := range []jobs.Kind{jobs.KindPause, jobs.KindReap, jobs.KindDeleteThread} {
		if _, err := create("t1", kind); err != nil {
			t.Fatalf("%s past the thread's queue quota: %v", kind, err)
		}
	}
	if _, err := create("t2", jobs.KindReset); err != nil {
		t.Fatal(err)
	}
	_, err = create("t3", jobs.KindGetFile)
	refused(err, "active")
	if u, err := r.Usage(ctx, "acme"); err != nil || u.Active != 3 {
		t.Fatalf("active %d (%v), want the three counted operations", u.Active, err)
	}
}
