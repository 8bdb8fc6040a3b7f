package janitor_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/janitor"
	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/threadq"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/sandboxtest"
	"github.com/codeinterp/codeinterp/storage"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

const (
	heartbeatTTL = 15 * time.Second
	idlePause    = time.Minute
	idleReap     = 30 * time.Minute
	orphanAge    = time.Minute
	stuckAfter   = 10 * time.Minute
	retention    = 48 * time.Hour
	urlTTL       = time.Hour
)

// fakeStore is an in-memory janitor.Storage that records what was put and expired.
type fakeStore struct {
	mu      sync.Mutex
	puts    map[string]int
	data    map[string][]byte
	deletes []deleteCall
	// prefixDeletes are DeletePrefix's prefixes, in order.
	prefixDeletes []string
	// onPut, if set, runs after a Put stored its data (to simulate a slow upload).
	onPut func(key string)
}

type deleteCall struct {
	prefix string
	before time.Time
}

func (s *fakeStore) Put(_ context.Context, key string, r io.Reader, _ int64, contentType string) (storage.Object, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return storage.Object{}, err
	}
	s.mu.Lock()
	s.puts[key]++
	s.data[key] = data
	onPut := s.onPut
	s.mu.Unlock()
	if onPut != nil {
		onPut(key)
	}
	return storage.Object{Key: key, Size: int64(len(data)), ContentType: contentType}, nil
}

func (s *fakeStore) DeleteBefore(_ context.Context, prefix string, before time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deletes = append(s.deletes, deleteCall{prefix, before})
	return 3, nil
}

func (s *fakeStore) Retention() time.Duration { return retention }

// URLTTL is the fake's download-link life.
func (s *fakeStore) URLTTL() time.Duration { return urlTTL }

func (s *fakeStore) DeletePrefix(_ context.Context, prefix string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prefixDeletes = append(s.prefixDeletes, prefix)
	return 1, nil
}

func (s *fakeStore) prefixesDeleted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.prefixDeletes)
}

func (s *fakeStore) putCount(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts[key]
}

func (s *fakeStore) totalPuts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.puts {
		n += c
	}
	return n
}

func (s *fakeStore) object(key string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data[key]
}

func (s *fakeStore) deleteCalls() []deleteCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deletes)
}

// env is one test's world: its own Redis database, fake runtime, store and clock.
type env struct {
	t       *testing.T
	ctx     context.Context
	rdb     *redis.Client // for what older versions or crashes left (keys: see records' keys.go)
	clock   *testenv.Clock
	threads *threadq.Queue
	recs    *records.Store
	fake    *sandboxtest.Fake
	store   *fakeStore
	tasks   *fakeTasks
	leases  map[jobs.ThreadKey]threadq.Lease // the last claim of each thread
}

func newEnv(t *testing.T) *env {
	t.Helper()
	addr, db := testenv.RedisDB(t)
	return newEnvOn(t, redis.NewClient(&redis.Options{Addr: addr, DB: db}))
}

// newEnvOn is newEnv over rdb, closed when the test ends.
func newEnvOn(t *testing.T, rdb *redis.Client) *env {
	t.Helper()
	t.Cleanup(func() { rdb.Close() })
	clk := testenv.NewClock(time.Now().UTC().Truncate(time.Second))
	threads := threadq.New(rdb, threadq.Config{Prefix: "ci:", HeartbeatTTL: heartbeatTTL, Now: clk.Now})
	recs := records.New(rdb, records.Config{Prefix: "ci:", TTL: time.Hour, Threads: threads, Now: clk.Now})
	fake := sandboxtest.NewFake()
	fake.Now = clk.Now
	return &env{
		t: t, ctx: context.Background(), rdb: rdb, clock: clk, threads: threads, recs: recs, fake: fake,
		store: &fakeStore{puts: map[string]int{}, data: map[string][]byte{}},
		tasks: &fakeTasks{pending: map[string]bool{}},
	}
}

func (e *env) janitor(id string) *janitor.Janitor {
	return janitor.New(janitor.Config{
		Records: e.recs, Threads: e.threads, Sandboxes: e.fake, Store: e.store, Tasks: e.tasks, ID: id,
		IdlePause: idlePause, IdleReap: idleReap, OrphanAge: orphanAge, StuckAfter: stuckAfter, ExpireEvery: time.Hour,
		Logger: slog.New(slog.DiscardHandler), Now: e.clock.Now,
	})
}

func (e *env) beat(worker string) {
	e.t.Helper()
	if err := e.threads.Beat(e.ctx, worker, true); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) claim(tk jobs.ThreadKey, worker string) {
	e.t.Helper()
	lease, _, err := e.threads.Claim(e.ctx, tk, worker)
	if err != nil {
		e.t.Fatalf("claim %s for %s: %v", tk, worker, err)
	}
	if e.leases == nil {
		e.leases = map[jobs.ThreadKey]threadq.Lease{}
	}
	e.leases[tk] = lease
}

// markActive records tk as active at `at`, with a running sandbox.
func (e *env) markActive(tk jobs.ThreadKey, at time.Time) {
	e.t.Helper()
	if err := e.recs.MarkActive(e.ctx, tk, at); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) setSandbox(tk jobs.ThreadKey, state jobs.SandboxState) {
	e.t.Helper()
	if err := e.recs.SetThreadSandbox(e.ctx, tk, state, false); err != nil {
		e.t.Fatal(err)
	}
}

// liveThread makes tk exist, owned by the live worker owner, active now.
func (e *env) liveThread(tk jobs.ThreadKey, owner string) {
	e.t.Helper()
	e.beat(owner)
	e.claim(tk, owner)
	e.markActive(tk, e.clock.Now())
}

// queueWork queues an execution on thread tk and returns its id.
func (e *env) queueWork(tk jobs.ThreadKey) string {
	e.t.Helper()
	tenant, thread := tk.Split()
	ex := &jobs.Execution{ID: jobs.NewID(), Tenant: tenant, ThreadID: thread, Status: jobs.Queued, CreatedAt: e.clock.Now()}
	if _, err := e.recs.Create(e.ctx, ex, "", ""); err != nil {
		e.t.Fatal(err)
	}
	return ex.ID
}

// queuedKinds returns the kinds of the items queued on tk, in order ("" = code).
func (e *env) queuedKinds(tk jobs.ThreadKey) []jobs.Kind {
	e.t.Helper()
	st, err := e.threads.State(e.ctx, tk)
	if err != nil {
		e.t.Fatal(err)
	}
	kinds := []jobs.Kind{}
	for _, id := range st.Queued {
		ex, err := e.recs.Get(e.ctx, "", id)
		if err != nil {
			e.t.Fatalf("queued item %s: %v", id, err)
		}
		kinds = append(kinds, ex.Kind)
	}
	return kinds
}

func (e *env) owner(tk jobs.ThreadKey) string {
	e.t.Helper()
	st, err := e.threads.State(e.ctx, tk)
	if err != nil {
		e.t.Fatal(err)
	}
	return st.Owner
}

func (e *env) threadState(tk jobs.ThreadKey) *records.ThreadState {
	e.t.Helper()
	st, err := e.recs.ThreadState(e.ctx, tk)
	if err != nil {
		e.t.Fatal(err)
	}
	if st == nil {
		e.t.Fatalf("thread %s has no state", tk)
	}
	return st
}

// threadSandbox creates tk's sandbox in the fake, made by owner, with one file in its
// workspace.
func (e *env) threadSandbox(tk jobs.ThreadKey, owner string) *sandboxtest.FakeSandbox {
	e.t.Helper()
	tenant, thread := tk.Split()
	sb, err := e.fake.Create(e.ctx, sandbox.Spec{Tenant: tenant, Thread: thread, Owner: owner})
	if err != nil {
		e.t.Fatal(err)
	}
	content := "hello from " + string(tk)
	if err := sb.PutFiles(e.ctx, []sandbox.File{{Name: "notes.txt", Body: strings.NewReader(content), Size: int64(len(content))}}); err != nil {
		e.t.Fatal(err)
	}
	return sb.(*sandboxtest.FakeSandbox)
}

func (e *env) exists(name string) bool {
	_, ok := e.fake.Sandboxes()[name]
	return ok
}

func (e *env) threadName(tk jobs.ThreadKey) string {
	tenant, thread := tk.Split()
	return e.fake.ThreadName(tenant, thread)
}

func snapshots(sb *sandboxtest.FakeSandbox) int {
	_, _, _, n := sb.Stats()
	return n
}

// tarFiles returns the files of a tar archive by name.
func tarFiles(t *testing.T, data []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("snapshot is not a tar archive: %v", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[hdr.Name] = string(b)
	}
}

func noOrphanWork(t *testing.T, rep janitor.Report) {
	t.Helper()
	if rep.OrphansRemoved != 0 || rep.OrphansSaved != 0 {
		t.Errorf("orphans removed/saved = %d/%d, want 0/0", rep.OrphansRemoved, rep.OrphansSaved)
	}
}

// TestSweepIdleDecisions pins what sweepIdle asks of a thread's live owner, by the
// thread's sandbox state, idle time, queue and owner.
func TestSweepIdleDecisions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		state     jobs.SandboxState
		idle      time.Duration
		ownerDead bool // the owner's heartbeat goes stale during the idle time
		noOwner   bool // nobody ever claimed the thread
		work      bool // an execution waits in the thread's queue
		want      jobs.Kind
	}{
		{name: "running, fresh", state: jobs.SandboxRunning, idle: 10 * time.Second},
		{name: "running, just under IdlePause", state: jobs.SandboxRunning, idle: idlePause - time.Second},
		{name: "running, exactly IdlePause", state: jobs.SandboxRunning, idle: idlePause, want: jobs.KindPause},
		{name: "running, idle 10m", state: jobs.SandboxRunning, idle: 10 * time.Minute, want: jobs.KindPause},
		{name: "running, just under IdleReap", state: jobs.SandboxRunning, idle: idleReap - time.Second, want: jobs.KindPause},
		{name: "running, exactly IdleReap", state: jobs.SandboxRunning, idle: idleReap, want: jobs.KindReap},
		{name: "running, idle 45m", state: jobs.SandboxRunning, idle: 45 * time.Minute, want: jobs.KindReap},
		{name: "paused, idle 10m", state: jobs.SandboxPaused, idle: 10 * time.Minute},
		{name: "paused, just under IdleReap", state: jobs.SandboxPaused, idle: idleReap - time.Second},
		{name: "paused, exactly IdleReap", state: jobs.SandboxPaused, idle: idleReap, want: jobs.KindReap},
		{name: "paused, idle 45m", state: jobs.SandboxPaused, idle: 45 * time.Minute, want: jobs.KindReap},
		{name: "running with work queued, idle 10m", state: jobs.SandboxRunning, idle: 10 * time.Minute, work: true},
		{name: "running with work queued, idle 45m", state: jobs.SandboxRunning, idle: 45 * time.Minute, work: true},
		{name: "owner dead, idle 10m", state: jobs.SandboxRunning, idle: 10 * time.Minute, ownerDead: true},
		{name: "owner dead, idle 45m", state: jobs.SandboxRunning, idle: 45 * time.Minute, ownerDead: true},
		{name: "no owner, idle 45m", state: jobs.SandboxRunning, idle: 45 * time.Minute, noOwner: true},
		{name: "sandbox none, idle 10m", state: jobs.SandboxNone, idle: 10 * time.Minute},
		{name: "sandbox none, idle 45m", state: jobs.SandboxNone, idle: 45 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			j := e.janitor("janitor-1")
			tk := jobs.NewThreadKey("acme", "t1")
			if tc.noOwner {
				e.markActive(tk, e.clock.Now())
			} else {
				e.liveThread(tk, "w1")
			}
			if tc.state != jobs.SandboxRunning {
				e.setSandbox(tk, tc.state)
			}
			var want []jobs.Kind
			if tc.work {
				e.queueWork(tk)
				want = append(want, "")
			}
			e.clock.Advance(tc.idle)
			if !tc.ownerDead && !tc.noOwner {
				e.beat("w1")
			}

			rep := j.Sweep(e.ctx)
			wantPause, wantReap := 0, 0
			switch tc.want {
			case jobs.KindPause:
				wantPause = 1
				want = append(want, jobs.KindPause)
			case jobs.KindReap:
				wantReap = 1
				want = append(want, jobs.KindReap)
			}
			if rep.PauseRequested != wantPause || rep.ReapRequested != wantReap {
				t.Errorf("report pause/reap requested = %d/%d, want %d/%d", rep.PauseRequested, rep.ReapRequested, wantPause, wantReap)
			}
			noOrphanWork(t, rep)
			if got := e.queuedKinds(tk); !slices.Equal(got, want) {
				t.Errorf("queued kinds = %q, want %q", got, want)
			}
			// The janitor only asks: the thread's state is the owner's to change.
			if st := e.threadState(tk); st.Sandbox != tc.state {
				t.Errorf("sandbox state = %q, want it left %q", st.Sandbox, tc.state)
			}

			// Sweeping again, at the same time, asks nothing more: a request waits in
			// the queue.
			rep = j.Sweep(e.ctx)
			if rep.PauseRequested != 0 || rep.ReapRequested != 0 {
				t.Errorf("second sweep: pause/reap requested = %d/%d, want 0/0", rep.PauseRequested, rep.ReapRequested)
			}
			if got := e.queuedKinds(tk); !slices.Equal(got, want) {
				t.Errorf("second sweep: queued kinds = %q, want %q", got, want)
			}
		})
	}
}

// TestSweepIdleManyThreads pins that sweepIdle decides each idle thread on its own:
// threads it must leave alone (sorted first, as the oldest) do not stop it from
// asking about the others.
func TestSweepIdleManyThreads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tks := map[string]jobs.ThreadKey{}
	for _, name := range []string{"dead", "none", "work", "paused-reap", "running-reap", "paused", "running-pause", "fresh", "other-tenant"} {
		tenant := "acme"
		if name == "other-tenant" {
			tenant = "globex"
		}
		tks[name] = jobs.NewThreadKey(tenant, name)
	}
	// w-dead stops beating now; everything else is set up once it is dead.
	e.beat("w-dead")
	e.claim(tks["dead"], "w-dead")
	e.clock.Advance(heartbeatTTL + time.Second)
	now := e.clock.Now()
	e.markActive(tks["dead"], now.Add(-59*time.Minute))

	e.beat("w1")
	for _, name := range []string{"none", "work", "paused-reap", "running-reap", "paused", "running-pause", "fresh", "other-tenant"} {
		e.claim(tks[name], "w1")
	}
	e.markActive(tks["none"], now.Add(-58*time.Minute))
	e.setSandbox(tks["none"], jobs.SandboxNone)
	e.markActive(tks["work"], now.Add(-57*time.Minute))
	e.queueWork(tks["work"])
	e.markActive(tks["paused-reap"], now.Add(-50*time.Minute))
	e.setSandbox(tks["paused-reap"], jobs.SandboxPaused)
	e.markActive(tks["running-reap"], now.Add(-40*time.Minute))
	e.markActive(tks["paused"], now.Add(-20*time.Minute))
	e.setSandbox(tks["paused"], jobs.SandboxPaused)
	e.markActive(tks["running-pause"], now.Add(-5*time.Minute))
	e.markActive(tks["other-tenant"], now.Add(-2*time.Minute))
	e.markActive(tks["fresh"], now.Add(-10*time.Second))

	rep := e.janitor("janitor-1").Sweep(e.ctx)
	if rep.PauseRequested != 2 || rep.ReapRequested != 2 {
		t.Errorf("pause/reap requested = %d/%d, want 2/2", rep.PauseRequested, rep.ReapRequested)
	}
	want := map[string][]jobs.Kind{
		"dead": {}, "none": {}, "work": {""}, "paused-reap": {jobs.KindReap}, "running-reap": {jobs.KindReap},
		"paused": {}, "running-pause": {jobs.KindPause}, "fresh": {}, "other-tenant": {jobs.KindPause},
	}
	for name, kinds := range want {
		if got := e.queuedKinds(tks[name]); !slices.Equal(got, kinds) {
			t.Errorf("%s: queued kinds = %q, want %q", name, got, kinds)
		}
	}
}

// TestSweepIdleNotStarvedByReapedThreads pins that reaped threads do not hide idle
// ones: a thread whose sandbox is gone leaves the activity set, so past any number of
// them a running thread idle for IdlePause is still asked to pause.
func TestSweepIdleNotStarvedByReapedThreads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := e.clock.Now()
	for i := range 1000 {
		tk := jobs.NewThreadKey("acme", fmt.Sprintf("reaped-%d", i))
		e.markActive(tk, now.Add(-50*time.Minute))
		e.setSandbox(tk, jobs.SandboxNone)
	}
	tk := jobs.NewThreadKey("acme", "idle")
	e.beat("w1")
	e.claim(tk, "w1")
	e.markActive(tk, now.Add(-10*time.Minute))

	rep := e.janitor("janitor-1").Sweep(e.ctx)
	if rep.PauseRequested != 1 || !slices.Equal(e.queuedKinds(tk), []jobs.Kind{jobs.KindPause}) {
		t.Errorf("pause requested = %d, queued %q: a running thread idle 10 min behind 1000 reaped ones was not asked to pause",
			rep.PauseRequested, e.queuedKinds(tk))
	}
	if tks, err := e.recs.ActiveThreads(e.ctx); err != nil || len(tks) != 1 {
		t.Errorf("activity set holds %d threads (%v), want only the one with a sandbox", len(tks), err)
	}
}

// TestSweepIdleNotStarvedByIgnoredThreads pins that sweepIdle reads every idle
// thread, page after page: threads it must leave alone (orphans, whose owner is gone,
// stay in the activity set until reclaimed) never hide newer idle ones.
func TestSweepIdleNotStarvedByIgnoredThreads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := e.clock.Now()
	for i := range 1200 {
		e.markActive(jobs.NewThreadKey("acme", fmt.Sprintf("orphan-%d", i)), now.Add(-50*time.Minute))
	}
	e.beat("w1")
	tks := []jobs.ThreadKey{jobs.NewThreadKey("acme", "idle"), jobs.NewThreadKey("globex", "long-idle")}
	for _, tk := range tks {
		e.claim(tk, "w1")
	}
	e.markActive(tks[0], now.Add(-10*time.Minute))
	e.markActive(tks[1], now.Add(-40*time.Minute))

	rep := e.janitor("janitor-1").Sweep(e.ctx)
	if rep.PauseRequested != 1 || rep.ReapRequested != 1 {
		t.Errorf("pause/reap requested = %d/%d, want 1/1 past 1200 orphaned threads", rep.PauseRequested, rep.ReapRequested)
	}
	for tk, want := range map[jobs.ThreadKey][]jobs.Kind{tks[0]: {jobs.KindPause}, tks[1]: {jobs.KindReap}} {
		if got := e.queuedKinds(tk); !slices.Equal(got, want) {
			t.Errorf("%s: queued %q, want %q", tk, got, want)
		}
	}
}

// TestReapedThreadReclaimedAfterReuse pins that a reaped thread that is used again is
// back in the activity set, so the orphan sweep still finds its new sandbox when the
// worker dies.
func TestReapedThreadReclaimedAfterReuse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tk := jobs.NewThreadKey("acme", "t1")
	e.liveThread(tk, "w-dead")
	e.setSandbox(tk, jobs.SandboxNone) // reaped
	if tks, _ := e.recs.ActiveThreads(e.ctx); slices.Contains(tks, tk) {
		t.Fatal("a reaped thread stayed in the activity set")
	}
	// Used again: the owner marks it active, then makes a sandbox; then it dies.
	e.markActive(tk, e.clock.Now())
	e.threadSandbox(tk, "w-dead")
	e.clock.Advance(orphanAge + heartbeatTTL)

	rep := e.janitor("janitor-1").Sweep(e.ctx)
	if rep.OrphansSaved != 1 || rep.OrphansRemoved != 1 || e.exists(e.threadName(tk)) {
		t.Errorf("orphans saved/removed = %d/%d (sandbox left: %v), want the reused thread's reclaimed with a snapshot",
			rep.OrphansSaved, rep.OrphansRemoved, e.exists(e.threadName(tk)))
	}
}

// TestReclaimDeadWorkersThread pins that a thread sandbox whose worker died, with no
// work waiting, is snapshotted to storage, removed, recorded as gone with a
// snapshot, and that the janitor lets go of the thread afterwards.
func TestReclaimDeadWorkersThread(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(e *env, tk jobs.ThreadKey)
	}{
		{"worker never beat, thread unowned", func(e *env, tk jobs.ThreadKey) {
			e.markActive(tk, e.clock.Now())
			e.clock.Advance(orphanAge)
		}},
		{"owner's heartbeat went stale", func(e *env, tk jobs.ThreadKey) {
			e.liveThread(tk, "w-dead")
			e.clock.Advance(orphanAge + heartbeatTTL)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tk := jobs.NewThreadKey("acme", "t1")
			sb := e.threadSandbox(tk, "w-dead")
			tc.setup(e, tk)

			rep := e.janitor("janitor-1").Sweep(e.ctx)
			if rep.OrphansSaved != 1 || rep.OrphansRemoved != 1 {
				t.Errorf("orphans saved/removed = %d/%d, want 1/1", rep.OrphansSaved, rep.OrphansRemoved)
			}
			if rep.PauseRequested != 0 || rep.ReapRequested != 0 {
				t.Errorf("pause/reap requested = %d/%d for an orphan", rep.PauseRequested, rep.ReapRequested)
			}
			key := jobs.SnapshotKey(tk)
			if n := e.store.putCount(key); n != 1 || e.store.totalPuts() != 1 {
				t.Fatalf("snapshot puts of %s = %d (of %d puts), want 1", key, n, e.store.totalPuts())
			}
			if files := tarFiles(t, e.store.object(key)); files["notes.txt"] != "hello from acme/t1" {
				t.Errorf("snapshot holds %q, want the workspace's notes.txt", files)
			}
			if snapshots(sb) != 1 {
				t.Errorf("sandbox snapshotted %d times, want 1", snapshots(sb))
			}
			if e.exists(e.threadName(tk)) {
				t.Error("orphaned thread sandbox not removed")
			}
			st := e.threadState(tk)
			if st.Sandbox != jobs.SandboxNone || !st.Snapshot {
				t.Errorf("thread state sandbox=%q snapshot=%v, want none with a snapshot", st.Sandbox, st.Snapshot)
			}
			if o := e.owner(tk); o != "" {
				t.Errorf("thread still owned by %q after the reclaim", o)
			}
			if kinds := e.queuedKinds(tk); len(kinds) != 0 {
				t.Errorf("reclaim queued %q", kinds)
			}

			// Nothing left to do on a second sweep.
			e.clock.Advance(time.Second)
			rep = e.janitor("janitor-1").Sweep(e.ctx)
			noOrphanWork(t, rep)
			if n := e.store.putCount(key); n != 1 {
				t.Errorf("second sweep: snapshot puts = %d, want 1", n)
			}
		})
	}
}

// TestReclaimLeavesThreadWithWork pins that a dead worker's thread sandbox is left as
// it is, for a worker to adopt, while work waits for the thread (queued or in
// flight), and that the janitor does not keep the thread.
func TestReclaimLeavesThreadWithWork(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		inflight bool
	}{{"work queued", false}, {"work in flight", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tk := jobs.NewThreadKey("acme", "t1")
			sb := e.threadSandbox(tk, "w-dead")
			e.liveThread(tk, "w-dead")
			id := e.queueWork(tk)
			wantQueued := []jobs.Kind{""}
			if tc.inflight {
				got, err := e.threads.Next(e.ctx, e.leases[tk])
				if err != nil || got != id {
					t.Fatalf("next = %q, %v; want %q", got, err, id)
				}
				wantQueued = []jobs.Kind{}
			}
			e.clock.Advance(orphanAge + heartbeatTTL) // w-dead is dead, its sandbox old

			rep := e.janitor("janitor-1").Sweep(e.ctx)
			noOrphanWork(t, rep)
			if !e.exists(e.threadName(tk)) {
				t.Fatal("sandbox removed although work waits for its thread")
			}
			if snapshots(sb) != 0 || e.store.totalPuts() != 0 {
				t.Errorf("snapshots taken/stored = %d/%d, want none", snapshots(sb), e.store.totalPuts())
			}
			st := e.threadState(tk)
			if st.Sandbox != jobs.SandboxRunning || st.Snapshot {
				t.Errorf("thread state sandbox=%q snapshot=%v, want it left running without snapshot", st.Sandbox, st.Snapshot)
			}
			if o := e.owner(tk); o != "" {
				t.Errorf("thread owned by %q after the sweep, want released for a worker", o)
			}
			if got := e.queuedKinds(tk); !slices.Equal(got, wantQueued) {
				t.Errorf("queued kinds = %q, want %q", got, wantQueued)
			}
			if tc.inflight {
				if st, _ := e.threads.State(e.ctx, tk); st.Inflight != id {
					t.Errorf("in-flight item = %q, want %q kept for the next owner", st.Inflight, id)
				}
			}
		})
	}
}

// TestLiveOwnedThreadSandboxUntouched pins that a thread sandbox whose thread has a
// live owner is never snapshotted or removed, whoever created it.
func TestLiveOwnedThreadSandboxUntouched(t *testing.T) {
	t.Parallel()
	for _, creator := range []string{"w1", "w-dead"} {
		t.Run("created by "+creator, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tk := jobs.NewThreadKey("acme", "t1")
			sb := e.threadSandbox(tk, creator)
			if creator != "w1" {
				e.beat(creator) // it beat once, then died; w1 adopted the thread
			}
			e.clock.Advance(2 * time.Minute)
			e.liveThread(tk, "w1") // active just now: no idle request either
			for range 3 {
				rep := e.janitor("janitor-1").Sweep(e.ctx)
				noOrphanWork(t, rep)
				e.clock.Advance(idleReap + time.Minute) // old, and long idle
				e.beat("w1")
			}
			if !e.exists(e.threadName(tk)) {
				t.Fatal("a live owner's thread sandbox was removed")
			}
			if snapshots(sb) != 0 || e.store.totalPuts() != 0 {
				t.Errorf("snapshots taken/stored = %d/%d, want none", snapshots(sb), e.store.totalPuts())
			}
			if o := e.owner(tk); o != "w1" {
				t.Errorf("thread owner = %q, want w1 kept", o)
			}
			if st := e.threadState(tk); st.Snapshot {
				t.Error("thread marked as snapshotted")
			}
		})
	}
}

// TestOrphanBlankAndOneOff pins that blank and one-off sandboxes of a dead worker
// older than OrphanAge are removed, and younger ones and a live worker's are kept.
func TestOrphanBlankAndOneOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.beat("w-dead")
	e.beat("w-live")
	create := func(kind, owner string) string {
		t.Helper()
		var sb sandbox.Sandbox
		var err error
		if kind == "blank" {
			sb, err = e.fake.CreateBlank(e.ctx, sandbox.Spec{Owner: owner})
		} else {
			sb, err = e.fake.Create(e.ctx, sandbox.Spec{Tenant: "acme", Owner: owner})
		}
		if err != nil {
			t.Fatal(err)
		}
		return sb.(*sandboxtest.FakeSandbox).Name()
	}
	oldDeadBlank := create("blank", "w-dead")
	oldDeadOneOff := create("one-off", "w-dead")
	oldLiveBlank := create("blank", "w-live")
	oldLiveOneOff := create("one-off", "w-live")
	oldNeverBeat := create("one-off", "w-unknown")
	e.clock.Advance(orphanAge - 10*time.Second)
	atAgeDeadBlank := create("blank", "w-dead") // exactly OrphanAge old at the sweep
	e.clock.Advance(10 * time.Second)
	e.beat("w-live")
	youngDeadBlank := create("blank", "w-dead")
	youngDeadOneOff := create("one-off", "w-dead")
	e.clock.Advance(orphanAge - 10*time.Second)
	e.beat("w-live")
	// Now: the first ones are 110 s old, atAge 60 s, the young ones 50 s; w-dead
	// last beat 110 s ago.

	rep := e.janitor("janitor-1").Sweep(e.ctx)
	if rep.OrphansRemoved != 4 || rep.OrphansSaved != 0 {
		t.Errorf("orphans removed/saved = %d/%d, want 4/0", rep.OrphansRemoved, rep.OrphansSaved)
	}
	for name, want := range map[string]bool{
		oldDeadBlank: false, oldDeadOneOff: false, oldNeverBeat: false, atAgeDeadBlank: false,
		oldLiveBlank: true, oldLiveOneOff: true, youngDeadBlank: true, youngDeadOneOff: true,
	} {
		if got := e.exists(name); got != want {
			t.Errorf("%s exists = %v, want %v", name, got, want)
		}
	}
	if e.store.totalPuts() != 0 {
		t.Errorf("%d snapshots stored for blank and one-off sandboxes", e.store.totalPuts())
	}

	// Once old enough, the dead worker's young ones go too; the live worker's stay.
	e.clock.Advance(20 * time.Second)
	e.beat("w-live")
	rep = e.janitor("janitor-1").Sweep(e.ctx)
	if rep.OrphansRemoved != 2 {
		t.Errorf("second sweep removed %d, want 2", rep.OrphansRemoved)
	}
	got := []string{}
	for name := range e.fake.Sandboxes() {
		got = append(got, name)
	}
	slices.Sort(got)
	want := []string{oldLiveBlank, oldLiveOneOff}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("sandboxes left = %v, want %v", got, want)
	}
}

// TestOrphanSandboxOfExpiredThread pins that a thread sandbox no active thread names
// (its thread expired) is removed, without a snapshot, once its dead worker's
// sandbox is older than IdleReap, and kept before that or while its worker lives.
func TestOrphanSandboxOfExpiredThread(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.beat("w-dead")
	e.beat("w-live")
	gone := jobs.NewThreadKey("acme", "expired")
	goneLive := jobs.NewThreadKey("acme", "expired-live")
	e.threadSandbox(gone, "w-dead")
	e.threadSandbox(goneLive, "w-live")

	e.clock.Advance(orphanAge + time.Minute)
	e.beat("w-live")
	rep := e.janitor("janitor-1").Sweep(e.ctx)
	noOrphanWork(t, rep)
	if !e.exists(e.threadName(gone)) {
		t.Fatal("expired thread's sandbox removed before IdleReap")
	}

	e.clock.Advance(idleReap)
	e.beat("w-live")
	rep = e.janitor("janitor-1").Sweep(e.ctx)
	if rep.OrphansRemoved != 1 || rep.OrphansSaved != 0 {
		t.Errorf("orphans removed/saved = %d/%d, want 1/0", rep.OrphansRemoved, rep.OrphansSaved)
	}
	if e.exists(e.threadName(gone)) {
		t.Error("expired thread's sandbox of a dead worker kept")
	}
	if !e.exists(e.threadName(goneLive)) {
		t.Error("expired thread's sandbox of a live worker removed")
	}
	if e.store.totalPuts() != 0 {
		t.Errorf("%d snapshots stored for threads no longer active", e.store.totalPuts())
	}
}

// TestConcurrentJanitorsSnapshotOnce pins that janitors sweeping the same dead
// worker's threads at once snapshot and remove each sandbox exactly once.
func TestConcurrentJanitorsSnapshotOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 8
	var tks []jobs.ThreadKey
	var sbs []*sandboxtest.FakeSandbox
	e.beat("w-dead")
	for i := range n {
		tk := jobs.NewThreadKey("acme", fmt.Sprintf("t%d", i))
		tks = append(tks, tk)
		sbs = append(sbs, e.threadSandbox(tk, "w-dead"))
		e.claim(tk, "w-dead")
		e.markActive(tk, e.clock.Now())
	}
	e.clock.Advance(orphanAge + heartbeatTTL)

	ids := []string{"janitor-1", "janitor-2", "janitor-3"}
	reports := make([]janitor.Report, len(ids))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, id := range ids {
		j := e.janitor(id)
		wg.Go(func() {
			<-start
			reports[i] = j.Sweep(e.ctx)
		})
	}
	close(start)
	wg.Wait()

	var saved, removed int
	for _, r := range reports {
		saved += r.OrphansSaved
		removed += r.OrphansRemoved
	}
	if saved != n || removed != n {
		t.Errorf("orphans saved/removed across janitors = %d/%d, want %d/%d", saved, removed, n, n)
	}
	if e.store.totalPuts() != n {
		t.Errorf("%d snapshots stored, want %d", e.store.totalPuts(), n)
	}
	for i, tk := range tks {
		if c := e.store.putCount(jobs.SnapshotKey(tk)); c != 1 {
			t.Errorf("%s: snapshot stored %d times, want 1", tk, c)
		}
		if c := snapshots(sbs[i]); c != 1 {
			t.Errorf("%s: sandbox snapshotted %d times, want 1", tk, c)
		}
		if e.exists(e.threadName(tk)) {
			t.Errorf("%s: sandbox not removed", tk)
		}
		if st := e.threadState(tk); st.Sandbox != jobs.SandboxNone || !st.Snapshot {
			t.Errorf("%s: state sandbox=%q snapshot=%v, want none with a snapshot", tk, st.Sandbox, st.Snapshot)
		}
		if o := e.owner(tk); o != "" {
			t.Errorf("%s: still owned by %q", tk, o)
		}
	}
}

// TestExpiryOncePerPeriod pins that expiry runs once per ExpireEvery across janitors,
// deleting artifacts older than the storage's retention.
func TestExpiryOncePerPeriod(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j1, j2 := e.janitor("janitor-1"), e.janitor("janitor-2")
	var reps [2]janitor.Report
	var wg sync.WaitGroup
	wg.Go(func() { reps[0] = j1.Sweep(e.ctx) })
	wg.Go(func() { reps[1] = j2.Sweep(e.ctx) })
	wg.Wait()
	e.clock.Advance(10 * time.Minute)
	reps[0].ArtifactsExpired += j1.Sweep(e.ctx).ArtifactsExpired
	reps[1].ArtifactsExpired += j2.Sweep(e.ctx).ArtifactsExpired

	calls := e.store.deleteCalls()
	if len(calls) != 1 {
		t.Fatalf("DeleteBefore called %d times in one period, want 1", len(calls))
	}
	if want := e.clock.Now().Add(-10 * time.Minute).Add(-retention); !calls[0].before.Equal(want) || calls[0].prefix != "" {
		t.Errorf("DeleteBefore(%q, %v), want (\"\", %v): now minus the retention", calls[0].prefix, calls[0].before, want)
	}
	if got := reps[0].ArtifactsExpired + reps[1].ArtifactsExpired; got != 3 {
		t.Errorf("artifacts expired across sweeps = %d, want 3 (one expiry)", got)
	}
}
