package threadq_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/threadq"
)

// These tests pin every Lua script of the package (lua/) and the Go API around them
// against a real Redis, each test in a database of its own. Time is simulated: the
// queue's clock is a [clock] the tests advance, so heartbeats expire without sleeping.
// The only real waits are the BLPOP timeouts of TakeOffer and Wait that must expire
// empty (go-redis rounds BLPOP timeouts up to whole seconds).

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

const ttl = 10 * time.Second

// waitEmpty is the timeout of a TakeOffer or Wait expected to find nothing; go-redis
// sends BLPOP timeouts in whole seconds, so less would be rounded up anyway.
const waitEmpty = time.Second

// t0 is when every test's simulated clock starts.
var t0 = time.UnixMilli(1_700_000_000_000)

var (
	t1 = jobs.NewThreadKey("acme", "t1")
	t2 = jobs.NewThreadKey("acme", "t2")
	t3 = jobs.NewThreadKey("globex", "t3")
)

// env is one test's queue over a Redis database of its own.
type env struct {
	t   *testing.T
	ctx context.Context
	rdb *redis.Client
	clk *testenv.Clock
	q   *threadq.Queue
	// all reads the same keys with a TTL so long that every registered worker counts
	// as alive: its Alive and Ready list the raw registry, stale beats included.
	all *threadq.Queue

	mu     *sync.Mutex
	leases map[jobs.ThreadKey]map[string]threadq.Lease // each worker's latest lease per thread; under mu
}

func newEnv(t *testing.T) *env {
	t.Helper()
	addr, db := testenv.RedisDB(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	t.Cleanup(func() { rdb.Close() })
	clk := testenv.NewClock(t0)
	return &env{
		t: t, ctx: t.Context(), rdb: rdb, clk: clk, mu: new(sync.Mutex),
		q:   threadq.New(rdb, threadq.Config{Prefix: "t:", HeartbeatTTL: ttl, Now: clk.Now}),
		all: threadq.New(rdb, threadq.Config{Prefix: "t:", HeartbeatTTL: 100000 * time.Hour, Now: clk.Now}),
	}
}

// ownedKey MIRRORS keys.go (P + "owned:" + worker; P is "t:" here): the set of the
// thread keys a worker owns, which the package does not expose. TestClaim's first
// case ("unowned thread") fails if this drifts from the key the scripts use.
func ownedKey(worker string) string { return "t:owned:" + worker }

func (e *env) check(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// beat records a heartbeat (ready) of each worker at the current simulated time.
func (e *env) beat(workers ...string) {
	e.t.Helper()
	for _, w := range workers {
		e.check(e.q.Beat(e.ctx, w, true))
	}
}

// die moves the clock just past the TTL: every worker that does not beat again is dead.
func (e *env) die() { e.clk.Advance(ttl + time.Millisecond) }

func (e *env) push(tk jobs.ThreadKey, ids ...string) {
	e.t.Helper()
	e.check(e.rdb.RPush(e.ctx, e.q.PushTarget(tk).Queue, ids).Err())
}

// offer offers tk as create.lua does when a thread's owner is dead: it enters the
// unowned set (if not there yet) at the current time and goes onto the offers list.
func (e *env) offer(tk jobs.ThreadKey) {
	e.t.Helper()
	p := e.q.PushTarget(tk)
	e.check(e.rdb.ZAddNX(e.ctx, p.Unowned, redis.Z{Score: float64(p.NowMS), Member: string(tk)}).Err())
	e.check(e.rdb.RPush(e.ctx, p.Offers, string(tk)).Err())
}

func (e *env) claim(tk jobs.ThreadKey, w string) string {
	e.t.Helper()
	lease, inflight, err := e.q.Claim(e.ctx, tk, w)
	if err != nil {
		e.t.Fatalf("Claim(%s, %s): %q, %v", tk, w, inflight, err)
	}
	e.keep(lease)
	return inflight
}

// keep remembers lease as its worker's latest for its thread.
func (e *env) keep(l threadq.Lease) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leases == nil {
		e.leases = map[jobs.ThreadKey]map[string]threadq.Lease{}
	}
	if e.leases[l.Thread] == nil {
		e.leases[l.Thread] = map[string]threadq.Lease{}
	}
	e.leases[l.Thread][l.Worker] = l
}

// lease returns the latest lease worker got on tk; a worker that never claimed tk
// presents a made-up token, as a confused worker might.
func (e *env) lease(tk jobs.ThreadKey, worker string) threadq.Lease {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l, ok := e.leases[tk][worker]; ok {
		return l
	}
	return threadq.Lease{Thread: tk, Worker: worker, Token: 1}
}

func (e *env) next(tk jobs.ThreadKey, w string, want string) {
	e.t.Helper()
	got, err := e.q.Next(e.ctx, e.lease(tk, w))
	if err != nil || got != want {
		e.t.Fatalf("Next(%s, %s) = %q, %v; want %q", tk, w, got, err, want)
	}
}

func (e *env) release(tk jobs.ThreadKey, w string, wantWorkLeft bool) {
	e.t.Helper()
	left, err := e.q.Release(e.ctx, e.lease(tk, w))
	if err != nil || left != wantWorkLeft {
		e.t.Fatalf("Release(%s, %s) = %v, %v; want %v", tk, w, left, err, wantWorkLeft)
	}
}

// takeOffer takes the next offer, which must be want ("" for none within waitEmpty).
func (e *env) takeOffer(want jobs.ThreadKey) {
	e.t.Helper()
	got, err := e.q.TakeOffer(e.ctx, waitEmpty)
	if err != nil || got != want {
		e.t.Fatalf("TakeOffer = %q, %v; want %q", got, err, want)
	}
}

// drainOffers takes n offers (each must come at once) and returns them sorted.
func (e *env) drainOffers(n int) []string {
	e.t.Helper()
	var got []string
	for range n {
		tk, err := e.q.TakeOffer(e.ctx, 5*time.Second)
		if err != nil || tk == "" {
			e.t.Fatalf("TakeOffer: %q, %v; want an offer", tk, err)
		}
		got = append(got, string(tk))
	}
	slices.Sort(got)
	return got
}

func (e *env) wantState(tk jobs.ThreadKey, want threadq.State) {
	e.t.Helper()
	got, err := e.q.State(e.ctx, tk)
	e.check(err)
	if got.Owner != want.Owner || got.Inflight != want.Inflight || !slices.Equal(got.Queued, want.Queued) {
		e.t.Errorf("State(%s) = %+v, want %+v", tk, got, want)
	}
}

// wantOffers checks the offers list, as a multiset (bury's order is SMEMBERS order).
func (e *env) wantOffers(want ...string) {
	e.t.Helper()
	got, err := e.rdb.LRange(e.ctx, e.q.PushTarget(t1).Offers, 0, -1).Result()
	e.check(err)
	if !slices.Equal(sorted(got), sorted(want)) {
		e.t.Errorf("offers = %q, want %q", got, want)
	}
}

// wantUnowned checks the unowned set: thread → when offered, as an offset from t0.
func (e *env) wantUnowned(want map[string]time.Duration) {
	e.t.Helper()
	zs, err := e.rdb.ZRangeWithScores(e.ctx, e.q.PushTarget(t1).Unowned, 0, -1).Result()
	e.check(err)
	got := map[string]time.Duration{}
	for _, z := range zs {
		got[z.Member.(string)] = time.Duration(int64(z.Score)-t0.UnixMilli()) * time.Millisecond
	}
	if !maps.Equal(got, want) {
		e.t.Errorf("unowned = %v, want %v", got, want)
	}
}

// wantUnownedMembers checks the threads of the unowned set, whenever offered.
func (e *env) wantUnownedMembers(want ...string) {
	e.t.Helper()
	got, err := e.rdb.ZRange(e.ctx, e.q.PushTarget(t1).Unowned, 0, -1).Result()
	e.check(err)
	if !slices.Equal(sorted(got), sorted(want)) {
		e.t.Errorf("unowned = %q, want %q", got, want)
	}
}

func (e *env) wantOwned(worker string, want ...string) {
	e.t.Helper()
	got, err := e.rdb.SMembers(e.ctx, ownedKey(worker)).Result()
	e.check(err)
	if !slices.Equal(sorted(got), sorted(want)) {
		e.t.Errorf("threads owned by %s = %q, want %q", worker, got, want)
	}
}

func (e *env) wantList(what string, list func(context.Context) ([]string, error), want ...string) {
	e.t.Helper()
	got, err := list(e.ctx)
	e.check(err)
	if !slices.Equal(sorted(got), sorted(want)) {
		e.t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func sorted[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	slices.Sort(out)
	return out
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// --- claim.lua ---------------------------------------------------------------------

func TestClaim(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(e *env) // then worker B claims t1
		// Claim's result: the item in flight, or with ErrOwned the live owner.
		want       string
		wantErr    error
		wantState  threadq.State
		wantOwnedA []string
		wantOwnedB []string
		wantUnown  []string
	}{{
		name:       "unowned thread",
		setup:      func(e *env) { e.push(t1, "x1") },
		wantState:  threadq.State{Owner: "B", Queued: []string{"x1"}},
		wantOwnedB: []string{string(t1)},
	}, {
		name: "waiting in the unowned set",
		setup: func(e *env) {
			e.push(t1, "x1")
			e.offer(t1)
		},
		wantState:  threadq.State{Owner: "B", Queued: []string{"x1"}},
		wantOwnedB: []string{string(t1)},
	}, {
		name: "released with an item in flight: the claimer gets it to settle",
		setup: func(e *env) {
			e.beat("A")
			e.claim(t1, "A")
			e.push(t1, "x1", "x2")
			e.next(t1, "A", "x1")
			e.release(t1, "A", true)
		},
		want:       "x1",
		wantState:  threadq.State{Owner: "B", Queued: []string{"x2"}, Inflight: "x1"},
		wantOwnedB: []string{string(t1)},
	}, {
		name: "owned by a live worker",
		setup: func(e *env) {
			e.beat("A")
			e.claim(t1, "A")
			e.push(t1, "x1", "x2")
			e.next(t1, "A", "x1")
			e.offer(t1) // an offer the live owner's thread should not have; claim leaves it
			e.clk.Advance(time.Second)
			e.beat("B")
		},
		want:       "A",
		wantErr:    threadq.ErrOwned,
		wantState:  threadq.State{Owner: "A", Queued: []string{"x2"}, Inflight: "x1"},
		wantOwnedA: []string{string(t1)},
		wantUnown:  []string{string(t1)},
	}, {
		name: "owner's heartbeat exactly the TTL old: still alive",
		setup: func(e *env) {
			e.beat("A")
			e.claim(t1, "A")
			e.clk.Advance(ttl)
			e.beat("B")
		},
		want:       "A",
		wantErr:    threadq.ErrOwned,
		wantState:  threadq.State{Owner: "A"},
		wantOwnedA: []string{string(t1)},
	}, {
		name: "owner's heartbeat older than the TTL: taken over",
		setup: func(e *env) {
			e.beat("A")
			e.claim(t1, "A")
			e.push(t1, "x1", "x2")
			e.next(t1, "A", "x1")
			e.die()
			e.beat("B")
			e.offer(t1)
		},
		want:       "x1",
		wantState:  threadq.State{Owner: "B", Queued: []string{"x2"}, Inflight: "x1"},
		wantOwnedB: []string{string(t1)},
	}, {
		name: "owner left the registry: taken over",
		setup: func(e *env) {
			e.beat("A")
			e.claim(t1, "A")
			e.check(e.q.Leave(e.ctx, "A"))
			e.beat("B")
		},
		wantState:  threadq.State{Owner: "B"},
		wantOwnedB: []string{string(t1)},
	}, {
		name: "claimed again by its owner",
		setup: func(e *env) {
			e.beat("B")
			e.claim(t1, "B")
			e.push(t1, "x1")
			e.next(t1, "B", "x1")
		},
		want:       "x1",
		wantState:  threadq.State{Owner: "B", Inflight: "x1"},
		wantOwnedB: []string{string(t1)},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tc.setup(e)
			lease, got, err := e.q.Claim(e.ctx, t1, "B")
			if err == nil {
				e.keep(lease)
			}
			if got != tc.want || !errors.Is(err, tc.wantErr) {
				t.Errorf("Claim = %q, %v; want %q, %v", got, err, tc.want, tc.wantErr)
			}
			e.wantState(t1, tc.wantState)
			e.wantOwned("A", tc.wantOwnedA...)
			e.wantOwned("B", tc.wantOwnedB...)
			e.wantUnownedMembers(tc.wantUnown...)
			// Burying A, dead or alive, frees nothing of t1 whoever holds it now.
			orphans, err := e.q.Bury(e.ctx, "A")
			if err != nil || len(orphans) != 0 {
				t.Errorf("Bury(A) after the claim = %q, %v; want none", orphans, err)
			}
			e.wantState(t1, tc.wantState)
		})
	}
}

// Many workers claim one thread at once: exactly one wins, the others are told who.
func TestClaimConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 8
	workers := make([]string, n)
	for i := range workers {
		workers[i] = fmt.Sprintf("w%d", i)
	}
	e.beat(workers...)
	type result struct {
		got string
		err error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() {
			_, got, err := e.q.Claim(e.ctx, t1, w)
			results[i] = result{got, err}
		})
	}
	wg.Wait()
	owner, err := e.q.Owner(e.ctx, t1)
	e.check(err)
	winners := 0
	for i, r := range results {
		switch {
		case r.err == nil && r.got == "":
			winners++
			if workers[i] != owner {
				t.Errorf("%s's claim succeeded but %q owns the thread", workers[i], owner)
			}
			e.wantOwned(workers[i], string(t1))
		case errors.Is(r.err, threadq.ErrOwned) && r.got == owner:
			e.wantOwned(workers[i])
		default:
			t.Errorf("Claim by %s = %q, %v (owner %q)", workers[i], r.got, r.err, owner)
		}
	}
	if winners != 1 {
		t.Errorf("%d claims succeeded, want 1", winners)
	}
}

// --- next.lua ----------------------------------------------------------------------

func TestNext(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		setup     func(e *env) // A owns t1 unless the setup releases or loses it
		worker    string
		want      string
		wantErr   error
		wantState threadq.State
	}{{
		name:      "owner takes the head",
		setup:     func(e *env) { e.push(t1, "a", "b", "c") },
		worker:    "A",
		want:      "a",
		wantState: threadq.State{Owner: "A", Queued: []string{"b", "c"}, Inflight: "a"},
	}, {
		name: "owner's next item replaces the one in flight",
		setup: func(e *env) {
			e.push(t1, "a", "b")
			e.next(t1, "A", "a")
		},
		worker:    "A",
		want:      "b",
		wantState: threadq.State{Owner: "A", Inflight: "b"},
	}, {
		name: "empty queue clears the in-flight item",
		setup: func(e *env) {
			e.push(t1, "a")
			e.next(t1, "A", "a")
		},
		worker:    "A",
		wantState: threadq.State{Owner: "A"},
	}, {
		name:      "empty queue, nothing in flight",
		setup:     func(e *env) {},
		worker:    "A",
		wantState: threadq.State{Owner: "A"},
	}, {
		name: "not the owner",
		setup: func(e *env) {
			e.push(t1, "a", "b")
			e.next(t1, "A", "a")
			e.beat("B")
		},
		worker:    "B",
		wantErr:   threadq.ErrLost,
		wantState: threadq.State{Owner: "A", Queued: []string{"b"}, Inflight: "a"},
	}, {
		name: "owner released the thread",
		setup: func(e *env) {
			e.push(t1, "a", "b")
			e.release(t1, "A", true)
		},
		worker:    "A",
		wantErr:   threadq.ErrLost,
		wantState: threadq.State{Queued: []string{"a", "b"}},
	}, {
		name: "taken over while its item ran",
		setup: func(e *env) {
			e.push(t1, "a", "b")
			e.next(t1, "A", "a")
			e.die()
			e.beat("B")
			if got := e.claim(t1, "B"); got != "a" {
				e.t.Fatalf("takeover returned %q, want a", got)
			}
		},
		worker:    "A",
		wantErr:   threadq.ErrLost,
		wantState: threadq.State{Owner: "B", Queued: []string{"b"}, Inflight: "a"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.beat("A")
			e.claim(t1, "A")
			tc.setup(e)
			got, err := e.q.Next(e.ctx, e.lease(t1, tc.worker))
			if got != tc.want || !errors.Is(err, tc.wantErr) {
				t.Errorf("Next = %q, %v; want %q, %v", got, err, tc.want, tc.wantErr)
			}
			e.wantState(t1, tc.wantState)
		})
	}
}

// The owner gets a thread's items in the order they were queued, each in flight in
// turn, whether they were queued before or while it served.
func TestNextFIFO(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.beat("A")
	e.claim(t1, "A")
	e.push(t1, "a", "b")
	e.push(t2, "other") // another thread's items stay there
	steps := []struct {
		push      []string
		want      string
		wantState threadq.State
	}{
		{want: "a", wantState: threadq.State{Owner: "A", Queued: []string{"b"}, Inflight: "a"}},
		{push: []string{"c", "d"}, want: "b", wantState: threadq.State{Owner: "A", Queued: []string{"c", "d"}, Inflight: "b"}},
		{want: "c", wantState: threadq.State{Owner: "A", Queued: []string{"d"}, Inflight: "c"}},
		{want: "d", wantState: threadq.State{Owner: "A", Inflight: "d"}},
		{want: "", wantState: threadq.State{Owner: "A"}},
		{push: []string{"e"}, want: "e", wantState: threadq.State{Owner: "A", Inflight: "e"}},
	}
	for i, s := range steps {
		if len(s.push) > 0 {
			e.push(t1, s.push...)
		}
		got, err := e.q.Next(e.ctx, e.lease(t1, "A"))
		if err != nil || got != s.want {
			t.Fatalf("step %d: Next = %q, %v; want %q", i, got, err, s.want)
		}
		e.wantState(t1, s.wantState)
	}
	e.wantState(t2, threadq.State{Queued: []string{"other"}})
}

// --- release.lua -------------------------------------------------------------------

func TestRelease(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		setup      func(e *env) // A has claimed t1 at t0
		worker     string
		wantLeft   bool
		wantState  threadq.State
		wantOffer  bool // t1 is offered
		wantUnown  map[string]time.Duration
		wantOwnedA []string
		wantOwnedB []string
	}{{
		name:      "owner, no work",
		setup:     func(e *env) {},
		worker:    "A",
		wantState: threadq.State{},
	}, {
		name: "owner, queue drained and nothing in flight",
		setup: func(e *env) {
			e.push(t1, "a")
			e.next(t1, "A", "a")
			e.next(t1, "A", "")
		},
		worker:    "A",
		wantState: threadq.State{},
	}, {
		name: "owner, queued work",
		setup: func(e *env) {
			e.push(t1, "a", "b")
			e.clk.Advance(time.Second)
		},
		worker:    "A",
		wantLeft:  true,
		wantState: threadq.State{Queued: []string{"a", "b"}},
		wantOffer: true,
		wantUnown: map[string]time.Duration{string(t1): time.Second},
	}, {
		name: "owner, an item in flight and none queued",
		setup: func(e *env) {
			e.push(t1, "a")
			e.next(t1, "A", "a")
			e.clk.Advance(2 * time.Second)
		},
		worker:    "A",
		wantLeft:  true,
		wantState: threadq.State{Inflight: "a"},
		wantOffer: true,
		wantUnown: map[string]time.Duration{string(t1): 2 * time.Second},
	}, {
		name: "stale owner after a takeover",
		setup: func(e *env) {
			e.push(t1, "a", "b")
			e.next(t1, "A", "a")
			e.die()
			e.beat("B")
			e.claim(t1, "B")
		},
		worker:     "A",
		wantState:  threadq.State{Owner: "B", Queued: []string{"b"}, Inflight: "a"},
		wantOwnedB: []string{string(t1)},
	}, {
		name: "another live worker's thread",
		setup: func(e *env) {
			e.push(t1, "a")
			e.beat("B")
		},
		worker:     "B",
		wantState:  threadq.State{Owner: "A", Queued: []string{"a"}},
		wantOwnedA: []string{string(t1)},
	}, {
		name: "a thread nobody owns",
		setup: func(e *env) {
			e.release(t1, "A", false)
			e.push(t1, "a")
		},
		worker:    "B",
		wantState: threadq.State{Queued: []string{"a"}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.beat("A")
			e.claim(t1, "A")
			tc.setup(e)
			left, err := e.q.Release(e.ctx, e.lease(t1, tc.worker))
			if err != nil || left != tc.wantLeft {
				t.Errorf("Release = %v, %v; want %v", left, err, tc.wantLeft)
			}
			e.wantState(t1, tc.wantState)
			e.wantUnowned(tc.wantUnown)
			e.wantOwned("A", tc.wantOwnedA...)
			e.wantOwned("B", tc.wantOwnedB...)
			if tc.wantOffer {
				e.wantOffers(string(t1))
				e.takeOffer(t1)
			} else {
				e.wantOffers()
				e.takeOffer("")
			}
		})
	}
}

// --- bury.lua ----------------------------------------------------------------------

func TestBury(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		setup       func(e *env) // A beat (ready) at t0; then B beats at the end
		wantOrphans []string
		wantStates  map[jobs.ThreadKey]threadq.State // threads not listed are empty
		wantUnown   map[string]time.Duration         // also the offers, once each
		wantOwnedA  []string
		wantOwnedB  []string
		wantAlive   []string // within the TTL
		wantRegd    []string // the registry and its ready set, however stale
	}{{
		name: "dead holding an in-flight item",
		setup: func(e *env) {
			e.claim(t1, "A")
			e.push(t1, "a")
			e.next(t1, "A", "a")
			e.die()
		},
		wantOrphans: []string{string(t1)},
		wantStates:  map[jobs.ThreadKey]threadq.State{t1: {Inflight: "a"}},
		wantUnown:   map[string]time.Duration{string(t1): ttl + ms(1)},
		wantAlive:   []string{"B"},
		wantRegd:    []string{"B"},
	}, {
		name: "dead with queued work and nothing in flight",
		setup: func(e *env) {
			e.claim(t1, "A")
			e.push(t1, "a", "b")
			e.die()
		},
		wantOrphans: []string{string(t1)},
		wantStates:  map[jobs.ThreadKey]threadq.State{t1: {Queued: []string{"a", "b"}}},
		wantUnown:   map[string]time.Duration{string(t1): ttl + ms(1)},
		wantAlive:   []string{"B"},
		wantRegd:    []string{"B"},
	}, {
		name: "dead with idle threads: freed, not offered",
		setup: func(e *env) {
			e.claim(t1, "A")
			e.claim(t2, "A")
			e.push(t2, "a")
			e.next(t2, "A", "a")
			e.next(t2, "A", "")
			e.die()
		},
		wantAlive: []string{"B"},
		wantRegd:  []string{"B"},
	}, {
		name: "dead with in-flight, idle and queued threads",
		setup: func(e *env) {
			e.claim(t1, "A")
			e.push(t1, "a")
			e.next(t1, "A", "a")
			e.claim(t2, "A")
			e.claim(t3, "A")
			e.push(t3, "c", "d")
			e.die()
		},
		wantOrphans: []string{string(t1), string(t3)},
		wantStates: map[jobs.ThreadKey]threadq.State{
			t1: {Inflight: "a"},
			t3: {Queued: []string{"c", "d"}},
		},
		wantUnown: map[string]time.Duration{string(t1): ttl + ms(1), string(t3): ttl + ms(1)},
		wantAlive: []string{"B"},
		wantRegd:  []string{"B"},
	}, {
		name: "alive: nothing happens",
		setup: func(e *env) {
			e.claim(t1, "A")
			e.push(t1, "a")
			e.next(t1, "A", "a")
		},
		wantStates: map[jobs.ThreadKey]threadq.State{t1: {Owner: "A", Inflight: "a"}},
		wantOwnedA: []string{string(t1)},
		wantAlive:  []string{"A", "B"},
		wantRegd:   []string{"A", "B"},
	}, {
		name: "heartbeat exactly the TTL old: alive",
		setup: func(e *env) {
			e.claim(t1, "A")
			e.push(t1, "a")
			e.clk.Advance(ttl)
		},
		wantStates: map[jobs.ThreadKey]threadq.State{t1: {Owner: "A", Queued: []string{"a"}}},
		wantOwnedA: []string{string(t1)},
		wantAlive:  []string{"A", "B"},
		wantRegd:   []string{"A", "B"},
	}, {
		// Only a worker whose heartbeat stopped is buried; one that left (after
		// releasing its threads) is not, and Claim treats its leftovers as free.
		name: "left the registry: not buried",
		setup: func(e *env) {
			e.claim(t1, "A")
			e.push(t1, "a")
			e.check(e.q.Leave(e.ctx, "A"))
			e.die()
		},
		wantStates: map[jobs.ThreadKey]threadq.State{t1: {Owner: "A", Queued: []string{"a"}}},
		wantOwnedA: []string{string(t1)},
		wantAlive:  []string{"B"},
		wantRegd:   []string{"B"},
	}, {
		// The owned set is a hint: bury re-checks each thread's owner.
		name: "a listed thread another worker owns is left alone",
		setup: func(e *env) {
			e.claim(t1, "A")
			e.push(t1, "a")
			e.claim(t2, "A")
			e.push(t2, "b")
			e.die()
			e.beat("B")
			e.claim(t1, "B")
			e.check(e.rdb.SAdd(e.ctx, ownedKey("A"), string(t1)).Err())
		},
		wantOrphans: []string{string(t2)},
		wantStates: map[jobs.ThreadKey]threadq.State{
			t1: {Owner: "B", Queued: []string{"a"}},
			t2: {Queued: []string{"b"}},
		},
		wantUnown:  map[string]time.Duration{string(t2): ttl + ms(1)},
		wantOwnedB: []string{string(t1)},
		wantAlive:  []string{"B"},
		wantRegd:   []string{"B"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.beat("A")
			tc.setup(e)
			e.beat("B")
			orphans, err := e.q.Bury(e.ctx, "A")
			if err != nil || !slices.Equal(sorted(orphans), tc.wantOrphans) {
				t.Errorf("Bury(A) = %q, %v; want %q", orphans, err, tc.wantOrphans)
			}
			for _, tk := range []jobs.ThreadKey{t1, t2, t3} {
				e.wantState(tk, tc.wantStates[tk])
			}
			e.wantUnowned(tc.wantUnown)
			e.wantOffers(slices.Collect(maps.Keys(tc.wantUnown))...)
			e.wantOwned("A", tc.wantOwnedA...)
			e.wantOwned("B", tc.wantOwnedB...)
			e.wantList("Alive", e.q.Alive, tc.wantAlive...)
			e.wantList("registered workers", e.all.Alive, tc.wantRegd...)
			e.wantList("registered ready workers", e.all.Ready, tc.wantRegd...)
			if again, err := e.q.Bury(e.ctx, "A"); err != nil || len(again) != 0 {
				t.Errorf("second Bury(A) = %q, %v; want none", again, err)
			}
			// Another worker takes each offer and, claiming it, gets the item to settle.
			for _, tk := range e.drainOffers(len(tc.wantUnown)) {
				if got := e.claim(jobs.ThreadKey(tk), "B"); got != tc.wantStates[jobs.ThreadKey(tk)].Inflight {
					t.Errorf("Claim(%s, B) after the burial = %q, want %q", tk, got, tc.wantStates[jobs.ThreadKey(tk)].Inflight)
				}
			}
		})
	}
}

// Sweepers bury one dead worker at once: one of them gets the orphans, each offered once.
func TestBuryConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.beat("A")
	e.claim(t1, "A")
	e.push(t1, "a")
	e.next(t1, "A", "a")
	e.claim(t2, "A")
	e.push(t2, "b")
	e.claim(t3, "A")
	e.die()
	const n = 8
	results := make([][]jobs.ThreadKey, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = e.q.Bury(e.ctx, "A") })
	}
	wg.Wait()
	var all []jobs.ThreadKey
	got := 0
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Bury: %v", errs[i])
		}
		if len(results[i]) > 0 {
			got++
		}
		all = append(all, results[i]...)
	}
	if want := []string{string(t1), string(t2)}; got != 1 || !slices.Equal(sorted(all), want) {
		t.Errorf("%d of %d Bury calls returned orphans, %q in all; want 1 returning %q", got, n, all, want)
	}
	e.wantOffers(string(t1), string(t2))
	for _, tk := range []jobs.ThreadKey{t1, t2, t3} {
		if owner, err := e.q.Owner(e.ctx, tk); err != nil || owner != "" {
			t.Errorf("Owner(%s) = %q, %v; want none", tk, owner, err)
		}
	}
}

// --- reoffer.lua -------------------------------------------------------------------

func TestReoffer(t *testing.T) {
	t.Parallel()
	// lostOffer: w claims tk, queues item, releases it (offered now) and the offer is
	// taken by a worker that dies before claiming.
	lostOffer := func(e *env, tk jobs.ThreadKey, w, item string) {
		e.beat(w)
		e.claim(tk, w)
		e.push(tk, item)
		e.release(tk, w, true)
		e.takeOffer(tk)
	}
	cases := []struct {
		name       string
		setup      func(e *env) (cutoff time.Time)
		wantAgain  []string
		wantUnown  map[string]time.Duration
		wantStates map[jobs.ThreadKey]threadq.State
	}{{
		name: "offer taken by a worker that died before claiming",
		setup: func(e *env) time.Time {
			lostOffer(e, t1, "A", "a")
			e.clk.Advance(2 * ttl)
			return e.clk.Now().Add(-ttl)
		},
		wantAgain:  []string{string(t1)},
		wantUnown:  map[string]time.Duration{string(t1): 2 * ttl},
		wantStates: map[jobs.ThreadKey]threadq.State{t1: {Queued: []string{"a"}}},
	}, {
		name: "offered after the cutoff",
		setup: func(e *env) time.Time {
			lostOffer(e, t1, "A", "a")
			e.clk.Advance(2 * ttl)
			return t0.Add(-time.Millisecond)
		},
		wantUnown:  map[string]time.Duration{string(t1): 0},
		wantStates: map[jobs.ThreadKey]threadq.State{t1: {Queued: []string{"a"}}},
	}, {
		name: "offered exactly at the cutoff",
		setup: func(e *env) time.Time {
			lostOffer(e, t1, "A", "a")
			e.clk.Advance(2 * ttl)
			return t0
		},
		wantAgain:  []string{string(t1)},
		wantUnown:  map[string]time.Duration{string(t1): 2 * ttl},
		wantStates: map[jobs.ThreadKey]threadq.State{t1: {Queued: []string{"a"}}},
	}, {
		name: "owner alive again: dropped from the unowned set, not offered",
		setup: func(e *env) time.Time {
			e.beat("A")
			e.claim(t1, "A")
			e.push(t1, "a")
			e.die()
			e.offer(t1) // an item accepted while A looked dead
			e.takeOffer(t1)
			e.beat("A")        // A is back, still owning t1
			e.clk.Advance(ttl) // A's beat is exactly the TTL old: alive
			return e.clk.Now().Add(-ttl)
		},
		wantStates: map[jobs.ThreadKey]threadq.State{t1: {Owner: "A", Queued: []string{"a"}}},
	}, {
		name: "owner dead: offered again, still naming it",
		setup: func(e *env) time.Time {
			e.beat("A")
			e.claim(t1, "A")
			e.push(t1, "a")
			e.die()
			e.offer(t1) // at ttl+1ms
			e.takeOffer(t1)
			e.clk.Advance(2 * ttl) // now 3ttl+1ms
			return e.clk.Now().Add(-2 * ttl)
		},
		wantAgain:  []string{string(t1)},
		wantUnown:  map[string]time.Duration{string(t1): 3*ttl + ms(1)},
		wantStates: map[jobs.ThreadKey]threadq.State{t1: {Owner: "A", Queued: []string{"a"}}},
	}, {
		name: "only the lost ones among several",
		setup: func(e *env) time.Time {
			lostOffer(e, t1, "A", "a") // offered at 0, lost
			e.beat("C")
			e.claim(t2, "C")
			e.push(t2, "b")
			e.die()
			e.offer(t2) // at ttl+1ms, while C looked dead
			e.takeOffer(t2)
			e.beat("C") // C is back
			e.clk.Advance(time.Millisecond)
			lostOffer(e, t3, "D", "c")            // offered at ttl+2ms, after the cutoff
			e.clk.Advance(ttl - time.Millisecond) // now 2ttl+1ms: C's beat exactly the TTL old
			return t0.Add(ttl + time.Millisecond)
		},
		wantAgain: []string{string(t1)},
		wantUnown: map[string]time.Duration{string(t1): 2*ttl + ms(1), string(t3): ttl + ms(2)},
		wantStates: map[jobs.ThreadKey]threadq.State{
			t1: {Queued: []string{"a"}},
			t2: {Owner: "C", Queued: []string{"b"}},
			t3: {Queued: []string{"c"}},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cutoff := tc.setup(e)
			again, err := e.q.Reoffer(e.ctx, cutoff)
			if err != nil || !slices.Equal(sorted(again), tc.wantAgain) {
				t.Errorf("Reoffer = %q, %v; want %q", again, err, tc.wantAgain)
			}
			e.wantUnowned(tc.wantUnown)
			e.wantOffers(tc.wantAgain...)
			for _, tk := range []jobs.ThreadKey{t1, t2, t3} {
				e.wantState(tk, tc.wantStates[tk])
			}
			// The offer time was refreshed: the same cutoff finds nothing more.
			again, err = e.q.Reoffer(e.ctx, cutoff)
			if err != nil || len(again) != 0 {
				t.Errorf("second Reoffer = %q, %v; want none", again, err)
			}
			e.wantOffers(tc.wantAgain...)
			// A live worker takes each renewed offer and claims the thread.
			e.beat("Z")
			for _, tk := range e.drainOffers(len(tc.wantAgain)) {
				e.claim(jobs.ThreadKey(tk), "Z")
				e.wantState(jobs.ThreadKey(tk), threadq.State{Owner: "Z", Queued: tc.wantStates[jobs.ThreadKey(tk)].Queued})
			}
		})
	}
}

// Sweepers offer a lost thread again at once: it is offered once.
func TestReofferConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tk := range []jobs.ThreadKey{t1, t2} {
		e.beat("A")
		e.claim(tk, "A")
		e.push(tk, "a")
		e.release(tk, "A", true)
	}
	e.drainOffers(2)
	e.clk.Advance(2 * ttl)
	cutoff := e.clk.Now().Add(-ttl)
	const n = 8
	results := make([][]jobs.ThreadKey, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = e.q.Reoffer(e.ctx, cutoff) })
	}
	wg.Wait()
	var all []jobs.ThreadKey
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Reoffer: %v", errs[i])
		}
		all = append(all, results[i]...)
	}
	if want := []string{string(t1), string(t2)}; !slices.Equal(sorted(all), want) {
		t.Errorf("concurrent Reoffer calls returned %q in all, want %q", all, want)
	}
	e.wantOffers(string(t1), string(t2))
}

// --- offers, wake lists ------------------------------------------------------------

func TestWakeWait(t *testing.T) {
	t.Parallel()
	t.Run("woken threads, in order, per worker", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.check(e.q.Wake(e.ctx, "A", t1))
		e.check(e.q.Wake(e.ctx, "B", t2))
		e.check(e.q.Wake(e.ctx, "A", t3))
		for _, s := range []struct {
			worker string
			want   jobs.ThreadKey
		}{{"A", t1}, {"A", t3}, {"B", t2}} {
			got, err := e.q.Wait(e.ctx, s.worker, 5*time.Second)
			if err != nil || got != s.want {
				t.Errorf("Wait(%s) = %q, %v; want %q", s.worker, got, err, s.want)
			}
		}
	})
	t.Run("nothing: empty after the timeout", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.check(e.q.Wake(e.ctx, "B", t1)) // another worker's
		start := time.Now()
		got, err := e.q.Wait(e.ctx, "A", waitEmpty)
		if err != nil || got != "" {
			t.Errorf("Wait = %q, %v; want nothing", got, err)
		}
		if d := time.Since(start); d < waitEmpty-100*time.Millisecond {
			t.Errorf("Wait returned after %v, before its %v timeout", d, waitEmpty)
		}
	})
	t.Run("woken while waiting", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		type result struct {
			tk  jobs.ThreadKey
			err error
		}
		done := make(chan result, 1)
		go func() {
			tk, err := e.q.Wait(e.ctx, "A", 10*time.Second)
			done <- result{tk, err}
		}()
		e.check(e.q.Wake(e.ctx, "A", t2))
		if r := <-done; r.err != nil || r.tk != t2 {
			t.Errorf("Wait = %q, %v; want %q", r.tk, r.err, t2)
		}
	})
}

// --- the worker registry -----------------------------------------------------------

func TestWorkers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	beat := func(w string, ready bool) func() {
		return func() { e.check(e.q.Beat(e.ctx, w, ready)) }
	}
	steps := []struct {
		name                 string
		do                   func()
		alive, ready, dead   []string
		registered, regReady []string // however stale
	}{
		{name: "w1 ready, w2 not", do: func() { beat("w1", true)(); beat("w2", false)() },
			alive: []string{"w1", "w2"}, ready: []string{"w1"}, registered: []string{"w1", "w2"}, regReady: []string{"w1"}},
		{name: "w1 no longer ready", do: beat("w1", false),
			alive: []string{"w1", "w2"}, registered: []string{"w1", "w2"}},
		{name: "w2 ready", do: beat("w2", true),
			alive: []string{"w1", "w2"}, ready: []string{"w2"}, registered: []string{"w1", "w2"}, regReady: []string{"w2"}},
		{name: "silent exactly the TTL", do: func() { e.clk.Advance(ttl) },
			alive: []string{"w1", "w2"}, ready: []string{"w2"}, registered: []string{"w1", "w2"}, regReady: []string{"w2"}},
		{name: "silent a millisecond longer", do: func() { e.clk.Advance(time.Millisecond) },
			dead: []string{"w1", "w2"}, registered: []string{"w1", "w2"}, regReady: []string{"w2"}},
		{name: "w2 beats again", do: beat("w2", true),
			alive: []string{"w2"}, ready: []string{"w2"}, dead: []string{"w1"}, registered: []string{"w1", "w2"}, regReady: []string{"w2"}},
		{name: "w2 leaves", do: func() { e.check(e.q.Leave(e.ctx, "w2")) },
			dead: []string{"w1"}, registered: []string{"w1"}},
		{name: "dead w1 leaves", do: func() { e.check(e.q.Leave(e.ctx, "w1")) }},
		{name: "w3 ready, then silent", do: func() { beat("w3", true)(); e.die() },
			dead: []string{"w3"}, registered: []string{"w3"}, regReady: []string{"w3"}},
	}
	for _, s := range steps {
		s.do()
		t.Run(s.name, func(t *testing.T) {
			e := *e
			e.t = t
			e.wantList("Alive", e.q.Alive, s.alive...)
			e.wantList("Ready", e.q.Ready, s.ready...)
			e.wantList("Dead", e.q.Dead, s.dead...)
			e.wantList("registered workers", e.all.Alive, s.registered...)
			e.wantList("registered ready workers", e.all.Ready, s.regReady...)
		})
	}
}

func TestOwnerAlive(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                 string
		setup                func(e *env)
		wantOwner, wantAlive string
	}{
		{name: "unowned", setup: func(e *env) { e.push(t1, "a") }},
		{name: "live owner", setup: func(e *env) { e.beat("A"); e.claim(t1, "A") }, wantOwner: "A", wantAlive: "A"},
		{name: "owner silent exactly the TTL", setup: func(e *env) { e.beat("A"); e.claim(t1, "A"); e.clk.Advance(ttl) },
			wantOwner: "A", wantAlive: "A"},
		{name: "owner silent longer", setup: func(e *env) { e.beat("A"); e.claim(t1, "A"); e.die() }, wantOwner: "A"},
		{name: "owner beat again", setup: func(e *env) { e.beat("A"); e.claim(t1, "A"); e.die(); e.beat("A") },
			wantOwner: "A", wantAlive: "A"},
		{name: "owner left", setup: func(e *env) { e.beat("A"); e.claim(t1, "A"); e.check(e.q.Leave(e.ctx, "A")) }, wantOwner: "A"},
		{name: "owner never beat", setup: func(e *env) { e.claim(t1, "A") }, wantOwner: "A"},
		{name: "released", setup: func(e *env) { e.beat("A"); e.claim(t1, "A"); e.release(t1, "A", false) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tc.setup(e)
			if got, err := e.q.Owner(e.ctx, t1); err != nil || got != tc.wantOwner {
				t.Errorf("Owner = %q, %v; want %q", got, err, tc.wantOwner)
			}
			if got, err := e.q.OwnerAlive(e.ctx, t1); err != nil || got != tc.wantAlive {
				t.Errorf("OwnerAlive = %q, %v; want %q", got, err, tc.wantAlive)
			}
		})
	}
}

// --- PushTarget: the keys a push (jobs/records' create.lua) writes -----------------

func TestPushTarget(t *testing.T) {
	t.Parallel()
	t.Run("queue", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.check(e.rdb.RPush(e.ctx, e.q.PushTarget(t1).Queue, "a", "b").Err())
		if got, err := e.q.Items(e.ctx, t1); err != nil || !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("Items = %q, %v", got, err)
		}
		if n, err := e.q.Queued(e.ctx, t1); err != nil || n != 2 {
			t.Errorf("Queued = %d, %v; want 2", n, err)
		}
		if n, err := e.q.Queued(e.ctx, t2); err != nil || n != 0 {
			t.Errorf("Queued(other thread) = %d, %v; want 0", n, err)
		}
		e.beat("A")
		e.claim(t1, "A")
		e.next(t1, "A", "a")
		e.wantState(t1, threadq.State{Owner: "A", Queued: []string{"b"}, Inflight: "a"})
	})
	t.Run("owner and workers", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.clk.Advance(1234 * time.Millisecond)
		p := e.q.PushTarget(t1)
		if p.NowMS != t0.UnixMilli()+1234 || p.BeatTTLMS != ttl.Milliseconds() {
			t.Errorf("NowMS, BeatTTLMS = %d, %d; want %d, %d", p.NowMS, p.BeatTTLMS, t0.UnixMilli()+1234, ttl.Milliseconds())
		}
		e.beat("A")
		e.claim(t1, "A")
		if w, err := e.rdb.HGet(e.ctx, p.Owner, "worker").Result(); err != nil || w != "A" {
			t.Errorf("HGET Owner worker = %q, %v; want A", w, err)
		}
		if s, err := e.rdb.ZScore(e.ctx, p.Workers, "A").Result(); err != nil || int64(s) != p.NowMS {
			t.Errorf("ZSCORE Workers A = %v, %v; want %d", s, err, p.NowMS)
		}
		// A push that finds a live owner wakes it through WakePrefix+owner.
		e.check(e.rdb.RPush(e.ctx, p.WakePrefix+"A", string(t1)).Err())
		if tk, err := e.q.Wait(e.ctx, "A", 5*time.Second); err != nil || tk != t1 {
			t.Errorf("Wait(A) = %q, %v; want %q", tk, err, t1)
		}
	})
	t.Run("offers and unowned", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		p := e.q.PushTarget(t1)
		// A push that finds no live owner offers the thread through Unowned and Offers.
		e.push(t1, "a")
		e.offer(t1)
		e.wantUnowned(map[string]time.Duration{string(t1): 0})
		e.takeOffer(t1)
		e.clk.Advance(2 * ttl)
		if again, err := e.q.Reoffer(e.ctx, t0); err != nil || !slices.Equal(sorted(again), []string{string(t1)}) {
			t.Errorf("Reoffer = %q, %v; want %q", again, err, t1)
		}
		e.beat("A")
		e.claim(t1, "A") // and a claim takes it out of Unowned
		if n, err := e.rdb.ZCard(e.ctx, p.Unowned).Result(); err != nil || n != 0 {
			t.Errorf("ZCARD Unowned = %d, %v; want 0", n, err)
		}
		if got, err := e.rdb.LRange(e.ctx, p.Offers, 0, -1).Result(); err != nil || !slices.Equal(got, []string{string(t1)}) {
			t.Errorf("Offers = %q, %v", got, err)
		}
	})
	t.Run("keys are per thread and under the prefix", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		a, b := e.q.PushTarget(t1), e.q.PushTarget(t2)
		if a.Queue == b.Queue || a.Owner == b.Owner || a.Queue == a.Owner {
			t.Errorf("thread keys collide: %+v %+v", a, b)
		}
		if a.Workers != b.Workers || a.Unowned != b.Unowned || a.Offers != b.Offers || a.WakePrefix != b.WakePrefix {
			t.Errorf("global keys differ between threads: %+v %+v", a, b)
		}
		for _, k := range []string{a.Queue, a.Owner, a.Workers, a.Unowned, a.Offers, a.WakePrefix} {
			if !strings.HasPrefix(k, "t:") {
				t.Errorf("key %q is not under the prefix t:", k)
			}
		}
		// Another prefix is another queue on the same Redis.
		other := threadq.New(e.rdb, threadq.Config{Prefix: "u:", HeartbeatTTL: ttl, Now: e.clk.Now})
		e.push(t1, "a")
		if got, err := other.Items(e.ctx, t1); err != nil || len(got) != 0 {
			t.Errorf("other prefix's Items = %q, %v; want none", got, err)
		}
		if _, _, err := other.Claim(e.ctx, t1, "B"); err != nil {
			t.Errorf("other prefix's Claim: %v", err)
		}
		if owner, err := e.q.Owner(e.ctx, t1); err != nil || owner != "" {
			t.Errorf("Owner after the other prefix's claim = %q, %v; want none", owner, err)
		}
	})
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"}) // never dialled: New does no I/O
	t.Cleanup(func() { rdb.Close() })
	q := threadq.New(rdb, threadq.Config{})
	if q.HeartbeatTTL() != threadq.DefaultHeartbeatTTL || threadq.DefaultHeartbeatTTL != 15*time.Second {
		t.Errorf("HeartbeatTTL = %v, want 15s", q.HeartbeatTTL())
	}
	p := q.PushTarget(t1)
	if !strings.HasPrefix(p.Queue, "ci:") || !strings.HasPrefix(p.Offers, "ci:") {
		t.Errorf("keys %q, %q are not under the default prefix ci:", p.Queue, p.Offers)
	}
	if p.BeatTTLMS != 15000 {
		t.Errorf("BeatTTLMS = %d, want 15000", p.BeatTTLMS)
	}
	if d := time.Since(time.UnixMilli(p.NowMS)); d < 0 || d > time.Minute {
		t.Errorf("default clock: NowMS is %v from the wall clock", d)
	}
}
