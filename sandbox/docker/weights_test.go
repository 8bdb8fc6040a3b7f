package docker

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"
)

func TestSharesFor(t *testing.T) {
	for n, want := range map[int]int64{0: 1024, 1: 1024, 2: 512, 3: 256, 4: 256, 5: 128, 8: 128, 9: 64, 1000: 2} {
		if got := sharesFor(n); got != want {
			t.Errorf("sharesFor(%d) = %d, want %d", n, got, want)
		}
	}
}

// A tenant's running sandboxes share its weight; pausing (leave) gives it back to
// the others, and another tenant's weight never moves.
func TestWeightsPerTenant(t *testing.T) {
	var mu sync.Mutex
	set := map[string]int64{}
	w := newWeights(func(_ context.Context, id string, shares int64) error {
		mu.Lock()
		defer mu.Unlock()
		set[id] = shares
		return nil
	})
	settled := func(want map[string]int64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			w.mu.Lock()
			ok := maps.Equal(set, want) && len(w.busy) == 0
			got := maps.Clone(set)
			w.mu.Unlock()
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("shares %v, want %v", got, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	w.join("acme", "a1", baseShares)
	w.join("globex", "g1", baseShares)
	settled(map[string]int64{}) // both alone: already at base, nothing to set
	w.join("acme", "a2", baseShares)
	w.join("acme", "a3", baseShares)
	settled(map[string]int64{"a1": 256, "a2": 256, "a3": 256})
	w.leave("acme", "a3")
	settled(map[string]int64{"a1": 512, "a2": 512, "a3": 256})
	w.join("acme", "a3", 0) // resumed: its old weight is unknown
	settled(map[string]int64{"a1": 256, "a2": 256, "a3": 256})
	w.leave("acme", "a1")
	settled(map[string]int64{"a1": 256, "a2": 512, "a3": 512})
	w.leave("globex", "g1")
	w.leave("nobody", "x") // not counted: nothing happens
	settled(map[string]int64{"a1": 256, "a2": 512, "a3": 512})
}

// Without an update (gVisor) nothing is counted or set.
func TestWeightsFixed(t *testing.T) {
	w := newWeights(nil)
	w.join("acme", "a1", baseShares)
	w.join("acme", "a2", baseShares)
	if len(w.live) != 0 || len(w.busy) != 0 {
		t.Fatalf("fixed weights counted: %v", w.live)
	}
}
