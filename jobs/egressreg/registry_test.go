package egressreg_test

import (
	"fmt"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/egressreg"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

func newRegistry(t *testing.T) (*egressreg.Registry, *redis.Client) {
	t.Helper()
	addr, db := testenv.RedisDB(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	t.Cleanup(func() { rdb.Close() })
	return egressreg.New(rdb, egressreg.Config{Prefix: "test:"}), rdb
}

// An address says who is behind it until forgotten or expired; an IPv4-mapped
// spelling is the same address.
func TestRegisterLookupForget(t *testing.T) {
	ctx := t.Context()
	r, _ := newRegistry(t)
	a := netip.MustParseAddr("10.213.0.3")
	if _, ok, err := r.Lookup(ctx, a); ok || err != nil {
		t.Fatalf("nobody registered: %v %v", ok, err)
	}
	id := egressreg.Identity{Tenant: "acme", Thread: "t1", Execution: "ex_1", Allow: []string{"pypi.org"}}
	if err := r.Register(ctx, a, id, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, ok, err := r.Lookup(ctx, netip.MustParseAddr("::ffff:10.213.0.3"))
	if err != nil || !ok || got.Tenant != "acme" || got.Execution != "ex_1" || len(got.Allow) != 1 {
		t.Fatalf("lookup: %+v %v %v", got, ok, err)
	}
	if _, ok, _ := r.Lookup(ctx, netip.MustParseAddr("10.213.0.11")); ok {
		t.Fatal("another address found")
	}
	if err := r.Forget(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := r.Lookup(ctx, a); ok {
		t.Fatal("found after forget")
	}
	if err := r.Register(ctx, a, egressreg.Identity{Tenant: "acme"}, time.Minute); err == nil {
		t.Fatal("registered without an execution")
	}

	// An address the worker never forgot stops granting anything by itself.
	if err := r.Register(ctx, a, id, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, ok, _ := r.Lookup(ctx, a); ok; _, ok, _ = r.Lookup(ctx, a) {
		if time.Now().After(deadline) {
			t.Fatal("the registration never expired")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A ledger keeps entries in order up to MaxEntries, however many connections append
// at once, and counts the rest; it expires.
func TestLedgerBounded(t *testing.T) {
	ctx := t.Context()
	r, rdb := newRegistry(t)
	open := jobs.EgressEntry{Host: "pypi.org", Port: 443, Method: "CONNECT", Allowed: true}
	at, err := r.Append(ctx, "ex_1", open)
	if err != nil || at != 0 {
		t.Fatal(at, err)
	}
	if at, err := r.Append(ctx, "ex_1", jobs.EgressEntry{Host: "evil.example", Port: 443, Method: "CONNECT", Reason: "not in the allow-list"}); err != nil || at != 1 {
		t.Fatal(at, err)
	}
	open.BytesIn = 10 // the connection ended
	if err := r.Update(ctx, "ex_1", 0, open); err != nil {
		t.Fatal(err)
	}
	got, dropped, err := r.Ledger(ctx, "ex_1")
	if err != nil || dropped != 0 || len(got) != 2 || got[0].Host != "pypi.org" || got[0].BytesIn != 10 || got[1].Allowed || got[1].Reason == "" {
		t.Fatalf("ledger: %+v %d %v", got, dropped, err)
	}
	if err := r.Update(ctx, "ex_gone", 0, open); err != nil { // an expired ledger is not made again
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, "test:egress:ledger:ex_gone").Val(); n != 0 {
		t.Fatal("an update made a ledger")
	}

	var wg sync.WaitGroup
	for g := range 10 {
		wg.Go(func() {
			for i := range 50 {
				if _, err := r.Append(ctx, "ex_2", jobs.EgressEntry{Host: fmt.Sprintf("h%d-%d.example", g, i), Port: 443}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, dropped, err = r.Ledger(ctx, "ex_2")
	if err != nil || len(got) != egressreg.MaxEntries || dropped != 500-egressreg.MaxEntries {
		t.Fatalf("500 entries: kept %d, dropped %d, %v", len(got), dropped, err)
	}
	if ttl := rdb.PTTL(ctx, "test:egress:ledger:ex_2").Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("ledger TTL %s", ttl)
	}
	if got, dropped, err := r.Ledger(ctx, "ex_none"); err != nil || len(got) != 0 || dropped != 0 {
		t.Fatalf("no ledger: %+v %d %v", got, dropped, err)
	}
}
