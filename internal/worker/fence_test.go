package worker_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// ownKey MIRRORS jobs/threadq's keys.go: the owner hash of a thread under prefix ci:.
func ownKey(tk jobs.ThreadKey) string { return "ci:t:" + string(tk) + ":own" }

// blockFirst makes the fake hold the first run until the returned release is called;
// later runs return at once. started is closed when the first run began.
func (e *env) blockFirst() (started <-chan struct{}, release func(), ran func() []string) {
	begun, gate := make(chan struct{}), make(chan struct{})
	ids := make(chan string, 16)
	e.fake.RunFunc = func(req sandbox.Request) sandbox.Outcome {
		ids <- req.ID
		if len(ids) == 1 && begun != nil {
			close(begun)
			<-gate
		}
		return sandbox.Outcome{}
	}
	return begun, func() { close(gate) }, func() []string {
		var out []string
		for len(ids) > 0 {
			out = append(out, <-ids)
		}
		return out
	}
}

// keepBeating makes worker w beat until the test ends, so it counts as alive.
func (e *env) keepBeating(w string) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	e.t.Cleanup(func() { close(done); <-stopped })
	beat := func() {
		if err := e.threads.Beat(context.Background(), w, true); err != nil {
			e.t.Error(err)
		}
	}
	beat()
	go func() {
		defer close(stopped)
		tick := time.NewTicker(e.threads.HeartbeatTTL() / 4)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				beat()
			}
		}
	}()
}

// Another worker takes the thread over while this one runs an item (its heartbeat
// stalled past the TTL, say). The stale owner notices on its next heartbeat, and
// nothing it does after that counts: the item's end is refused (the new owner settles
// it), and it takes no further item of the thread.
func TestTakenOverWorkerStopsTouchingThread(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	started, release, ran := e.blockFirst()
	tk := jobs.NewThreadKey("acme", "t1")
	e.start()
	first := e.submit("acme", "t1", "first")
	<-started
	// w2, alive, made a newer claim.
	e.keepBeating("w2")
	if err := e.rdb.HSet(t.Context(), ownKey(tk), "worker", "w2", "token", "9000000000000000").Err(); err != nil {
		t.Fatal(err)
	}
	e.eventually(waitFor, "w1's heartbeat notices the takeover", func() bool {
		return strings.Contains(e.logs.String(), "thread taken over by another worker")
	})
	second := e.submit("acme", "t1", "second")
	release()
	e.eventually(waitFor, "w1 gives up recording the first item", func() bool {
		return strings.Contains(e.logs.String(), "this outcome is not recorded")
	})
	for _, id := range []string{first, second} {
		ex, err := e.recs.Get(t.Context(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]jobs.Status{first: jobs.Running, second: jobs.Queued}[id]
		if ex.Status != want {
			t.Errorf("%s is %s, want %s (left to the new owner)", id, ex.Status, want)
		}
	}
	if got := ran(); !slices.Equal(got, []string{first}) {
		t.Errorf("w1 ran %v, want only %s", got, first)
	}
	if st, _ := e.threads.State(t.Context(), tk); st.Owner != "w2" || !slices.Equal(st.Queued, []string{second}) {
		t.Errorf("thread state %+v: want w2's, with the second item queued", st)
	}
}

// A Redis crash lost the thread's owner key while an item ran, and no other worker
// took the thread: the owner claims it again under a new lease on its next heartbeat,
// and the item ends normally, as do the items after it.
func TestVanishedLeaseIsClaimedAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	started, release, _ := e.blockFirst()
	tk := jobs.NewThreadKey("acme", "t1")
	e.start()
	first := e.submit("acme", "t1", "first")
	<-started
	token, err := e.rdb.HGet(t.Context(), ownKey(tk), "token").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.Del(t.Context(), ownKey(tk)).Err(); err != nil {
		t.Fatal(err)
	}
	e.eventually(waitFor, "w1 claims the thread again", func() bool {
		v, _ := e.rdb.HMGet(t.Context(), ownKey(tk), "worker", "token").Result()
		return v[0] == "w1" && v[1] != nil && v[1] != token
	})
	release()
	if ex := e.wait(first); ex.Status != jobs.Succeeded {
		t.Errorf("the running item: %s %+v, want succeeded", ex.Status, ex.Error)
	}
	if ex := e.wait(e.submit("acme", "t1", "second")); ex.Status != jobs.Succeeded {
		t.Errorf("the next item: %s %+v, want succeeded", ex.Status, ex.Error)
	}
	if b := e.box("acme", "t1"); b == nil || b.FenceToken() <= 0 {
		t.Errorf("thread sandbox %v carries no fencing token", b)
	}
}
