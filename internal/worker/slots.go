package worker

import (
	"context"
	"sync"
)

// slots bounds the thread items a worker runs at once, fairly across tenants: a
// tenant may hold more than its share (half the slots, at least one) only while no
// other tenant waits for one, and never the last free slot (the reserve). Without the
// share, one tenant's burst of new threads holds every slot while their sandboxes
// start, and another tenant's warm thread waits behind them; without the reserve,
// it still waits for one of the burst's items to end (measured under make bench's
// noisy neighbour: hundreds of milliseconds for a 5 ms print(1)).
type slots struct {
	mu      sync.Mutex
	size    int
	share   int
	reserve int // slots a tenant past its share leaves free: 1, or 0 with a single slot
	total   int
	held    map[string]int
	waiting map[string]int
	changed chan struct{} // closed and replaced on every release
}

func newSlots(size int) *slots {
	return &slots{size: size, share: max(1, size/2), reserve: min(1, size-1), held: map[string]int{}, waiting: map[string]int{}, changed: make(chan struct{})}
}

// acquire takes a slot for tenant, waiting while it may not take one (fits); false
// if ctx ends first.
func (s *slots) acquire(ctx context.Context, tenant string) bool {
	s.mu.Lock()
	for {
		if s.fits(tenant) {
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

// fits reports whether tenant may take a slot now: any free one within its share;
// past its share only while no other tenant waits and the reserve stays free, so the
// next item of another tenant starts at once.
func (s *slots) fits(tenant string) bool {
	switch {
	case s.total >= s.size:
		return false
	case s.held[tenant] < s.share:
		return true
	}
	return !s.othersWait(tenant) && s.total < s.size-s.reserve
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
