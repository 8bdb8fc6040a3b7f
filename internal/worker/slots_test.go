package worker

import (
	"context"
	"testing"
	"time"
)

// Alone, a tenant may use every slot but the reserve; another tenant takes the
// reserve at once, and past the size waits for a freed slot.
func TestSlotsAloneLeaveTheReserve(t *testing.T) {
	ctx := context.Background()
	s := newSlots(4)
	for range 3 {
		if !s.acquire(ctx, "acme") {
			t.Fatal("acquire")
		}
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if s.acquire(short, "acme") {
		t.Fatal("a tenant past its share took the reserve")
	}
	if !s.acquire(ctx, "globex") {
		t.Fatal("globex did not get the reserve")
	}
	done := make(chan bool)
	go func() { done <- s.acquire(ctx, "initech") }()
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.waiting["initech"] == 1 })
	s.release("acme")
	if !<-done {
		t.Fatal("initech did not get the freed slot")
	}
}

// A single slot has no reserve: the one tenant uses it.
func TestSlotsSingleHasNoReserve(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !newSlots(1).acquire(ctx, "acme") {
		t.Fatal("the only slot was not taken")
	}
}

// With another tenant waiting, a tenant at its share does not take a freed slot.
func TestSlotsShareYields(t *testing.T) {
	ctx := context.Background()
	s := newSlots(2) // share 1
	s.acquire(ctx, "acme")
	s.acquire(ctx, "globex")
	acme := make(chan bool, 1)
	globex := make(chan bool, 1)
	go func() { acme <- s.acquire(ctx, "acme") }()
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.waiting["acme"] == 1 })
	go func() { globex <- s.acquire(ctx, "globex") }()
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.waiting["globex"] == 1 })
	// acme's slot frees: acme holds none now, so it may take it back (it is under its
	// share); globex, at its share with acme waiting, must keep waiting.
	s.release("acme")
	if !<-acme {
		t.Fatal("acme")
	}
	select {
	case <-globex:
		t.Fatal("globex passed its share while acme waited")
	default:
	}
	// acme is gone: globex, at its share, still leaves the reserve free, until one
	// of its own items ends.
	s.release("acme")
	s.mu.Lock()
	fits := s.fits("globex")
	s.mu.Unlock()
	if fits {
		t.Fatal("globex may take the reserve")
	}
	select {
	case <-globex:
		t.Fatal("globex took the reserve")
	default:
	}
	s.release("globex")
	select {
	case ok := <-globex:
		if !ok {
			t.Fatal("globex")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("globex never got the slot it freed")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatal("condition never held")
		case <-tick.C:
		}
	}
}
