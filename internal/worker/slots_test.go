package worker

import (
	"context"
	"testing"
	"time"
)

// Alone, a tenant may use every slot; past the size it waits, and gets a freed one.
func TestSlotsAloneUseAll(t *testing.T) {
	ctx := context.Background()
	s := newSlots(4)
	for range 4 {
		if !s.acquire(ctx, "acme") {
			t.Fatal("acquire")
		}
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if s.acquire(short, "acme") {
		t.Fatal("acquired a slot beyond the size")
	}
	done := make(chan bool)
	go func() { done <- s.acquire(ctx, "globex") }()
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.waiting["globex"] == 1 })
	s.release("acme")
	if !<-done {
		t.Fatal("globex did not get the freed slot")
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
	s.release("acme")
	if !<-globex {
		t.Fatal("globex never got the slot")
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
