package threadq

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/requeue.lua
	requeueSrc    string
	requeueScript = redis.NewScript(requeueSrc)
)

// ErrNotInFlight means the item is not the one the thread's owner has in flight.
var ErrNotInFlight = errors.New("not the thread's item in flight")

// Requeue puts item id, which the lease holder took with Next and could not start
// (its record could not be read, say), back at the head of the thread's queue, so the
// next Next returns it again. It fails with ErrLost if the lease is no longer the
// thread's, and with ErrNotInFlight if id is not the item in flight; then nothing
// changes.
func (q *Queue) Requeue(ctx context.Context, l Lease, id string) error {
	tk := l.Thread
	res, err := requeueScript.Run(ctx, q.rdb, []string{q.thread(tk, "own"), q.thread(tk, "q"), q.thread(tk, "inflight")}, l.Worker, id, l.token()).Text()
	if err != nil {
		return fmt.Errorf("requeue %s on thread %s: %w", id, tk, err)
	}
	switch res {
	case "lost":
		return ErrLost
	case "not_inflight":
		return fmt.Errorf("requeue %s on thread %s: %w", id, tk, ErrNotInFlight)
	}
	return nil
}
