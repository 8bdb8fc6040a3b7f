package jobs

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ThreadQueue is the per-thread order, kept in Redis. Each thread has a list of
// queued item ids and, while a worker serves it, an owner. Only the owner takes
// items, one at a time, marking each in flight, so a thread's items run in the order
// they were accepted and never overlap, across any number of workers. A worker owns a
// thread for as long as its heartbeat lasts; when it stops, a sweep frees its threads
// for others. Every move between states is one Lua script. See docs/DESIGN.md.
type ThreadQueue struct{ r *Records }

// Threads returns the thread queues.
func (r *Records) Threads() *ThreadQueue { return &ThreadQueue{r: r} }

var (
	//go:embed lua/claim.lua
	claimSrc string
	//go:embed lua/next.lua
	nextSrc string
	//go:embed lua/release.lua
	releaseSrc string
	//go:embed lua/bury.lua
	burySrc string
	//go:embed lua/reoffer.lua
	reofferSrc string

	claimScript   = redis.NewScript(claimSrc)
	nextScript    = redis.NewScript(nextSrc)
	releaseScript = redis.NewScript(releaseSrc)
	buryScript    = redis.NewScript(burySrc)
	reofferScript = redis.NewScript(reofferSrc)
)

// Errors of thread ownership.
var (
	ErrOwned = errors.New("thread owned by another live worker")
	ErrLost  = errors.New("thread no longer owned by this worker")
)

func (q *ThreadQueue) k(tk, what string) string { return q.r.thread(tk, what) }
func (q *ThreadQueue) wake(worker string) string {
	return q.r.prefix + "wake:" + worker
}

// Claim makes worker the owner of thread tk. It returns the id of the item a previous
// owner had in flight ("" if none), or ErrOwned with the live owner's id.
func (q *ThreadQueue) Claim(ctx context.Context, tk, worker string) (inflight string, err error) {
	res, err := claimScript.Run(ctx, q.r.rdb, []string{q.k(tk, "own"), q.k(tk, "inflight"), q.r.workersKey(), q.r.unownedKey()},
		worker, time.Now().UnixMilli(), q.r.beatTTL.Milliseconds(), tk, q.r.prefix+"owned:").StringSlice()
	if err != nil {
		return "", fmt.Errorf("claim thread %s: %w", tk, err)
	}
	if res[0] == "owned" {
		return res[1], ErrOwned
	}
	return res[1], nil
}

// Next takes the next item of tk for its owner and marks it in flight. It returns ""
// when the queue is empty, and ErrLost when worker no longer owns the thread.
func (q *ThreadQueue) Next(ctx context.Context, tk, worker string) (string, error) {
	res, err := nextScript.Run(ctx, q.r.rdb, []string{q.k(tk, "own"), q.k(tk, "q"), q.k(tk, "inflight")}, worker).StringSlice()
	if err != nil {
		return "", fmt.Errorf("next item of thread %s: %w", tk, err)
	}
	switch res[0] {
	case "next":
		return res[1], nil
	case "lost":
		return "", ErrLost
	}
	return "", nil
}

// Release lets go of tk. If work is left, the thread is offered to other workers.
func (q *ThreadQueue) Release(ctx context.Context, tk, worker string) (workLeft bool, err error) {
	res, err := releaseScript.Run(ctx, q.r.rdb, []string{q.k(tk, "own"), q.k(tk, "q"), q.k(tk, "inflight"), q.r.ownedKey(worker), q.r.unownedKey(), q.r.offersKey()},
		worker, tk, time.Now().UnixMilli()).Text()
	if err != nil {
		return false, fmt.Errorf("release thread %s: %w", tk, err)
	}
	return res == "released_work", nil
}

// Bury frees the threads of a worker whose heartbeat stopped, offers those with work
// left to other workers and returns them. Each dead worker is buried once, however
// many sweepers try.
func (q *ThreadQueue) Bury(ctx context.Context, worker string) ([]string, error) {
	orphans, err := buryScript.Run(ctx, q.r.rdb, []string{q.r.workersKey(), q.r.ownedKey(worker), q.r.readyKey(), q.r.unownedKey(), q.r.offersKey()},
		worker, time.Now().UnixMilli(), q.r.beatTTL.Milliseconds(), q.r.prefix+"t:").StringSlice()
	if err != nil {
		return nil, fmt.Errorf("bury worker %s: %w", worker, err)
	}
	return orphans, nil
}

// Reoffer offers again the threads that have waited for an owner since before
// cutoff (the worker that took the offer may have died) and returns them.
func (q *ThreadQueue) Reoffer(ctx context.Context, cutoff time.Time) ([]string, error) {
	tks, err := q.r.rdb.ZRangeByScore(ctx, q.r.unownedKey(), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(cutoff.UnixMilli(), 10), Count: 100,
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("list unclaimed threads: %w", err)
	}
	var again []string
	for _, tk := range tks {
		n, err := reofferScript.Run(ctx, q.r.rdb, []string{q.r.unownedKey(), q.k(tk, "own"), q.r.workersKey(), q.r.offersKey()},
			tk, cutoff.UnixMilli(), time.Now().UnixMilli(), q.r.beatTTL.Milliseconds()).Int()
		if err != nil {
			return again, fmt.Errorf("offer thread %s again: %w", tk, err)
		}
		if n == 1 {
			again = append(again, tk)
		}
	}
	return again, nil
}

// TakeOffer blocks until a thread is offered, or timeout passes ("" then). The
// worker that takes an offer should Claim the thread.
func (q *ThreadQueue) TakeOffer(ctx context.Context, timeout time.Duration) (string, error) {
	return q.blpop(ctx, q.r.offersKey(), timeout)
}

// Wait blocks until a thread of worker's is woken, or timeout passes ("" then). It
// holds one Redis connection while it blocks, and costs Redis nothing.
func (q *ThreadQueue) Wait(ctx context.Context, worker string, timeout time.Duration) (string, error) {
	return q.blpop(ctx, q.wake(worker), timeout)
}

func (q *ThreadQueue) blpop(ctx context.Context, key string, timeout time.Duration) (string, error) {
	res, err := q.r.rdb.BLPop(ctx, timeout, key).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("wait for thread work: %w", err)
	}
	return res[1], nil
}

// Wake asks worker to look at thread tk.
func (q *ThreadQueue) Wake(ctx context.Context, worker, tk string) error {
	return q.r.rdb.RPush(ctx, q.wake(worker), tk).Err()
}

// Queued returns how many items wait in tk's queue.
func (q *ThreadQueue) Queued(ctx context.Context, tk string) (int64, error) {
	return q.r.rdb.LLen(ctx, q.k(tk, "q")).Result()
}

// Owner returns the worker owning tk, or "".
func (q *ThreadQueue) Owner(ctx context.Context, tk string) (string, error) {
	w, err := q.r.rdb.HGet(ctx, q.k(tk, "own"), "worker").Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return w, err
}

// ThreadKey is the queue's name for a tenant's thread.
func ThreadKey(tenant, thread string) string { return threadKey(tenant, thread) }

// SplitThreadKey undoes ThreadKey.
func SplitThreadKey(tk string) (tenant, thread string) {
	tenant, thread, _ = strings.Cut(tk, "/")
	return tenant, thread
}

// Items returns the ids queued in tk, in order.
func (q *ThreadQueue) Items(ctx context.Context, tk string) ([]string, error) {
	return q.r.rdb.LRange(ctx, q.k(tk, "q"), 0, -1).Result()
}

// OwnerAlive returns the worker owning tk if its heartbeat is current, or "".
func (q *ThreadQueue) OwnerAlive(ctx context.Context, tk string, now time.Time) (string, error) {
	w, err := q.Owner(ctx, tk)
	if err != nil || w == "" {
		return "", err
	}
	score, err := q.r.rdb.ZScore(ctx, q.r.workersKey(), w).Result()
	if errors.Is(err, redis.Nil) || (err == nil && int64(score) < now.Add(-q.r.beatTTL).UnixMilli()) {
		return "", nil
	}
	return w, err
}
