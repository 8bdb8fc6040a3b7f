package worker

import (
	"errors"
	"sync"
)

// ErrTenantBusy postpones a one-off: its tenant already runs its share of this
// worker's one-off slots. asynq gives the task back to the queue (a postponement is
// not a failure: it uses none of the task's retries, see app's IsFailure), and the
// slot takes the next task, another tenant's if one waits.
var ErrTenantBusy = errors.New("the tenant runs its share of this worker's one-offs; postponed")

// oneOffShares bounds the one-offs each tenant runs at once on this worker. asynq
// hands out tasks first in, first out: without a bound, one tenant's burst of long
// one-offs would hold every slot of every worker, and another tenant's print(1) would
// wait behind it for as long as the burst runs.
type oneOffShares struct {
	mu    sync.Mutex
	share int
	held  map[string]int
}

func newOneOffShares(share int) *oneOffShares {
	return &oneOffShares{share: share, held: map[string]int{}}
}

// take takes one of tenant's share; false when the tenant holds all of it.
func (s *oneOffShares) take(tenant string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[tenant] >= s.share {
		return false
	}
	s.held[tenant]++
	return true
}

func (s *oneOffShares) release(tenant string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[tenant]--; s.held[tenant] <= 0 {
		delete(s.held, tenant)
	}
}
