package worker_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
)

// startOf reports whether cmd is the transition script starting execution id (its new
// status "running").
func startOf(cmd redis.Cmder, id string) bool {
	if !isScript(cmd) || !hasArg(cmd, id) {
		return false
	}
	args := cmd.Args()
	if len(args) < 3 {
		return false
	}
	n, ok := args[2].(int)
	return ok && len(args) > 3+n && args[3+n] == string(jobs.Running)
}

// Found by the fault suite: Redis failed (crashed, loading) just as a thread's item
// was to start. The item had been taken off the queue; it must not be forgotten — it
// runs, before the items behind it, once Redis answers.
func TestItemWhoseStartFailedRunsAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ran := e.recordRuns()
	first := e.submit("acme", "t1", "first")
	second := e.submit("acme", "t1", "second")
	var failed atomic.Int32
	e.hook(func(cmd redis.Cmder) error {
		if startOf(cmd, first) && failed.Add(1) <= 2 {
			return errors.New("injected: LOADING Redis is loading the dataset in memory")
		}
		return nil
	})
	e.start()
	for _, id := range []string{first, second} {
		if ex := e.wait(id); ex.Status != jobs.Succeeded {
			t.Errorf("%s: status %s, error %+v", id, ex.Status, ex.Error)
		}
	}
	if got := ran(); !slices.Equal(got, []string{first, second}) {
		t.Errorf("ran %v, want %v: in order, once each", got, []string{first, second})
	}
	if failed.Load() < 2 {
		t.Error("no start failed: the test tested nothing")
	}
}

// Found by the fault suite: a thread offered twice (its offer re-offered while every
// worker was busy) was claimed again by its own owner, under a new lease, just as an
// item started under the old one; the start was refused and the item forgotten. The
// owner now serves a second offer of a thread it holds under the lease it has.
func TestSecondOfferOfOwnThreadKeepsLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	started, unblock, ran := e.blockFirst()
	release := sync.OnceFunc(unblock)
	tk := jobs.NewThreadKey("acme", "t1")
	e.start()
	t.Cleanup(release) // runs before start's cleanup, so a failed test can shut down
	first := e.submit("acme", "t1", "first")
	<-started
	second := e.submit("acme", "t1", "second")
	token, err := e.rdb.HGet(t.Context(), ownKey(tk), "token").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.RPush(t.Context(), "ci:offers", string(tk)).Err(); err != nil {
		t.Fatal(err)
	}
	e.eventually(waitFor, "w1 takes the second offer", func() bool {
		n, _ := e.rdb.LLen(t.Context(), "ci:offers").Result()
		return n == 0
	})
	release()
	for _, id := range []string{first, second} {
		if ex := e.wait(id); ex.Status != jobs.Succeeded {
			t.Errorf("%s: status %s, error %+v", id, ex.Status, ex.Error)
		}
	}
	if now, _ := e.rdb.HGet(t.Context(), ownKey(tk), "token").Result(); now != token {
		t.Errorf("lease token %s, then %s: claimed again", token, now)
	}
	if got := ran(); !slices.Equal(got, []string{first, second}) {
		t.Errorf("ran %v, want %v: in order, once each", got, []string{first, second})
	}
}

// The lease changed under an item's start (Redis names another claim of the same
// worker, as after a crash lost the last one): the start is refused, the item stays in
// flight, the owner claims the thread again on its next heartbeat, and the item runs,
// before the items behind it.
func TestItemStartedAcrossReclaimRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ran := e.recordRuns()
	tk := jobs.NewThreadKey("acme", "t1")
	first := e.submit("acme", "t1", "first")
	second := e.submit("acme", "t1", "second")
	var reclaimed atomic.Bool
	e.hook(func(cmd redis.Cmder) error {
		if startOf(cmd, first) && !reclaimed.Swap(true) {
			if _, _, err := e.threads.Claim(context.Background(), tk, "w1"); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	e.start()
	for _, id := range []string{first, second} {
		if ex := e.wait(id); ex.Status != jobs.Succeeded {
			t.Errorf("%s: status %s, error %+v", id, ex.Status, ex.Error)
		}
	}
	if got := ran(); !slices.Equal(got, []string{first, second}) {
		t.Errorf("ran %v, want %v: in order, once each", got, []string{first, second})
	}
	if !reclaimed.Load() {
		t.Error("the lease never changed: the test tested nothing")
	}
}

// A Redis crash rolled the thread's owner hash back to an older claim of the same
// worker (AOF everysec lost the last one). Nobody else holds the thread: its owner
// claims it again under a new lease, rather than letting go of a thread no other
// worker may take while it lives, and the items go on.
func TestOwnLeaseRolledBackIsClaimedAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	started, unblock, _ := e.blockFirst()
	release := sync.OnceFunc(unblock)
	tk := jobs.NewThreadKey("acme", "t1")
	e.start()
	t.Cleanup(release) // runs before start's cleanup, so a failed test can shut down

	first := e.submit("acme", "t1", "first")
	<-started
	second := e.submit("acme", "t1", "second")
	if err := e.rdb.HSet(t.Context(), ownKey(tk), "worker", "w1", "token", "1").Err(); err != nil {
		t.Fatal(err)
	}
	e.eventually(waitFor, "w1 claims the thread again", func() bool {
		v, _ := e.rdb.HMGet(t.Context(), ownKey(tk), "worker", "token").Result()
		return v[0] == "w1" && v[1] != nil && v[1] != "1"
	})
	release()
	for _, id := range []string{first, second} {
		if ex := e.wait(id); ex.Status != jobs.Succeeded {
			t.Errorf("%s: status %s, error %+v", id, ex.Status, ex.Error)
		}
	}
}
