package threadq_test

import (
	"errors"
	"testing"

	"github.com/codeinterp/codeinterp/jobs/threadq"
)

// The interleaving seen in production: worker A owns a thread and has an item in
// flight; A stalls past its heartbeat TTL, B takes the thread over; A wakes up and
// goes on. Every step A takes with its old lease is refused, and leaves B's state as
// it was.
func TestFenceRefusesStaleOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.beat("A")
	e.claim(t1, "A")
	e.push(t1, "x", "y")
	e.next(t1, "A", "x")
	a := e.lease(t1, "A")

	e.die() // A stalls
	e.beat("B")
	if inflight := e.claim(t1, "B"); inflight != "x" {
		t.Fatalf("B's takeover saw in flight %q, want x", inflight)
	}
	b := e.lease(t1, "B")
	if b.Token <= a.Token {
		t.Fatalf("B's token %d is not above A's %d", b.Token, a.Token)
	}
	e.beat("A") // A wakes up and beats again: still not the owner
	want := threadq.State{Owner: "B", Queued: []string{"y"}, Inflight: "x"}

	if got, err := e.q.Next(e.ctx, a); !errors.Is(err, threadq.ErrLost) || got != "" {
		t.Errorf("stale Next = %q, %v; want ErrLost", got, err)
	}
	if err := e.q.Requeue(e.ctx, a, "x"); !errors.Is(err, threadq.ErrLost) {
		t.Errorf("stale Requeue = %v; want ErrLost", err)
	}
	if left, err := e.q.Release(e.ctx, a); err != nil || left {
		t.Errorf("stale Release = %v, %v; want a no-op", left, err)
	}
	e.wantState(t1, want)
	h, err := e.q.Holds(e.ctx, []threadq.Lease{a, b})
	e.check(err)
	if h[0].Held || h[0].Owner != "B" || !h[1].Held {
		t.Errorf("Holds(a, b) = %+v; want a lost to B, b held", h)
	}
	// The same worker claiming again gets a new lease; its old one is stale too.
	e.release(t1, "B", true)
	e.takeOffer(t1)
	e.claim(t1, "A")
	if a2 := e.lease(t1, "A"); a2.Token <= b.Token {
		t.Errorf("A's new token %d is not above B's %d", a2.Token, b.Token)
	}
	if _, err := e.q.Next(e.ctx, a); !errors.Is(err, threadq.ErrLost) {
		t.Errorf("Next with A's first lease after A claimed again = %v; want ErrLost", err)
	}
	e.next(t1, "A", "y")
}

// A Redis crash can lose the last second of writes, the claim that gave the last
// token among them. Tokens follow Redis's clock, so the next claim still gets a larger
// one; and they never go back even if the clock does.
func TestFenceTokensGrowAcrossLostWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.beat("A", "B")
	e.claim(t1, "A")
	a := e.lease(t1, "A")
	// The crash: the claim's writes are gone.
	e.check(e.rdb.Del(e.ctx, "t:t:"+string(t1)+":own", "t:t:"+string(t1)+":fence").Err())
	e.claim(t1, "B")
	if b := e.lease(t1, "B"); b.Token <= a.Token {
		t.Fatalf("token after the lost claim %d is not above the lost one %d", b.Token, a.Token)
	}
	if _, err := e.q.Next(e.ctx, a); !errors.Is(err, threadq.ErrLost) {
		t.Errorf("Next with the lost lease = %v; want ErrLost", err)
	}
	// A last token ahead of the clock (the clock stepped back): the next is one more.
	const ahead = int64(1) << 52
	e.check(e.rdb.Set(e.ctx, "t:t:"+string(t1)+":fence", ahead, 0).Err())
	e.release(t1, "B", false)
	e.claim(t1, "A")
	if got := e.lease(t1, "A").Token; got != ahead+1 {
		t.Errorf("token after a last token ahead of the clock = %d, want %d", got, ahead+1)
	}
}
