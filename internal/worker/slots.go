package worker

import (
	"context"
	"sync"
)

// slots bounds the thread items a worker runs at once, fairly across tenants: a
// tenant may hold more than its share (half the slots, at least one) only while no
// other tenant waits for one. Without it, one tenant's burst of new threads holds
// every slot while their sandboxes start, and another tenant's warm thread waits
// behind them.
type slots struct {
	mu      sync.Mutex
	size    int
	share   int
	total   int
	held    map[string]int
	waiting map[string]int
	changed chan struct{} // closed and replaced on every release
}

func newSlots(size int) *slots {
	return &slots{size: size, share: max(1, size/2), held: map[string]int{}, waiting: map[string]int{}, changed: make(chan struct{})}
}

// acquire takes a slot for tenant, waiting while none is free or the tenant is at its
// share and another tenant waits; false if ctx ends first.
func (s *slots) acquire(ctx context.Context, tenant string) bool {
	s.mu.Lock()
	for {
		if s.total < s.size && (s.held[tenant] < s.share || !s.othersWait(tenant)) {
			s.total++
			s.held[tenant]++
			s.mu.Unlock()
			return true
		}
		s.waiting[tenant]++
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
		}
		s.mu.Lock()
		if s.waiting[tenant]--; s.waiting[tenant] == 0 {
			delete(s.waiting, tenant)
		}
		if ctx.Err() != nil {
			s.mu.Unlock()
			return false
		}
	}
}

func (s *slots) othersWait(tenant string) bool {
	for t := range s.waiting {
		if t != tenant {
			return true
		}
	}
	return false
}

// release frees a slot of tenant's.
func (s *slots) release(tenant string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total--
	if s.held[tenant]--; s.held[tenant] == 0 {
		delete(s.held, tenant)
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// full reports whether every slot is taken.
func (s *slots) full() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total >= s.size
}
