package records

import (
	"context"
	"fmt"
	"sync"
	"time"

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

// Start subscribes and dispatches messages until Shutdown. It does not wait for a
// Redis that is down or loading its data (see subscribe); it fails only if ctx ends.
func (w *Waiter) Start(ctx context.Context) error {
	sub, err := subscribe(ctx, w.rdb, w.channel)
	if err != nil {
		return err
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

// confirmWait bounds how long subscribe waits for Redis to confirm a subscription.
const confirmWait = 5 * time.Second

// subscribe subscribes to channel. While Redis answers, it returns once Redis has
// confirmed the subscription, so no message published afterwards is missed. While
// Redis is down, restarting or hanging, it returns after at most confirmWait without
// an error: go-redis connects the subscription as soon as it can and subscribes
// again after every outage, for as long as its Channel is read. Messages published
// while it is not connected are lost (see DESIGN.md, "Redis durability"). It fails
// only if ctx ends.
func subscribe(ctx context.Context, rdb redis.UniversalClient, channel string) (*redis.PubSub, error) {
	sub := rdb.Subscribe(ctx, channel)
	if _, err := sub.ReceiveTimeout(ctx, confirmWait); err != nil && ctx.Err() != nil {
		sub.Close()
		return nil, fmt.Errorf("subscribe %s: %w", channel, ctx.Err())
	}
	return sub, nil
}
