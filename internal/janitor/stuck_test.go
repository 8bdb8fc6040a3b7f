package janitor_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/janitor"
	"github.com/codeinterp/codeinterp/jobs"
)

// fakeTasks is an in-memory janitor.Tasks: the one-off tasks asynq would hold.
type fakeTasks struct {
	mu       sync.Mutex
	pending  map[string]bool
	requeued []string
}

var _ janitor.Tasks = (*fakeTasks)(nil)

func (f *fakeTasks) Pending(_ context.Context, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pending[id], nil
}

func (f *fakeTasks) Requeue(_ context.Context, ex *jobs.Execution) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending[ex.ID] = true
	f.requeued = append(f.requeued, ex.ID)
	return nil
}

func (f *fakeTasks) setPending(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending[id] = true
}

func (f *fakeTasks) requeuedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requeued)
}

// oneOff stores a queued one-off execution of tenant acme, created now, without a
// task (as an API that died before queueing it leaves it).
func (e *env) oneOff() *jobs.Execution {
	e.t.Helper()
	ex := &jobs.Execution{ID: jobs.NewID(), Tenant: "acme", Status: jobs.Queued, Code: "1", CreatedAt: e.clock.Now()}
	if _, err := e.recs.Create(e.ctx, ex, "", ""); err != nil {
		e.t.Fatal(err)
	}
	return ex
}

// start moves a queued execution to running on worker.
func (e *env) start(id, worker string) {
	e.t.Helper()
	ex, err := e.recs.Get(e.ctx, "", id)
	if err != nil {
		e.t.Fatal(err)
	}
	now := e.clock.Now()
	ex.Status, ex.StartedAt, ex.Worker = jobs.Running, &now, worker
	if ok, found, err := e.recs.Transition(e.ctx, ex, jobs.Queued); !ok || err != nil {
		e.t.Fatalf("start %s: %v %s %v", id, ok, found, err)
	}
}

func (e *env) status(id string) (jobs.Status, string) {
	e.t.Helper()
	ex, err := e.recs.Get(e.ctx, "", id)
	if err != nil {
		e.t.Fatal(err)
	}
	name := ""
	if ex.Error != nil {
		name = ex.Error.Name
	}
	return ex.Status, name
}

func (e *env) active(tenant string) int64 {
	e.t.Helper()
	u, err := e.recs.Usage(e.ctx, tenant)
	if err != nil {
		e.t.Fatal(err)
	}
	return u.Active
}

// TestSweepStuckDecisions pins what the stuck sweep does with each kind of execution
// left queued or running, by its age, its task or thread, and its worker.
func TestSweepStuckDecisions(t *testing.T) {
	t.Parallel()
	type outcome struct {
		status   jobs.Status
		errName  string
		requeued bool
	}
	left := func(st jobs.Status) outcome { return outcome{status: st} }
	lost := outcome{status: jobs.Failed, errName: string(jobs.ErrWorkerLost)}
	cases := []struct {
		name  string
		age   time.Duration
		setup func(e *env) string // returns the execution's id
		want  outcome
	}{
		// One-offs.
		{"one-off queued, no task, stale", stuckAfter, func(e *env) string { return e.oneOff().ID },
			outcome{status: jobs.Queued, requeued: true}},
		{"one-off queued, no task, not stale yet", stuckAfter - time.Second, func(e *env) string { return e.oneOff().ID },
			left(jobs.Queued)},
		{"one-off queued, task pending", time.Hour, func(e *env) string {
			id := e.oneOff().ID
			e.tasks.setPending(id)
			return id
		}, left(jobs.Queued)},
		{"one-off running, task gone, worker dead", time.Hour, func(e *env) string {
			id := e.oneOff().ID
			e.start(id, "w-dead")
			return id
		}, lost},
		{"one-off running, task gone, worker alive", time.Hour, func(e *env) string {
			id := e.oneOff().ID
			e.start(id, "w1")
			return id
		}, left(jobs.Running)},
		{"one-off running, task pending (asynq recovers it)", time.Hour, func(e *env) string {
			id := e.oneOff().ID
			e.start(id, "w-dead")
			e.tasks.setPending(id)
			return id
		}, left(jobs.Running)},

		// Thread items.
		{"thread item queued, owner dead, in the queue", time.Hour, func(e *env) string {
			tk := jobs.NewThreadKey("acme", "t1")
			e.claim(tk, "w-dead")
			return e.queueWork(tk)
		}, left(jobs.Queued)},
		{"thread item queued, never owned, in the queue", time.Hour, func(e *env) string {
			return e.queueWork(jobs.NewThreadKey("acme", "t1"))
		}, left(jobs.Queued)},
		{"thread item queued, owner dead, in flight", time.Hour, func(e *env) string {
			tk := jobs.NewThreadKey("acme", "t1")
			e.claim(tk, "w-dead")
			id := e.queueWork(tk)
			e.next(tk, "w-dead", id)
			return id
		}, left(jobs.Queued)},
		{"thread item queued, owner dead, lost from the queue", time.Hour, func(e *env) string {
			tk := jobs.NewThreadKey("acme", "t1")
			e.claim(tk, "w-dead")
			id := e.queueWork(tk)
			e.next(tk, "w-dead", id)
			e.next(tk, "w-dead", "") // the owner moved on without starting it
			return id
		}, lost},
		{"thread item queued, owner alive, lost from the queue", time.Hour, func(e *env) string {
			tk := jobs.NewThreadKey("acme", "t1")
			e.claim(tk, "w1")
			id := e.queueWork(tk)
			e.next(tk, "w1", id)
			e.next(tk, "w1", "")
			return id
		}, left(jobs.Queued)},
		{"thread item running, owner dead, in flight", time.Hour, func(e *env) string {
			tk := jobs.NewThreadKey("acme", "t1")
			e.claim(tk, "w-dead")
			id := e.queueWork(tk)
			e.next(tk, "w-dead", id)
			e.start(id, "w-dead")
			return id
		}, left(jobs.Running)},
		{"thread item running, owner dead, not in flight", time.Hour, func(e *env) string {
			tk := jobs.NewThreadKey("acme", "t1")
			e.claim(tk, "w-dead")
			id := e.queueWork(tk)
			e.next(tk, "w-dead", id)
			e.start(id, "w-dead")
			e.next(tk, "w-dead", "")
			return id
		}, lost},
		{"thread item running, not in flight, its worker alive", time.Hour, func(e *env) string {
			tk := jobs.NewThreadKey("acme", "t1")
			e.claim(tk, "w-dead")
			id := e.queueWork(tk)
			e.next(tk, "w-dead", id)
			e.start(id, "w1") // w1 lost the thread to w-dead, which died, but still runs it
			e.next(tk, "w-dead", "")
			return id
		}, left(jobs.Running)},
		{"thread item running, owner alive, not in flight", time.Hour, func(e *env) string {
			tk := jobs.NewThreadKey("acme", "t1")
			e.claim(tk, "w1")
			id := e.queueWork(tk)
			e.next(tk, "w1", id)
			e.start(id, "w-dead")
			e.next(tk, "w1", "")
			return id
		}, left(jobs.Running)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.beat("w-dead")
			e.beat("w1")
			id := tc.setup(e)
			e.clock.Advance(tc.age)
			e.beat("w1") // w1 lives; w-dead's heartbeat is stale by now

			rep := e.janitor("janitor-1").Sweep(e.ctx)
			st, errName := e.status(id)
			if st != tc.want.status || errName != tc.want.errName {
				t.Errorf("status %s (error %q), want %s (error %q)", st, errName, tc.want.status, tc.want.errName)
			}
			if got := slices.Contains(e.tasks.requeuedIDs(), id); got != tc.want.requeued {
				t.Errorf("requeued = %v, want %v", got, tc.want.requeued)
			}
			wantEnded, wantRequeued, wantActive := 0, 0, int64(1)
			if tc.want.status.Terminal() {
				wantEnded, wantActive = 1, 0
			}
			if tc.want.requeued {
				wantRequeued = 1
			}
			if rep.StuckEnded != wantEnded || rep.StuckRequeued != wantRequeued || rep.ActiveDropped != 0 {
				t.Errorf("report ended/requeued/dropped = %d/%d/%d, want %d/%d/0", rep.StuckEnded, rep.StuckRequeued, rep.ActiveDropped, wantEnded, wantRequeued)
			}
			if n := e.active("acme"); n != wantActive {
				t.Errorf("tenant has %d active executions, want %d", n, wantActive)
			}
			if tc.want.status.Terminal() {
				ex, _ := e.recs.Get(e.ctx, "", id)
				if ex.FinishedAt == nil || ex.Error == nil || !strings.Contains(ex.Error.Value, "lost") {
					t.Errorf("ended without a finish time or a clear message: %+v", ex.Error)
				}
			}

			// Sweeping again, a period later, changes nothing: a requeued task is
			// pending now.
			e.nextStuckPeriod()
			rep = e.janitor("janitor-1").Sweep(e.ctx)
			if rep.StuckEnded != 0 || rep.StuckRequeued != 0 {
				t.Errorf("second sweep: ended/requeued = %d/%d, want 0/0", rep.StuckEnded, rep.StuckRequeued)
			}
		})
	}
}

// nextStuckPeriod lets the next sweep settle stuck executions again, as if
// StuckAfter/2 had passed: the once-per-period lock lives in Redis's time.
func (e *env) nextStuckPeriod() {
	e.t.Helper()
	if err := e.rdb.Del(e.ctx, "ci:lock:stuck").Err(); err != nil {
		e.t.Fatal(err)
	}
}

// next takes the next item of tk for worker, which must hold its last claim and get
// want ("" = none left).
func (e *env) next(tk jobs.ThreadKey, worker, want string) {
	e.t.Helper()
	if l := e.leases[tk]; l.Worker != worker {
		e.t.Fatalf("next of %s for %s: the last claim is %s's", tk, worker, l.Worker)
	}
	got, err := e.threads.Next(e.ctx, e.leases[tk])
	if err != nil || got != want {
		e.t.Fatalf("next of %s = %q, %v; want %q", tk, got, err, want)
	}
}

// TestSweepStuckDropsEndedAndExpired pins that the active index heals itself: an
// entry whose record ended, or expired, is dropped, which frees the tenant's active
// quota slot it held.
func TestSweepStuckDropsEndedAndExpired(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	done := e.oneOff()
	done.Status = jobs.Succeeded
	if ok, _, err := e.recs.Transition(e.ctx, done, jobs.Queued); !ok || err != nil {
		t.Fatal(ok, err)
	}
	created := float64(e.clock.Now().UnixMilli())
	// What a crash or an older version left: the ended one, and one whose record expired.
	e.rdb.ZAdd(e.ctx, "ci:ten:acme:active", redis.Z{Score: created, Member: done.ID}, redis.Z{Score: created, Member: jobs.NewID()})
	e.rdb.ZAdd(e.ctx, "ci:ten:globex:active", redis.Z{Score: created, Member: jobs.NewID()})
	e.clock.Advance(stuckAfter)

	rep := e.janitor("janitor-1").Sweep(e.ctx)
	if rep.ActiveDropped != 3 || rep.StuckEnded != 0 || rep.StuckRequeued != 0 {
		t.Errorf("dropped/ended/requeued = %d/%d/%d, want 3/0/0", rep.ActiveDropped, rep.StuckEnded, rep.StuckRequeued)
	}
	for _, tenant := range []string{"acme", "globex"} {
		if n := e.active(tenant); n != 0 {
			t.Errorf("%s: %d active left, want 0", tenant, n)
		}
	}
	if st, _ := e.status(done.ID); st != jobs.Succeeded {
		t.Errorf("ended execution now %s", st)
	}
}

// TestSweepStuckNotHiddenByLongRunning pins that however many executions legitimately
// wait or run past StuckAfter, in any tenant, the stuck ones among them are all
// settled in one sweep.
func TestSweepStuckNotHiddenByLongRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.beat("w1")
	var waiting []string
	for i := range 300 {
		id := e.oneOff().ID
		e.tasks.setPending(id) // a backlog asynq will get to
		waiting = append(waiting, id)
		if i%100 == 0 {
			e.clock.Advance(time.Millisecond)
		}
	}
	var stuck []string
	for _, tenant := range []string{"acme", "globex", "initech"} {
		ex := &jobs.Execution{ID: jobs.NewID(), Tenant: tenant, Status: jobs.Queued, CreatedAt: e.clock.Now()}
		if _, err := e.recs.Create(e.ctx, ex, "", ""); err != nil {
			t.Fatal(err)
		}
		stuck = append(stuck, ex.ID)
	}
	e.clock.Advance(time.Hour)

	rep := e.janitor("janitor-1").Sweep(e.ctx)
	got := e.tasks.requeuedIDs()
	slices.Sort(got)
	slices.Sort(stuck)
	if rep.StuckRequeued != len(stuck) || !slices.Equal(got, stuck) {
		t.Errorf("requeued %d: %v, want %v", rep.StuckRequeued, got, stuck)
	}
	for _, id := range waiting[:3] {
		if st, _ := e.status(id); st != jobs.Queued {
			t.Errorf("%s: %s, want left queued", id, st)
		}
	}
}

// TestSweepStuckConcurrentJanitors pins that janitors sweeping at once end each lost
// execution once.
func TestSweepStuckConcurrentJanitors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.beat("w-dead")
	var ids []string
	for range 20 {
		id := e.oneOff().ID
		e.start(id, "w-dead")
		ids = append(ids, id)
	}
	e.clock.Advance(time.Hour)
	reps := make([]janitor.Report, 3)
	var wg sync.WaitGroup
	for i := range reps {
		j := e.janitor(fmt.Sprintf("janitor-%d", i))
		wg.Go(func() { reps[i] = j.Sweep(e.ctx) })
	}
	wg.Wait()
	ended := 0
	for _, r := range reps {
		ended += r.StuckEnded
	}
	if ended != len(ids) {
		t.Errorf("ended %d across janitors, want %d", ended, len(ids))
	}
	for _, id := range ids {
		if st, name := e.status(id); st != jobs.Failed || name != string(jobs.ErrWorkerLost) {
			t.Errorf("%s: %s %q, want failed WorkerLost", id, st, name)
		}
	}
}

// TestSweepStuckOncePerPeriod pins that the stuck sweep, which walks every tenant's
// index, runs once per period across janitors.
func TestSweepStuckOncePerPeriod(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.oneOff()
	e.clock.Advance(stuckAfter)
	if rep := e.janitor("janitor-1").Sweep(e.ctx); rep.StuckRequeued != 1 {
		t.Fatalf("first sweep requeued %d, want 1", rep.StuckRequeued)
	}
	e.oneOff()
	e.clock.Advance(stuckAfter)
	if rep := e.janitor("janitor-2").Sweep(e.ctx); rep.StuckRequeued != 0 {
		t.Errorf("a sweep within the period requeued %d, want 0", rep.StuckRequeued)
	}
	e.nextStuckPeriod()
	if rep := e.janitor("janitor-2").Sweep(e.ctx); rep.StuckRequeued != 1 {
		t.Errorf("the next period's sweep requeued %d, want 1", rep.StuckRequeued)
	}
}
