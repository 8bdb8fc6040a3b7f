package sandboxtest

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Runtime is a whole sandbox runtime of one host: what workers and janitors use.
type Runtime interface {
	sandbox.Runtime
	sandbox.Host
}

// NewRuntimeFunc returns a runtime for one subtest, empty and of its own (its Count
// and List see only what the subtest made), and cleans up after the test.
type NewRuntimeFunc func(t *testing.T) Runtime

// ExerciseRuntime runs the runtime-level conformance suite: what threads rely on
// beyond a single sandbox — adopting a thread's sandbox with a fresh kernel, blank
// sandboxes given to threads, one sandbox per thread under concurrent creation,
// counting, and listing and opening for the janitor. Subtests run in parallel.
func ExerciseRuntime(t *testing.T, newRuntime NewRuntimeFunc) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T, Runtime)
	}{
		{"AdoptKeepsWorkspaceWithFreshKernel", testAdopt},
		{"FindWithoutSandbox", testFindNone},
		{"BlankAssign", testBlankAssign},
		{"ConcurrentCreateOfOneThread", testConcurrentCreate},
		{"Count", testCount},
		{"ListAndOpen", testListOpen},
		{"RecyclableWipe", testRecyclableWipe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newRuntime(t))
		})
	}
}

func threadSpec(t *testing.T, tenant string) sandbox.Spec {
	return sandbox.Spec{Tenant: tenant, Thread: strings.ReplaceAll(t.Name(), "/", "-"), Owner: "w1"}
}

func create(t *testing.T, rt Runtime, spec sandbox.Spec) sandbox.Sandbox {
	t.Helper()
	sb, err := rt.Create(context.Background(), spec)
	if err != nil {
		t.Fatalf("Create(%+v): %v", spec, err)
	}
	t.Cleanup(func() { _ = sb.Remove(context.Background()) })
	return sb
}

func putText(t *testing.T, sb sandbox.Sandbox, name, text string) {
	t.Helper()
	if err := sb.PutFiles(context.Background(), []sandbox.File{{Name: name, Size: int64(len(text)), Body: strings.NewReader(text)}}); err != nil {
		t.Fatal(err)
	}
}

func readText(t *testing.T, sb sandbox.Sandbox, name string) string {
	t.Helper()
	rc, _, err := sb.OpenFile(context.Background(), name)
	if err != nil {
		t.Fatalf("OpenFile(%s): %v", name, err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b)
}

func restarted(t *testing.T, sb sandbox.Sandbox) bool {
	t.Helper()
	out, err := sb.Run(context.Background(), sandbox.Request{ID: "r", Language: sandbox.Bash, Code: "true", Timeout: 30 * time.Second}, nil)
	if err != nil || out.Status != sandbox.Succeeded {
		t.Fatalf("Run: %+v %v", out, err)
	}
	return out.KernelRestarted
}

// A thread's sandbox outlives the worker that created it: another adopts it with a
// fresh kernel (the first run says so, the next does not), the workspace intact; no
// other tenant finds it.
func testAdopt(t *testing.T, rt Runtime) {
	ctx := context.Background()
	spec := threadSpec(t, "acme")
	sb := create(t, rt, spec)
	putText(t, sb, "kept.txt", "kept")
	if restarted(t, sb) {
		t.Fatal("the first run of a new sandbox reports a restarted kernel")
	}
	sb.Release()
	if other, err := rt.Find(ctx, sandbox.Spec{Tenant: "globex", Thread: spec.Thread}); err != nil || other != nil {
		t.Fatalf("another tenant found the sandbox: %v %v", other, err)
	}
	adopted, err := rt.Find(ctx, spec)
	if err != nil || adopted == nil {
		t.Fatalf("Find = %v, %v", adopted, err)
	}
	if adopted.ID() != sb.ID() {
		t.Fatalf("adopted %s, want %s", adopted.ID(), sb.ID())
	}
	if got := readText(t, adopted, "kept.txt"); got != "kept" {
		t.Fatalf("workspace after adoption: %q", got)
	}
	if !restarted(t, adopted) {
		t.Fatal("the first run after adoption must report a restarted kernel")
	}
	if restarted(t, adopted) {
		t.Fatal("only the first run after adoption reports a restart")
	}
}

// Find of a thread without a sandbox is nil, nil: an untyped nil, so callers can
// compare the interface with nil.
func testFindNone(t *testing.T, rt Runtime) {
	sb, err := rt.Find(context.Background(), threadSpec(t, "acme"))
	if err != nil || sb != nil {
		t.Fatalf("Find = %#v, %v; want nil, nil", sb, err)
	}
}

// A blank sandbox given to a thread is the thread's sandbox from then on: found by
// the thread, and the only one the thread can have.
func testBlankAssign(t *testing.T, rt Runtime) {
	ctx := context.Background()
	blank, err := rt.CreateBlank(ctx, sandbox.Spec{Owner: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blank.Remove(context.Background()) })
	spec := threadSpec(t, "acme")
	if err := blank.Assign(ctx, spec.Tenant, spec.Thread); err != nil {
		t.Fatal(err)
	}
	if sb, err := rt.Create(ctx, spec); !errors.Is(err, sandbox.ErrExists) {
		if sb != nil {
			_ = sb.Remove(ctx)
		}
		t.Fatalf("second sandbox for the thread: %v, want ErrExists", err)
	}
	other, err := rt.CreateBlank(ctx, sandbox.Spec{Owner: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Remove(context.Background()) })
	if err := other.Assign(ctx, spec.Tenant, spec.Thread); !errors.Is(err, sandbox.ErrExists) {
		t.Fatalf("assigning a second blank: %v, want ErrExists", err)
	}
	blank.Release()
	found, err := rt.Find(ctx, spec)
	if err != nil || found == nil || found.ID() != blank.ID() {
		t.Fatalf("Find = %v, %v; want the assigned blank", found, err)
	}
	if found, err := rt.Find(ctx, sandbox.Spec{Tenant: "globex", Thread: spec.Thread}); err != nil || found != nil {
		t.Fatalf("another tenant found it: %v %v", found, err)
	}
}

// Two workers creating the same thread's sandbox at once: exactly one wins, the
// others learn that it exists (and adopt it).
func testConcurrentCreate(t *testing.T, rt Runtime) {
	ctx := context.Background()
	spec := threadSpec(t, "acme")
	const n = 4
	var (
		mu      sync.Mutex
		won     []sandbox.Sandbox
		existed int
		wg      sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			sb, err := rt.Create(ctx, spec)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, sb)
			case errors.Is(err, sandbox.ErrExists):
				existed++
			default:
				t.Errorf("Create: %v", err)
			}
		})
	}
	wg.Wait()
	for _, sb := range won {
		t.Cleanup(func() { _ = sb.Remove(context.Background()) })
	}
	if len(won) != 1 || existed != n-1 {
		t.Fatalf("%d created, %d told it exists; want 1 and %d", len(won), existed, n-1)
	}
}

// Count counts thread and one-off sandboxes, not blank ones, until they are removed.
func testCount(t *testing.T, rt Runtime) {
	ctx := context.Background()
	count := func() int {
		t.Helper()
		n, err := rt.Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("a new runtime counts %d", n)
	}
	th := create(t, rt, threadSpec(t, "acme"))
	create(t, rt, sandbox.Spec{Tenant: "acme", Owner: "w1"}) // a one-off
	blank, err := rt.CreateBlank(ctx, sandbox.Spec{Owner: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blank.Remove(context.Background()) })
	if n := count(); n != 2 {
		t.Fatalf("count = %d, want 2 (blank sandboxes do not count)", n)
	}
	if err := blank.Assign(ctx, "acme", "assigned-"+threadSpec(t, "").Thread); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 3 {
		t.Fatalf("count = %d after assigning the blank, want 3", n)
	}
	if err := th.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Fatalf("count = %d after a removal, want 2", n)
	}
}

// List describes every sandbox for the janitor; Open gives a handle enough to
// snapshot and remove one, without resuming it.
func testListOpen(t *testing.T, rt Runtime) {
	ctx := context.Background()
	spec := threadSpec(t, "acme")
	th := create(t, rt, spec)
	putText(t, th, "a.txt", "alpha")
	if err := th.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	blank, err := rt.CreateBlank(ctx, sandbox.Spec{Owner: "w2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blank.Remove(context.Background()) })
	list, err := rt.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]sandbox.Info{}
	for _, i := range list {
		byID[i.ID] = i
	}
	ti, bi := byID[th.ID()], byID[blank.ID()]
	if len(list) != 2 || ti.ID == "" || bi.ID == "" {
		t.Fatalf("List = %+v", list)
	}
	if !ti.OfThread || ti.Blank || ti.Tenant != "acme" || ti.Thread != spec.Thread || ti.Owner != "w1" || !ti.Running || !ti.Paused {
		t.Fatalf("thread sandbox info %+v", ti)
	}
	if ti.Name != rt.ThreadName("acme", spec.Thread) || ti.Name == rt.ThreadName("globex", spec.Thread) {
		t.Fatalf("thread sandbox named %q; ThreadName gives %q", ti.Name, rt.ThreadName("acme", spec.Thread))
	}
	if bi.OfThread || !bi.Blank || bi.Owner != "w2" || !bi.Running || bi.Paused {
		t.Fatalf("blank sandbox info %+v", bi)
	}
	h, err := rt.Open(ctx, ti.ID)
	if err != nil || h.ID() != ti.ID {
		t.Fatalf("Open = %v, %v", h, err)
	}
	rc, err := h.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if !strings.Contains(string(data), "alpha") {
		t.Fatal("snapshot of an opened sandbox lacks its files")
	}
	if list, _ := rt.List(ctx); !infoOf(list, ti.ID).Paused {
		t.Fatal("opening and snapshotting resumed a paused sandbox")
	}
	if err := h.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if list, _ := rt.List(ctx); infoOf(list, ti.ID).ID != "" {
		t.Fatal("removed sandbox still listed")
	}
	if _, err := rt.Open(ctx, ti.ID); !errors.Is(err, sandbox.ErrNotFound) {
		t.Fatalf("Open of a removed sandbox: %v, want ErrNotFound", err)
	}
}

func infoOf(list []sandbox.Info, id string) sandbox.Info {
	for _, i := range list {
		if i.ID == id {
			return i
		}
	}
	return sandbox.Info{}
}

// A recyclable one-off sandbox: Wipe empties its workspace and it runs again; it is
// neither counted nor listed as a thread's, and never given to a thread; other
// sandboxes cannot be wiped.
func testRecyclableWipe(t *testing.T, rt Runtime) {
	ctx := context.Background()
	sb := create(t, rt, sandbox.Spec{Tenant: "acme", Owner: "w1", Recyclable: true})
	putText(t, sb, "data/in.csv", "a,b\n")
	if _, err := sb.Run(ctx, sandbox.Request{ID: "r1", Code: "print(1)", Timeout: 30 * time.Second}, nil); err != nil {
		t.Fatal(err)
	}
	if err := sb.Wipe(ctx); err != nil {
		t.Fatalf("Wipe: %v", err)
	}
	if files, err := sb.Files(ctx); err != nil || len(files) != 0 {
		t.Fatalf("after Wipe: files %v, %v; want none", files, err)
	}
	out, err := sb.Run(ctx, sandbox.Request{ID: "r2", Code: "print(2)", Timeout: 30 * time.Second}, nil)
	if err != nil || out.Status != sandbox.Succeeded {
		t.Fatalf("run after Wipe: %+v %v", out, err)
	}
	if err := sb.Wipe(ctx); err != nil {
		t.Fatalf("second Wipe: %v", err)
	}
	if n, err := rt.Count(ctx); err != nil || n != 0 {
		t.Fatalf("Count = %d, %v; a recyclable sandbox is not counted", n, err)
	}
	list, err := rt.List(ctx)
	if err != nil || len(list) != 1 || list[0].OfThread || !list[0].Blank || list[0].Owner != "w1" {
		t.Fatalf("List = %+v, %v; want one blank sandbox of w1", list, err)
	}
	if err := sb.Assign(ctx, "acme", "th"); err == nil {
		t.Fatal("a recyclable sandbox was given to a thread")
	}
	if found, err := rt.Find(ctx, threadSpec(t, "acme")); err != nil || found != nil {
		t.Fatalf("Find = %v, %v; want none", found, err)
	}
	if _, err := rt.Create(ctx, sandbox.Spec{Tenant: "acme", Thread: "th", Recyclable: true}); err == nil {
		t.Fatal("a thread's sandbox was made recyclable")
	}
	th := create(t, rt, threadSpec(t, "acme"))
	if err := th.Wipe(ctx); !errors.Is(err, sandbox.ErrNotRecyclable) {
		t.Fatalf("Wipe of a thread's sandbox = %v, want ErrNotRecyclable", err)
	}
}
