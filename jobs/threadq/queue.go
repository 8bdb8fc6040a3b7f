package threadq

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
)

// DefaultHeartbeatTTL is how long a worker counts as alive after its last heartbeat.
const DefaultHeartbeatTTL = 15 * time.Second

// Config configures a [Queue].
type Config struct {
	Prefix       string        // namespaces every key; default "ci:"
	HeartbeatTTL time.Duration // a worker silent for longer is dead; default 15 s
	Now          func() time.Time
}

// Queue is the per-thread order and the worker registry.
type Queue struct {
	rdb     redis.UniversalClient
	prefix  string
	beatTTL time.Duration
	now     func() time.Time
}

// New returns the queue over rdb. It does no I/O.
func New(rdb redis.UniversalClient, cfg Config) *Queue {
	q := &Queue{rdb: rdb, prefix: cmp.Or(cfg.Prefix, "ci:"), beatTTL: cmp.Or(cfg.HeartbeatTTL, DefaultHeartbeatTTL), now: cfg.Now}
	if q.now == nil {
		q.now = time.Now
	}
	return q
}

// HeartbeatTTL returns how long a silent worker counts as alive.
func (q *Queue) HeartbeatTTL() time.Duration { return q.beatTTL }

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

// Push is what a script that accepts an item onto a thread (jobs/records' create)
// needs of the queue, so that storing a record and queueing it are one atomic step
// without the record store building the queue's keys.
type Push struct {
	Queue, Owner             string // the thread's list and owner hash
	Workers, Unowned, Offers string // the registry and the offers
	WakePrefix               string // + worker: its wake list
	NowMS, BeatTTLMS         int64
}

// PushTarget returns the keys and clock of a push onto thread tk.
func (q *Queue) PushTarget(tk jobs.ThreadKey) Push {
	return Push{
		Queue: q.thread(tk, "q"), Owner: q.thread(tk, "own"),
		Workers: q.workersKey(), Unowned: q.unownedKey(), Offers: q.offersKey(), WakePrefix: q.wakePrefix(),
		NowMS: q.now().UnixMilli(), BeatTTLMS: q.beatTTL.Milliseconds(),
	}
}

// Claim makes worker the owner of thread tk under a new lease, whose token is larger
// than any the thread had. It also returns the id of the item a previous owner had in
// flight ("" if none). If another live worker owns the thread, it fails with ErrOwned
// and inflight is that worker's id.
func (q *Queue) Claim(ctx context.Context, tk jobs.ThreadKey, worker string) (lease Lease, inflight string, err error) {
	res, err := claimScript.Run(ctx, q.rdb, []string{q.thread(tk, "own"), q.thread(tk, "inflight"), q.workersKey(), q.unownedKey(), q.thread(tk, "fence")},
		worker, q.now().UnixMilli(), q.beatTTL.Milliseconds(), string(tk), q.ownedPrefix()).StringSlice()
	if err != nil {
		return Lease{}, "", fmt.Errorf("claim thread %s: %w", tk, err)
	}
	if res[0] == "owned" {
		return Lease{}, res[1], ErrOwned
	}
	token, err := strconv.ParseInt(res[2], 10, 64)
	if err != nil {
		return Lease{}, "", fmt.Errorf("claim thread %s: token %q: %w", tk, res[2], err)
	}
	return Lease{Thread: tk, Worker: worker, Token: token}, res[1], nil
}

// Next takes the next item of the leased thread and marks it in flight. It returns
// "" when the queue is empty, and ErrLost when the lease is no longer the thread's.
func (q *Queue) Next(ctx context.Context, l Lease) (string, error) {
	tk := l.Thread
	res, err := nextScript.Run(ctx, q.rdb, []string{q.thread(tk, "own"), q.thread(tk, "q"), q.thread(tk, "inflight")}, l.Worker, l.token()).StringSlice()
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

// Release lets go of the leased thread. If work is left, the thread is offered to
// other workers. A lease that is no longer the thread's changes nothing.
func (q *Queue) Release(ctx context.Context, l Lease) (workLeft bool, err error) {
	tk := l.Thread
	res, err := releaseScript.Run(ctx, q.rdb, []string{q.thread(tk, "own"), q.thread(tk, "q"), q.thread(tk, "inflight"), q.ownedKey(l.Worker), q.unownedKey(), q.offersKey()},
		l.Worker, string(tk), q.now().UnixMilli(), l.token()).Text()
	if err != nil {
		return false, fmt.Errorf("release thread %s: %w", tk, err)
	}
	return res == "released_work", nil
}

// Bury frees the threads of a worker whose heartbeat stopped, offers those with work
// left to other workers and returns them. Each dead worker is buried once, however
// many sweepers try.
func (q *Queue) Bury(ctx context.Context, worker string) ([]jobs.ThreadKey, error) {
	orphans, err := buryScript.Run(ctx, q.rdb, []string{q.workersKey(), q.ownedKey(worker), q.readyKey(), q.unownedKey(), q.offersKey()},
		worker, q.now().UnixMilli(), q.beatTTL.Milliseconds(), q.threadPrefix()).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("bury worker %s: %w", worker, err)
	}
	return threadKeys(orphans), nil
}

// Reoffer offers again the threads that have waited for an owner since before
// cutoff (the worker that took the offer may have died) and returns them.
func (q *Queue) Reoffer(ctx context.Context, cutoff time.Time) ([]jobs.ThreadKey, error) {
	tks, err := q.rdb.ZRangeByScore(ctx, q.unownedKey(), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(cutoff.UnixMilli(), 10), Count: 100,
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("list unclaimed threads: %w", err)
	}
	var again []jobs.ThreadKey
	for _, tk := range tks {
		n, err := reofferScript.Run(ctx, q.rdb, []string{q.unownedKey(), q.thread(jobs.ThreadKey(tk), "own"), q.workersKey(), q.offersKey()},
			tk, cutoff.UnixMilli(), q.now().UnixMilli(), q.beatTTL.Milliseconds()).Int()
		if err != nil {
			return again, fmt.Errorf("offer thread %s again: %w", tk, err)
		}
		if n == 1 {
			again = append(again, jobs.ThreadKey(tk))
		}
	}
	return again, nil
}

// TakeOffer blocks until a thread is offered, or timeout passes ("" then). The
// worker that takes an offer should Claim the thread.
func (q *Queue) TakeOffer(ctx context.Context, timeout time.Duration) (jobs.ThreadKey, error) {
	return q.blpop(ctx, q.offersKey(), timeout)
}

// Wait blocks until a thread of worker's is woken, or timeout passes ("" then). It
// holds one Redis connection while it blocks, and costs Redis nothing.
func (q *Queue) Wait(ctx context.Context, worker string, timeout time.Duration) (jobs.ThreadKey, error) {
	return q.blpop(ctx, q.wakeKey(worker), timeout)
}

func (q *Queue) blpop(ctx context.Context, key string, timeout time.Duration) (jobs.ThreadKey, error) {
	res, err := q.rdb.BLPop(ctx, timeout, key).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("wait for thread work: %w", err)
	}
	return jobs.ThreadKey(res[1]), nil
}

// Wake asks worker to look at thread tk.
func (q *Queue) Wake(ctx context.Context, worker string, tk jobs.ThreadKey) error {
	return q.rdb.RPush(ctx, q.wakeKey(worker), string(tk)).Err()
}

// Queued returns how many items wait in tk's queue.
func (q *Queue) Queued(ctx context.Context, tk jobs.ThreadKey) (int64, error) {
	return q.rdb.LLen(ctx, q.thread(tk, "q")).Result()
}

// Items returns the ids queued in tk, in order.
func (q *Queue) Items(ctx context.Context, tk jobs.ThreadKey) ([]string, error) {
	return q.rdb.LRange(ctx, q.thread(tk, "q"), 0, -1).Result()
}

// Owner returns the worker owning tk, or "".
func (q *Queue) Owner(ctx context.Context, tk jobs.ThreadKey) (string, error) {
	w, err := q.rdb.HGet(ctx, q.thread(tk, "own"), "worker").Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return w, err
}

// OwnerAlive returns the worker owning tk if its heartbeat is current, or "".
func (q *Queue) OwnerAlive(ctx context.Context, tk jobs.ThreadKey) (string, error) {
	w, err := q.Owner(ctx, tk)
	if err != nil || w == "" {
		return "", err
	}
	score, err := q.rdb.ZScore(ctx, q.workersKey(), w).Result()
	if errors.Is(err, redis.Nil) || (err == nil && int64(score) < q.now().Add(-q.beatTTL).UnixMilli()) {
		return "", nil
	}
	return w, err
}

func threadKeys(ss []string) []jobs.ThreadKey {
	out := make([]jobs.ThreadKey, len(ss))
	for i, s := range ss {
		out[i] = jobs.ThreadKey(s)
	}
	return out
}

// State is a snapshot of one thread's queue, for diagnostics and tests.
type State struct {
	Owner    string   // the owning worker, alive or not; "" if none
	Queued   []string // item ids, in order
	Inflight string   // the item the owner took, or ""
}

// State reads thread tk's queue as it stands.
func (q *Queue) State(ctx context.Context, tk jobs.ThreadKey) (State, error) {
	pipe := q.rdb.Pipeline()
	own := pipe.HGet(ctx, q.thread(tk, "own"), "worker")
	items := pipe.LRange(ctx, q.thread(tk, "q"), 0, -1)
	inflight := pipe.Get(ctx, q.thread(tk, "inflight"))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return State{}, fmt.Errorf("read thread %s: %w", tk, err)
	}
	return State{Owner: own.Val(), Queued: items.Val(), Inflight: inflight.Val()}, nil
}

// Remove takes item id out of tk's queue, if it is still there (a canceled item
// should not hold its place, or count against the thread's queue quota).
func (q *Queue) Remove(ctx context.Context, tk jobs.ThreadKey, id string) error {
	if err := q.rdb.LRem(ctx, q.thread(tk, "q"), 0, id).Err(); err != nil {
		return fmt.Errorf("remove %s from thread %s: %w", id, tk, err)
	}
	return nil
}
