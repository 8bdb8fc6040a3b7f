package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/codeinterp/codeinterp/internal/janitor"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/sandbox/docker"
	"github.com/codeinterp/codeinterp/storage"
)

// newJanitor returns a janitor for the stack's host with short timings. Tests call
// Sweep themselves, so nothing waits on a schedule.
func (s *stack) newJanitor(pause, reap time.Duration) *janitor.Janitor {
	s.janitors++
	return janitor.New(janitor.Config{
		Records: s.records, Threads: s.threads, Sandboxes: s.runtime, Store: s.store, ID: fmt.Sprintf("%s-janitor-%d", s.prefix, s.janitors),
		IdlePause: pause, IdleReap: reap, OrphanAge: time.Nanosecond, Logger: discardLogger,
	})
}

// sweepUntil sweeps until cond holds.
func sweepUntil(t *testing.T, j *janitor.Janitor, what string, cond func() bool) {
	t.Helper()
	eventually(t, time.Minute, what, func() bool {
		j.Sweep(context.Background())
		return cond()
	})
}

func (s *stack) thread(t *testing.T, id string) threadView {
	t.Helper()
	var th threadView
	if code := s.call(t, "GET", "/v1/threads/"+id, nil, &th); code != http.StatusOK {
		t.Fatalf("GET thread %s: %d", id, code)
	}
	return th
}

// containers lists the sandbox containers of a prefix, by state.
func (s *stack) containers(t *testing.T, prefix string) map[string]string {
	t.Helper()
	list, err := s.docker.ContainerList(context.Background(), container.ListOptions{
		All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelInstall+"="+prefix)),
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range list {
		out[c.Names[0][1:]] = c.State
	}
	return out
}

func TestIdleSandboxPausedThenResumed(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	j := s.newJanitor(300*time.Millisecond, time.Hour)
	s.run(t, map[string]any{"thread_id": "idle", "code": "x = 'state'"})
	name := s.runtime.ThreadName("acme", "idle")
	sweepUntil(t, j, "sandbox paused", func() bool {
		return s.thread(t, "idle").Sandbox == "paused" && s.containers(t, s.prefix)[name] == "paused"
	})
	ex := s.run(t, map[string]any{"thread_id": "idle", "code": "print(x)"})
	if ex.Stdout != "state\n" || !ex.Sandbox.Resumed || ex.Sandbox.KernelRestarted || !ex.Sandbox.Reused {
		t.Fatalf("after pause: %q %+v", ex.Stdout, ex.Sandbox)
	}
	if st := s.containers(t, s.prefix)[name]; st != "running" || s.thread(t, "idle").Sandbox != "running" {
		t.Fatalf("after resume: container %s", st)
	}
	// A sandbox with work queued is never paused.
	id := s.submit(t, "key-a", map[string]any{"thread_id": "idle", "code": "import time\ntime.sleep(1.5)"})
	j.Sweep(context.Background())
	if ex := s.wait(t, id); ex.Status != "succeeded" || ex.Sandbox.Resumed {
		t.Fatalf("long run: %s %+v", ex.Status, ex.Sandbox)
	}
}

func TestIdleSandboxReapedThenRestored(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	j := s.newJanitor(200*time.Millisecond, 700*time.Millisecond)
	s.run(t, map[string]any{"thread_id": "reap", "code": "import os\nos.makedirs('data', exist_ok=True)\nopen('data/kept.txt', 'w').write('kept')\nx = 1"})
	name := s.runtime.ThreadName("acme", "reap")
	sweepUntil(t, j, "sandbox reaped", func() bool {
		_, exists := s.containers(t, s.prefix)[name]
		return s.thread(t, "reap").Sandbox == "none" && !exists
	})
	ex := s.run(t, map[string]any{"thread_id": "reap", "code": "print(open('data/kept.txt').read(), 'x' in globals())"})
	if ex.Stdout != "kept False\n" || !ex.Sandbox.KernelRestarted || ex.Sandbox.Reused {
		t.Fatalf("after reap: %q %+v %+v", ex.Stdout, ex.Error, ex.Sandbox)
	}
	// DELETE removes sandbox and snapshot: nothing comes back.
	req, _ := http.NewRequest("DELETE", s.url+"/v1/threads/reap", nil)
	req.Header.Set("Authorization", "Bearer key-a")
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := s.store.Stat(context.Background(), jobs.SnapshotKey(jobs.NewThreadKey("acme", "reap"))); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("snapshot after DELETE: %v", err)
	}
	if ex := s.run(t, map[string]any{"thread_id": "reap", "code": "import os\nprint(os.path.exists('data'))"}); ex.Stdout != "False\n" {
		t.Fatalf("after delete: %q", ex.Stdout)
	}
}

// A worker SIGKILLed leaves its blank and thread sandboxes behind: the janitor removes
// them, keeping the thread's workspace as a snapshot that the next worker restores.
func TestOrphansRemovedAfterWorkerKill(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorkers: true})
	bin := buildWorker(t)
	p := s.startWorkerProcess(t, bin, "doomed", "CODEINTERP_WARM_POOL=1")
	s.run(t, map[string]any{"thread_id": "orphan", "code": "open('notes.txt', 'w').write('survives')"})
	eventually(t, time.Minute, "warm pool filled", func() bool { return len(s.containers(t, s.prefix)) == 2 })
	// Killed only once its runner has let go of the finished item: a thread with an
	// item still marked in flight is left for a worker to settle, not reclaimed.
	eventually(t, time.Minute, "the thread's item no longer in flight", func() bool {
		st, err := s.threads.State(context.Background(), jobs.NewThreadKey("acme", "orphan"))
		return err == nil && st.Inflight == ""
	})
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = p.cmd.Process.Wait()

	// Two janitors sweep at once: the thread is reclaimed, and snapshotted, once.
	j1, j2 := s.newJanitor(time.Hour, time.Hour), s.newJanitor(time.Hour, time.Hour)
	saved := 0
	eventually(t, time.Minute, "orphans removed", func() bool {
		reps := make(chan janitor.Report, 2)
		for _, j := range []*janitor.Janitor{j1, j2} {
			go func() { reps <- j.Sweep(context.Background()) }()
		}
		saved += (<-reps).OrphansSaved + (<-reps).OrphansSaved
		return len(s.containers(t, s.prefix)) == 0
	})
	if saved != 1 {
		t.Fatalf("the thread's workspace was snapshotted %d times, want once", saved)
	}
	if th := s.thread(t, "orphan"); th.Sandbox != "none" {
		t.Fatalf("thread after orphan removal: %+v", th)
	}
	s.addWorker()
	ex := s.run(t, map[string]any{"thread_id": "orphan", "code": "print(open('notes.txt').read())"})
	if ex.Stdout != "survives\n" || !ex.Sandbox.KernelRestarted {
		t.Fatalf("after restore: %q %+v %+v", ex.Stdout, ex.Error, ex.Sandbox)
	}
}

// Two worker processes with their own sandbox prefixes stand for two hosts: when the
// thread's host dies, the thread moves to the other and is restored from its snapshot.
func TestFailoverToAnotherHost(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorkers: true})
	bin := buildWorker(t)
	hostA, hostB := s.prefix+"-a", s.prefix+"-b"
	t.Cleanup(func() { s.removeSandboxesOf(hostA); s.removeSandboxesOf(hostB) })
	a := s.startWorkerProcess(t, bin, "host-a", "CODEINTERP_SANDBOX_PREFIX="+hostA)
	ex := s.run(t, map[string]any{"thread_id": "moving", "code": "open('work.txt', 'w').write('from host a')"})
	if ex.Status != "succeeded" || len(s.containers(t, hostA)) != 1 {
		t.Fatalf("on host a: %s, containers %v", ex.Status, s.containers(t, hostA))
	}
	s.startWorkerProcess(t, bin, "host-b", "CODEINTERP_SANDBOX_PREFIX="+hostB)
	// Idle: the owner pauses it, snapshotting the workspace.
	j := s.newJanitor(200*time.Millisecond, time.Hour)
	sweepUntil(t, j, "paused on host a", func() bool { return s.thread(t, "moving").Sandbox == "paused" })
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = a.cmd.Process.Wait()

	ex = s.run(t, map[string]any{"thread_id": "moving", "code": "print(open('work.txt').read())"})
	if ex.Stdout != "from host a\n" || !ex.Sandbox.KernelRestarted || len(s.containers(t, hostB)) != 1 {
		t.Fatalf("on host b: %q %+v %+v, containers %v", ex.Stdout, ex.Error, ex.Sandbox, s.containers(t, hostB))
	}
}

// Past the host's cap, the least recently used idle sandbox is snapshotted and
// removed instead of refusing the new thread, and comes back when needed.
func TestSandboxCap(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{maxSandboxes: 2})
	for i := range 3 {
		ex := s.run(t, map[string]any{"thread_id": fmt.Sprintf("cap-%d", i), "code": fmt.Sprintf("open('n.txt', 'w').write('%d')", i)})
		if ex.Status != "succeeded" {
			t.Fatalf("thread %d: %s %+v", i, ex.Status, ex.Error)
		}
	}
	eventually(t, time.Minute, "least recently used sandbox reaped", func() bool {
		return s.thread(t, "cap-0").Sandbox == "none" && len(s.containers(t, s.prefix)) == 2
	})
	ex := s.run(t, map[string]any{"thread_id": "cap-0", "code": "print(open('n.txt').read())"})
	if ex.Stdout != "0\n" || !ex.Sandbox.KernelRestarted {
		t.Fatalf("reaped thread: %q %+v", ex.Stdout, ex.Sandbox)
	}
}

// The per-tenant cap reaps the tenant's own least recently used sandbox; other
// tenants are not touched.
func TestSandboxCapPerTenant(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{maxPerTenant: 2})
	other := s.submit(t, "key-b", map[string]any{"thread_id": "globex-0", "code": "x = 1"})
	var ex execution
	for ex.Status == "" || ex.Status == "queued" || ex.Status == "running" {
		s.callAs(t, "key-b", "GET", "/v1/executions/"+other+"?wait=30s", nil, &ex)
	}
	if ex.Status != "succeeded" {
		t.Fatalf("globex: %s", ex.Status)
	}
	for i := range 3 {
		s.run(t, map[string]any{"thread_id": fmt.Sprintf("tc-%d", i), "code": fmt.Sprintf("open('n.txt', 'w').write('%d')", i)})
	}
	eventually(t, time.Minute, "acme's least recently used sandbox reaped", func() bool {
		return s.thread(t, "tc-0").Sandbox == "none"
	})
	if s.thread(t, "tc-1").Sandbox != "running" || s.thread(t, "tc-2").Sandbox != "running" {
		t.Fatal("a recently used sandbox was reaped")
	}
	var th threadView
	s.callAs(t, "key-b", "GET", "/v1/threads/globex-0", nil, &th)
	if th.Sandbox != "running" {
		t.Fatalf("another tenant's sandbox was reaped: %+v", th)
	}
}

// Expired artifacts and listing entries are deleted; the sweep is idempotent.
func TestExpiry(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ex := s.run(t, map[string]any{"thread_id": "old", "code": "open('outputs/a.txt', 'w').write('a')"})
	if len(ex.Files) != 1 {
		t.Fatalf("files %+v", ex.Files)
	}
	// A janitor whose retention has already passed for everything above.
	cfg := s.storageConfig
	cfg.Retention = time.Millisecond
	store, err := storage.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	recs := records.New(s.rdb, records.Config{Prefix: "ci:", TTL: time.Millisecond, Threads: s.threads})
	j := janitor.New(janitor.Config{Records: recs, Threads: s.threads, Sandboxes: s.runtime, Store: store, ID: s.prefix + "-janitor",
		IdlePause: time.Hour, IdleReap: time.Hour, Logger: discardLogger, ExpireEvery: time.Millisecond})
	var rep janitor.Report
	eventually(t, time.Minute, "artifacts expired", func() bool {
		rep = j.Sweep(context.Background())
		return rep.ArtifactsExpired > 0
	})
	resp, err := http.Get(ex.Files[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || rep.EntriesExpired == 0 {
		t.Fatalf("after expiry: download %d, %+v", resp.StatusCode, rep)
	}
	var page struct {
		Items []execution `json:"items"`
	}
	s.call(t, "GET", "/v1/executions?thread_id=old", nil, &page)
	if len(page.Items) != 0 {
		t.Fatalf("listing after expiry: %d items", len(page.Items))
	}
}
