package threadq

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
)

var (
	//go:embed lua/requeue.lua
	requeueSrc    string
	requeueScript = redis.NewScript(requeueSrc)
)

// ErrNotInFlight means the item is not the one the thread's owner has in flight.
var ErrNotInFlight = errors.New("not the thread's item in flight")

// Requeue puts item id, which worker took with Next and could not start (its record
// could not be read, say), back at the head of thread tk's queue, so the next Next
// returns it again. It fails with ErrLost if worker no longer owns the thread, and
// with ErrNotInFlight if id is not the item in flight; then nothing changes.
func (q *Queue) Requeue(ctx context.Context, tk jobs.ThreadKey, worker, id string) error {
	res, err := requeueScript.Run(ctx, q.rdb, []string{q.thread(tk, "own"), q.thread(tk, "q"), q.thread(tk, "inflight")}, worker, id).Text()
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
