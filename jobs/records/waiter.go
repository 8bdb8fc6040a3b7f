package records

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Waiter tells goroutines when executions end. One Redis subscription serves every
// waiter in the process, so thousands of long-polls cost one connection. A message
// lost while the connection is down only makes a waiter wait until its own deadline.
type Waiter struct {
	rdb     redis.UniversalClient
	channel string

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
	sub     *redis.PubSub
	stopped chan struct{}
}

// NewWaiter returns a Waiter for the records' done channel. Call Start before Watch.
func (s *Store) NewWaiter() *Waiter {
	return &Waiter{rdb: s.rdb, channel: s.doneChannel(), waiters: map[string]map[chan struct{}]struct{}{}}
}

// Start subscribes and dispatches messages until Shutdown.
func (w *Waiter) Start(ctx context.Context) error {
	sub := w.rdb.Subscribe(ctx, w.channel)
	if _, err := sub.Receive(ctx); err != nil { // the subscription confirmation
		sub.Close()
		return fmt.Errorf("subscribe %s: %w", w.channel, err)
	}
	w.sub, w.stopped = sub, make(chan struct{})
	go func() {
		defer close(w.stopped)
		for msg := range sub.Channel() {
			w.notify(msg.Payload)
		}
	}()
	return nil
}

// Shutdown ends the subscription and waits for the dispatcher to stop.
func (w *Waiter) Shutdown() {
	if w.sub != nil {
		w.sub.Close()
		<-w.stopped
	}
}

// Watch returns a channel closed when execution id is announced as ended, and a
// function to stop watching. Read the record after Watch, not before, so an end
// between the two is never missed.
func (w *Waiter) Watch(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	w.mu.Lock()
	if w.waiters[id] == nil {
		w.waiters[id] = map[chan struct{}]struct{}{}
	}
	w.waiters[id][ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if set, ok := w.waiters[id]; ok {
			delete(set, ch)
			if len(set) == 0 {
				delete(w.waiters, id)
			}
		}
	}
}

func (w *Waiter) notify(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.waiters[id] {
		close(ch)
	}
	delete(w.waiters, id)
}
