package threadq

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
)

// Lease is one claim of a thread: the worker holding it and the fencing token the
// claim was given. A thread's tokens only grow (claim.lua), so of two workers that
// both believe they own a thread, the one with the smaller token is stale. Every step
// that changes the thread's state presents the lease, and is refused with ErrLost
// once the lease is no longer the thread's; the token also fences the thread's
// sandbox (sandbox.Sandbox.Fence), so a stale owner cannot touch that either.
type Lease struct {
	Thread jobs.ThreadKey
	Worker string
	Token  int64
}

// Valid reports whether l came from a claim.
func (l Lease) Valid() bool { return l.Token > 0 }

func (l Lease) token() string { return strconv.FormatInt(l.Token, 10) }

// Fence is what a script of another package (jobs/records) needs to check a lease in
// the same atomic step as its own change: the thread's owner hash, and the worker and
// token it must hold.
type Fence struct {
	OwnerKey string
	Worker   string
	Token    string
}

// FenceOf returns the check of lease l, for scripts that must refuse a stale owner.
func (q *Queue) FenceOf(l Lease) Fence {
	return Fence{OwnerKey: q.thread(l.Thread, "own"), Worker: l.Worker, Token: l.token()}
}

// Holds reports, for each lease, whether it is still its thread's. Owner is the
// worker that holds the thread now ("" when nobody does: its owner key is gone, as
// after a Redis crash that lost the last writes).
func (q *Queue) Holds(ctx context.Context, leases []Lease) ([]Holding, error) {
	pipe := q.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(leases))
	for i, l := range leases {
		cmds[i] = pipe.HMGet(ctx, q.thread(l.Thread, "own"), "worker", "token")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("check thread leases: %w", err)
	}
	out := make([]Holding, len(leases))
	for i, l := range leases {
		v := cmds[i].Val()
		worker, _ := v[0].(string)
		token, _ := v[1].(string)
		out[i] = Holding{Lease: l, Held: worker == l.Worker && token == l.token(), Owner: worker}
	}
	return out, nil
}

// Holding is whether a lease is still its thread's, and who owns the thread now.
type Holding struct {
	Lease Lease
	Held  bool
	Owner string
}
