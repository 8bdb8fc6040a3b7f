package worker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/internal/worker"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/threadq"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/sandboxtest"
	"github.com/codeinterp/codeinterp/storage"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// The pool hands a new thread one of its blank sandboxes, renamed after the thread,
// and creates another to stay full.
func TestPoolGivesBlankToNewThreadAndRefills(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *worker.Config) { c.WarmPool = 2 })
	e.start()
	e.eventually(waitFor, "the pool fills with 2 blanks", func() bool {
		return e.fake.Created() == 2 && len(e.blanks()) == 2
	})
	var pooled []string
	for _, b := range e.blanks() {
		pooled = append(pooled, b.ID())
	}

	ex := e.run("acme", "t1", "x")
	if ex.Sandbox != (jobs.SandboxInfo{}) {
		t.Errorf("first execution in a pooled blank: sandbox info %+v, want all false", ex.Sandbox)
	}
	box := e.box("acme", "t1")
	if box == nil {
		t.Fatalf("no sandbox named %s after the thread's first execution", e.fake.ThreadName("acme", "t1"))
	}
	if !slices.Contains(pooled, box.ID()) {
		t.Errorf("thread sandbox %s is not one of the pooled blanks %v: created instead of taken", box.ID(), pooled)
	}
	if tenant, thread := box.Thread(); tenant != "acme" || thread != "t1" {
		t.Errorf("thread sandbox belongs to %q/%q", tenant, thread)
	}
	if runs, _, _, _ := box.Stats(); runs != 1 {
		t.Errorf("thread sandbox ran %d times, want 1", runs)
	}
	e.eventually(waitFor, "the pool refills to 2 blanks", func() bool {
		return len(e.blanks()) == 2
	})
	if n := e.fake.Created(); n != 3 {
		t.Errorf("created %d sandboxes, want 3 (2 blanks, 1 refill)", n)
	}
}

// At the host cap, a new sandbox makes the worker reap its least recently used
// one (snapshot, remove); that thread's next execution gets its workspace back.
func TestHostCapReapsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *worker.Config) { c.MaxSandboxes = 2 })
	e.start()
	ka, kb, kc := jobs.NewThreadKey("acme", "a"), jobs.NewThreadKey("acme", "b"), jobs.NewThreadKey("acme", "c")

	e.run("acme", "a", "x")
	e.run("acme", "b", "x")
	oldA, oldB := e.box("acme", "a"), e.box("acme", "b")
	if oldA == nil || oldB == nil {
		t.Fatal("threads a and b have no sandboxes")
	}
	putFile(t, oldA, "notes.txt", "kept across the reap")

	e.run("acme", "c", "x")
	e.eventually(waitFor, "a (least recently used) is reaped", func() bool { return e.box("acme", "a") == nil })
	e.settled(ka, kb, kc)
	if b := e.box("acme", "b"); b == nil || b.ID() != oldB.ID() {
		t.Errorf("b's sandbox %v: want it kept (%s)", b, oldB.ID())
	}
	if e.box("acme", "c") == nil {
		t.Error("c has no sandbox")
	}
	if st := e.state(ka); st.Sandbox != jobs.SandboxNone || !st.Snapshot {
		t.Errorf("a's thread state after the reap: %+v, want sandbox none with a snapshot", st)
	}
	if _, _, _, snaps := oldA.Stats(); snaps != 1 {
		t.Errorf("a snapshotted %d times before removal, want 1", snaps)
	}
	if !e.store.has(jobs.SnapshotKey(ka)) {
		t.Error("a's snapshot was not stored")
	}

	ex := e.run("acme", "a", "x")
	if !ex.Sandbox.KernelRestarted || ex.Sandbox.Reused {
		t.Errorf("a's execution after the reap: sandbox %+v, want kernel_restarted and not reused", ex.Sandbox)
	}
	newA := e.box("acme", "a")
	if newA == nil || newA.ID() == oldA.ID() {
		t.Fatalf("a's sandbox after the reap: %v, want a new one", newA)
	}
	if got := readFile(t, newA, "notes.txt"); got != "kept across the reap" {
		t.Errorf("a's restored workspace has notes.txt = %q", got)
	}
	// Making a's sandbox again put the host back at the cap: b is now the least
	// recently used.
	e.eventually(waitFor, "b is reaped to make room for a", func() bool { return e.box("acme", "b") == nil })
	e.settled(ka, kb, kc)
	if c := e.box("acme", "c"); c == nil {
		t.Error("c's sandbox was reaped; b was the least recently used")
	}
	if e.box("acme", "a") == nil {
		t.Error("a's new sandbox was reaped")
	}
}

// The tenant cap reaps the tenant's own least recently used sandbox, never another
// tenant's, even one used longer ago.
func TestTenantCapReapsOnlyThatTenant(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *worker.Config) { c.MaxPerTenant = 2 })
	e.start()
	e.run("globex", "g1", "x")
	e.run("globex", "g2", "x")
	// t2 before t1, so the least recently used is not the first by name.
	e.run("acme", "t2", "x")
	e.run("acme", "t1", "x")
	before := map[string]string{}
	for _, th := range [][2]string{{"globex", "g1"}, {"globex", "g2"}, {"acme", "t1"}} {
		b := e.box(th[0], th[1])
		if b == nil {
			t.Fatalf("%s/%s has no sandbox before the cap is reached", th[0], th[1])
		}
		before[th[0]+"/"+th[1]] = b.ID()
	}

	e.run("acme", "t3", "x")
	e.eventually(waitFor, "acme/t2 is reaped", func() bool { return e.box("acme", "t2") == nil })
	e.settled(jobs.NewThreadKey("globex", "g1"), jobs.NewThreadKey("globex", "g2"),
		jobs.NewThreadKey("acme", "t1"), jobs.NewThreadKey("acme", "t2"), jobs.NewThreadKey("acme", "t3"))
	for _, th := range [][2]string{{"globex", "g1"}, {"globex", "g2"}, {"acme", "t1"}} {
		if b := e.box(th[0], th[1]); b == nil || b.ID() != before[th[0]+"/"+th[1]] {
			t.Errorf("%s/%s's sandbox is %v, want it untouched", th[0], th[1], b)
		}
	}
	if e.box("acme", "t3") == nil {
		t.Error("acme/t3 has no sandbox")
	}
	if st := e.state(jobs.NewThreadKey("acme", "t2")); st.Sandbox != jobs.SandboxNone || !st.Snapshot {
		t.Errorf("acme/t2's state: %+v, want sandbox none with a snapshot", st)
	}
	for _, tk := range []jobs.ThreadKey{jobs.NewThreadKey("globex", "g1"), jobs.NewThreadKey("globex", "g2")} {
		if st := e.state(tk); st.Sandbox != jobs.SandboxRunning || st.Snapshot {
			t.Errorf("%s's state: %+v, want running without a snapshot", tk, st)
		}
	}
}

// A thread's sandbox left on the host (by a worker that died or let go) is
// adopted, not recreated, and the execution says so.
func TestAdoptsSandboxLeftOnHost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	left, err := e.fake.Create(t.Context(), sandbox.Spec{Tenant: "acme", Thread: "t1", Owner: "dead", Preload: true})
	if err != nil {
		t.Fatal(err)
	}
	putFile(t, left, "left.txt", "still here")
	left.Release()
	e.start()

	ex := e.run("acme", "t1", "x")
	if !ex.Sandbox.Reused || !ex.Sandbox.KernelRestarted {
		t.Errorf("adopted sandbox: info %+v, want reused and kernel_restarted", ex.Sandbox)
	}
	if n := e.fake.Created(); n != 1 {
		t.Errorf("created %d sandboxes, want 1 (adopted, not recreated)", n)
	}
	box := e.box("acme", "t1")
	if box == nil || box.ID() != left.ID() {
		t.Fatalf("thread's sandbox %v, want the one left on the host (%s)", box, left.ID())
	}
	if _, _, adoptions, _ := box.Stats(); adoptions != 1 {
		t.Errorf("adopted %d times, want 1", adoptions)
	}
	if got := readFile(t, box, "left.txt"); got != "still here" {
		t.Errorf("adopted workspace has left.txt = %q", got)
	}
}

// racingRuntime creates the thread's sandbox for "another worker" just before the
// runner's first Create of a thread, which then fails with ErrExists.
type racingRuntime struct {
	*sandboxtest.Fake
	once    sync.Once
	creates atomic.Int32
	racer   atomic.Value // string: the id of the other worker's sandbox
}

func (r *racingRuntime) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	r.creates.Add(1)
	if spec.Thread != "" {
		r.once.Do(func() {
			other, err := r.Fake.Create(ctx, sandbox.Spec{Tenant: spec.Tenant, Thread: spec.Thread, Owner: "other", Preload: true})
			if err == nil {
				r.racer.Store(other.ID())
				other.Release()
			}
		})
	}
	return r.Fake.Create(ctx, spec)
}

// A Create that finds the thread's sandbox created meanwhile adopts it at once.
func TestAdoptsSandboxCreatedMeanwhile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	rt := &racingRuntime{Fake: e.fake}
	e.cfg.Runtime = rt
	e.start()

	ex := e.run("acme", "t1", "x")
	racer, _ := rt.racer.Load().(string)
	box := e.box("acme", "t1")
	if racer == "" || box == nil || box.ID() != racer {
		t.Fatalf("thread's sandbox %v, want the one created meanwhile (%q)", box, racer)
	}
	if n := e.fake.Created(); n != 1 {
		t.Errorf("created %d sandboxes, want 1", n)
	}
	if n := rt.creates.Load(); n != 1 {
		t.Errorf("Create called %d times, want 1", n)
	}
	if _, _, adoptions, _ := box.Stats(); adoptions != 1 {
		t.Errorf("adopted %d times, want 1", adoptions)
	}
	if !ex.Sandbox.KernelRestarted {
		t.Errorf("adopted sandbox: info %+v, want kernel_restarted", ex.Sandbox)
	}
	// Not through the retry after a failed attempt, which waits a second first.
	if wait := ex.StartedAt.Sub(ex.CreatedAt); wait >= time.Second {
		t.Errorf("started %v after it was queued: adopted only on a retry", wait)
	}
}

// A failed Create (the runtime hiccuped) is retried before the code starts, and the
// execution runs.
func TestRetriesFailedCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.fake.FailNextCreate(errors.New("docker hiccup"))
	e.start()

	ex := e.run("acme", "t1", "x")
	if ex.Error != nil {
		t.Errorf("error %+v", ex.Error)
	}
	if n := e.fake.Created(); n != 1 {
		t.Errorf("created %d sandboxes, want 1", n)
	}
	if e.box("acme", "t1") == nil {
		t.Error("the thread has no sandbox")
	}
}

// A pause snapshots a changed workspace and pauses the sandbox; the next execution
// resumes it; a reap snapshots and removes it.
func TestPauseThenResumeThenReap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.start()
	ctx := t.Context()
	tk := jobs.NewThreadKey("acme", "t1")

	e.run("acme", "t1", "x")
	box := e.box("acme", "t1")
	if err := e.recs.EnqueueLifecycle(ctx, tk, jobs.KindPause); err != nil {
		t.Fatal(err)
	}
	e.eventually(waitFor, "the sandbox is paused", box.Paused)
	e.settled(tk)
	if st := e.state(tk); st.Sandbox != jobs.SandboxPaused || !st.Snapshot {
		t.Errorf("state after pause: %+v, want paused with a snapshot", st)
	}
	if _, pauses, _, snaps := box.Stats(); pauses != 1 || snaps != 1 {
		t.Errorf("after pause: %d pauses, %d snapshots; want 1, 1", pauses, snaps)
	}
	if !e.store.has(jobs.SnapshotKey(tk)) {
		t.Error("no snapshot stored")
	}

	// Nothing changed since: a second pause stores no second snapshot.
	if err := e.recs.EnqueueLifecycle(ctx, tk, jobs.KindPause); err != nil {
		t.Fatal(err)
	}
	e.settled(tk)
	if _, _, _, snaps := box.Stats(); snaps != 1 {
		t.Errorf("second pause of an unchanged workspace: %d snapshots, want 1", snaps)
	}

	ex := e.run("acme", "t1", "x")
	if !ex.Sandbox.Resumed || !ex.Sandbox.Reused || ex.Sandbox.KernelRestarted {
		t.Errorf("execution after pause: info %+v, want resumed and reused, kernel kept", ex.Sandbox)
	}
	if box.Paused() {
		t.Error("sandbox still paused after an execution")
	}
	if e.box("acme", "t1") != box {
		t.Error("the execution after the pause used another sandbox")
	}
	if st := e.state(tk); st.Sandbox != jobs.SandboxRunning {
		t.Errorf("state after resume: %+v, want running", st)
	}

	if err := e.recs.EnqueueLifecycle(ctx, tk, jobs.KindReap); err != nil {
		t.Fatal(err)
	}
	e.eventually(waitFor, "the sandbox is removed", func() bool { return e.box("acme", "t1") == nil })
	e.settled(tk)
	if st := e.state(tk); st.Sandbox != jobs.SandboxNone || !st.Snapshot {
		t.Errorf("state after reap: %+v, want none with a snapshot", st)
	}
	if _, _, _, snaps := box.Stats(); snaps != 2 {
		t.Errorf("reap after an execution: %d snapshots in all, want 2", snaps)
	}
}

// A pause with more work queued behind it is skipped: pausing would only slow the
// next item down.
func TestPauseSkippedWhenWorkQueuedBehind(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	started, release := make(chan string, 10), make(chan struct{})
	var once sync.Once
	e.fake.RunFunc = func(req sandbox.Request) sandbox.Outcome {
		started <- req.Code
		if req.Code == "block" {
			<-release
		}
		return sandbox.Outcome{}
	}
	e.start()
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the runner's shutdown
	ctx := t.Context()
	tk := jobs.NewThreadKey("acme", "t1")

	first := e.submit("acme", "t1", "block")
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("first execution did not start")
	}
	if err := e.recs.EnqueueLifecycle(ctx, tk, jobs.KindPause); err != nil {
		t.Fatal(err)
	}
	second := e.submit("acme", "t1", "after")
	once.Do(func() { close(release) })
	e.wait(first)
	ex := e.wait(second)
	e.settled(tk)

	if ex.Status != jobs.Succeeded || ex.Sandbox.Resumed {
		t.Errorf("execution behind the pause: status %s, info %+v; want succeeded, not resumed", ex.Status, ex.Sandbox)
	}
	box := e.box("acme", "t1")
	if box == nil {
		t.Fatal("no sandbox")
	}
	if _, pauses, _, snaps := box.Stats(); pauses != 0 || snaps != 0 || box.Paused() {
		t.Errorf("skipped pause: %d pauses, %d snapshots, paused %v; want none", pauses, snaps, box.Paused())
	}
	if st := e.state(tk); st.Sandbox != jobs.SandboxRunning {
		t.Errorf("state: %+v, want running", st)
	}
}

// An item a dead owner had started fails with WorkerLost and is never run again;
// the items queued behind it still run.
func TestDeadOwnersStartedItemFailsAndQueueGoesOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ran := e.recordRuns()
	ctx := t.Context()
	tk := jobs.NewThreadKey("acme", "t1")

	first := e.submit("acme", "t1", "first")
	// The dead worker beat once, an hour ago.
	past := threadq.New(e.rdb, threadq.Config{Prefix: "ci:", HeartbeatTTL: 2 * time.Second,
		Now: func() time.Time { return time.Now().Add(-time.Hour) }})
	if err := past.Beat(ctx, "dead", true); err != nil {
		t.Fatal(err)
	}
	e.takeAsDead(tk, first)
	ex, err := e.recs.Get(ctx, "", first)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ex.Status, ex.StartedAt, ex.Worker, ex.Attempt = jobs.Running, &now, "dead", 1
	if ok, found, err := e.recs.Transition(ctx, ex, jobs.Queued); err != nil || !ok {
		t.Fatalf("mark running: ok %v, found %s, err %v", ok, found, err)
	}
	second := e.submit("acme", "t1", "second")
	e.start()

	lost := e.wait(first)
	if lost.Status != jobs.Failed || !jobs.ErrWorkerLost.Is(lost.Error) {
		t.Errorf("started item of the dead owner: status %s, error %+v; want failed %s", lost.Status, lost.Error, jobs.ErrWorkerLost)
	}
	if next := e.wait(second); next.Status != jobs.Succeeded {
		t.Errorf("item behind it: status %s, error %+v", next.Status, next.Error)
	}
	e.settled(tk)
	if got := ran(); !slices.Equal(got, []string{second}) {
		t.Errorf("ran %v, want only %v", got, []string{second})
	}
	if owner, _ := e.threads.Owner(ctx, tk); owner != "w1" {
		t.Errorf("thread owner %q, want w1", owner)
	}
}

// An item a dead owner took but had not started runs, first, then the rest.
func TestDeadOwnersUnstartedItemRunsFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ran := e.recordRuns()
	tk := jobs.NewThreadKey("acme", "t1")

	first := e.submit("acme", "t1", "first")
	e.takeAsDead(tk, first) // a worker that never beat
	second := e.submit("acme", "t1", "second")
	e.start()

	for _, id := range []string{first, second} {
		if ex := e.wait(id); ex.Status != jobs.Succeeded || ex.Worker != "w1" {
			t.Errorf("%s: status %s on worker %q, error %+v; want succeeded on w1", id, ex.Status, ex.Worker, ex.Error)
		}
	}
	e.settled(tk)
	if got := ran(); !slices.Equal(got, []string{first, second}) {
		t.Errorf("ran %v, want %v in order, once each", got, []string{first, second})
	}
}

// Many threads at once under a host cap: every execution runs while the worker
// reaps sandboxes to make room for others.
func TestConcurrentThreadsUnderHostCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *worker.Config) { c.MaxSandboxes = 2; c.Concurrency = 8 })
	e.start()
	ctx := t.Context()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { // t.Fatal only from the test's goroutine: errors end the loop
			for j := range 6 {
				ex := &jobs.Execution{ID: jobs.NewID(), Tenant: "acme", ThreadID: fmt.Sprintf("t%d-%d", i, j%3),
					Language: sandbox.Python, Code: "x", Status: jobs.Queued, TimeoutMS: 30000, CreatedAt: time.Now()}
				if _, err := e.recs.Create(ctx, ex, "", ""); err != nil {
					t.Error(err)
					return
				}
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for deadline := time.Now().Add(waitFor); !ex.Status.Terminal(); <-tick.C {
					got, err := e.recs.Get(ctx, "", ex.ID)
					if err != nil || time.Now().After(deadline) {
						t.Errorf("execution %s on %s: not ended (%v)", ex.ID, ex.ThreadID, err)
						return
					}
					ex = got
				}
				if ex.Status != jobs.Succeeded {
					t.Errorf("execution on %s: status %s, error %+v", ex.ThreadID, ex.Status, ex.Error)
				}
			}
		})
	}
	wg.Wait()
}

// waitFor bounds every wait: generous, as it only matters when a test fails.
const waitFor = 10 * time.Second

// env is a runner over a fake runtime, real Redis and in-memory storage.
type env struct {
	t       *testing.T
	rdb     *redis.Client
	threads *threadq.Queue
	recs    *records.Store
	fake    *sandboxtest.Fake
	store   *memStore
	cfg     worker.Config
	logs    *logBuffer
}

func newEnv(t *testing.T, mod func(*worker.Config)) *env {
	t.Helper()
	addr, db := testenv.RedisDB(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	t.Cleanup(func() { rdb.Close() })
	threads := threadq.New(rdb, threadq.Config{Prefix: "ci:", HeartbeatTTL: 2 * time.Second})
	recs := records.New(rdb, records.Config{Prefix: "ci:", TTL: time.Hour, Threads: threads})
	e := &env{t: t, rdb: rdb, threads: threads, recs: recs, fake: sandboxtest.NewFake(), store: newMemStore(), logs: &logBuffer{}}
	e.cfg = worker.Config{
		Records: recs, Threads: threads, Artifacts: e.store, Runtime: e.fake,
		Worker: "w1", Concurrency: 4, Linger: time.Second,
		Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:    strictClock(),
	}
	if mod != nil {
		mod(&e.cfg)
	}
	return e
}

// start starts the runner; it is shut down when the test ends.
func (e *env) start() *worker.Runner {
	e.t.Helper()
	r := worker.NewRunner(e.cfg)
	if err := r.Start(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r.Shutdown(ctx)
		if e.t.Failed() {
			e.t.Logf("worker log:\n%s", e.logs.String())
		}
	})
	return r
}

// submit queues an execution of code on a thread and returns its id.
func (e *env) submit(tenant, thread, code string) string {
	e.t.Helper()
	return e.submitIn(tenant, thread, "", code)
}

// submitIn queues an execution of code on a thread ("": a one-off) in profile ("":
// the default) and returns its id. A thread's first item records its profile.
func (e *env) submitIn(tenant, thread, profile, code string) string {
	e.t.Helper()
	ex := &jobs.Execution{ID: jobs.NewID(), Tenant: tenant, ThreadID: thread, Profile: profile, Language: sandbox.Python, Code: code,
		Status: jobs.Queued, TimeoutMS: 30000, CreatedAt: time.Now()}
	if _, err := e.recs.Create(e.t.Context(), ex, "", ""); err != nil {
		e.t.Fatal(err)
	}
	return ex.ID
}

// wait returns the record of execution id once it ended.
func (e *env) wait(id string) *jobs.Execution {
	e.t.Helper()
	var ex *jobs.Execution
	e.eventually(waitFor, "execution "+id+" ends", func() bool {
		var err error
		ex, err = e.recs.Get(e.t.Context(), "", id)
		if err != nil {
			e.t.Fatal(err)
		}
		return ex.Status.Terminal()
	})
	return ex
}

// run runs code on a thread and returns its record, which must say it succeeded.
func (e *env) run(tenant, thread, code string) *jobs.Execution {
	e.t.Helper()
	ex := e.wait(e.submit(tenant, thread, code))
	if ex.Status != jobs.Succeeded {
		e.t.Fatalf("execution on %s/%s: status %s, error %+v", tenant, thread, ex.Status, ex.Error)
	}
	return ex
}

// settled waits until the threads' queues are empty and their owner has looked at
// them since its last item ended, so every op queued on them is done.
func (e *env) settled(tks ...jobs.ThreadKey) {
	e.t.Helper()
	for _, tk := range tks {
		e.eventually(waitFor, "thread "+string(tk)+" has nothing queued or in flight", func() bool {
			st, err := e.threads.State(e.t.Context(), tk)
			if err != nil {
				e.t.Fatal(err)
			}
			return len(st.Queued) == 0 && st.Inflight == ""
		})
	}
}

// takeAsDead makes worker "dead" own thread tk and take its first item, id.
func (e *env) takeAsDead(tk jobs.ThreadKey, id string) {
	e.t.Helper()
	ctx := e.t.Context()
	lease, _, err := e.threads.Claim(ctx, tk, "dead")
	if err != nil {
		e.t.Fatal(err)
	}
	got, err := e.threads.Next(ctx, lease)
	if err != nil || got != id {
		e.t.Fatalf("dead worker took %q, %v; want %s", got, err, id)
	}
}

// recordRuns makes the fake record the ids of the executions it runs; call before
// start.
func (e *env) recordRuns() func() []string {
	var mu sync.Mutex
	var ids []string
	e.fake.RunFunc = func(req sandbox.Request) sandbox.Outcome {
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, req.ID)
		return sandbox.Outcome{}
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ids)
	}
}

// box returns the thread's sandbox on the fake host, or nil.
func (e *env) box(tenant, thread string) *sandboxtest.FakeSandbox {
	return e.fake.Sandboxes()[e.fake.ThreadName(tenant, thread)]
}

// blanks returns the sandboxes given to no thread.
func (e *env) blanks() []*sandboxtest.FakeSandbox {
	var out []*sandboxtest.FakeSandbox
	for _, b := range e.fake.Sandboxes() {
		if tenant, thread := b.Thread(); tenant == "" && thread == "" {
			out = append(out, b)
		}
	}
	return out
}

func (e *env) state(tk jobs.ThreadKey) records.ThreadState {
	e.t.Helper()
	st, err := e.recs.ThreadState(e.t.Context(), tk)
	if err != nil || st == nil {
		e.t.Fatalf("thread state of %s: %v, %v", tk, st, err)
	}
	return *st
}

// eventually polls cond until it holds, failing the test after within.
func (e *env) eventually(within time.Duration, what string, cond func() bool) {
	e.t.Helper()
	deadline := time.After(within)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			e.t.Fatalf("not within %v: %s", within, what)
		case <-tick.C:
		}
	}
}

func putFile(t *testing.T, sb sandbox.Sandbox, name, content string) {
	t.Helper()
	if err := sb.PutFiles(t.Context(), []sandbox.File{{Name: name, Size: int64(len(content)), Body: strings.NewReader(content)}}); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, sb sandbox.Sandbox, name string) string {
	t.Helper()
	rc, _, err := sb.OpenFile(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// strictClock is time.Now, but at least a millisecond after its previous reading,
// so the order of uses (kept in milliseconds in Redis) is never a tie.
func strictClock() func() time.Time {
	var mu sync.Mutex
	var last time.Time
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if next := last.Add(time.Millisecond); now.Before(next) {
			now = next
		}
		last = now
		return now
	}
}

// memStore is an in-memory worker.Artifacts.
type memStore struct {
	mu   sync.Mutex
	objs map[string][]byte
}

var _ worker.Artifacts = (*memStore)(nil)

func newMemStore() *memStore { return &memStore{objs: map[string][]byte{}} }

func (s *memStore) Put(_ context.Context, key string, r io.Reader, size int64, contentType string) (storage.Object, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return storage.Object{}, err
	}
	if size >= 0 && int64(len(data)) != size {
		return storage.Object{}, fmt.Errorf("put %s: %d bytes, announced %d", key, len(data), size)
	}
	sum := sha256.Sum256(data)
	s.mu.Lock()
	s.objs[key] = data
	s.mu.Unlock()
	return storage.Object{Key: key, Size: int64(len(data)), ContentType: contentType, SHA256: hex.EncodeToString(sum[:]), Modified: time.Now()}, nil
}

func (s *memStore) Open(_ context.Context, key string) (io.ReadCloser, storage.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.objs[key]
	if !ok {
		return nil, storage.Object{}, fmt.Errorf("%w: %s", storage.ErrNotFound, key)
	}
	return io.NopCloser(bytes.NewReader(data)), storage.Object{Key: key, Size: int64(len(data))}, nil
}

func (s *memStore) DeletePrefix(_ context.Context, prefix string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.objs {
		if strings.HasPrefix(k, prefix) {
			delete(s.objs, k)
			n++
		}
	}
	return n, nil
}

func (s *memStore) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.objs[key]
	return ok
}

// logBuffer keeps the runner's log, to show when a test fails.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
