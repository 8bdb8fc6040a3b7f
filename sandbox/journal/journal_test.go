package journal_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/journal"
	"github.com/codeinterp/codeinterp/sandbox/sandboxtest"
)

// both is a journaled runtime and host over one runtime, as the conformance suite
// wants them.
type both struct {
	sandbox.Runtime
	sandbox.Host
}

// The decorator changes nothing callers rely on: the runtime-level suite passes
// through it.
func TestJournalConformance(t *testing.T) {
	sandboxtest.ExerciseRuntime(t, func(t *testing.T) sandboxtest.Runtime {
		j := journal.New(filepath.Join(t.TempDir(), "j.jsonl"), "w1")
		t.Cleanup(func() { j.Close() })
		f := sandboxtest.NewFake()
		return both{j.Runtime(f), j.Host(f)}
	})
}

func readJournal(t *testing.T, path string) []journal.Entry {
	t.Helper()
	es, bad, err := journal.ReadFiles(path)
	if err != nil || bad != 0 {
		t.Fatalf("read journal: %v (%d bad lines)", err, bad)
	}
	return es
}

// Every operation is one line naming the sandbox, its thread, the worker, the token
// the handle acts under, and when it began and ended; a refused one is marked fenced.
func TestJournalRecordsEveryOperation(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.jsonl")
	fake := sandboxtest.NewFake()
	j := journal.New(path, "w1")
	defer j.Close()
	rt := j.Runtime(fake)

	sb, err := rt.Create(ctx, sandbox.Spec{Tenant: "acme", Thread: "t1", Fence: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Run(ctx, sandbox.Request{ID: "ex1", Code: "1"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := sb.PutFiles(ctx, []sandbox.File{{Name: "a.txt", Size: 1, Body: strings.NewReader("a")}}); err != nil {
		t.Fatal(err)
	}
	rc, _, err := sb.OpenFile(ctx, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, rc)
	rc.Close()
	rc.Close() // a second close writes no second entry
	sb.Files(ctx)
	sb.Pause(ctx)
	sb.Resume(ctx)
	snap, err := sb.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var tarball bytes.Buffer
	io.Copy(&tarball, snap)
	snap.Close()
	if err := sb.Restore(ctx, &tarball); err != nil {
		t.Fatal(err)
	}
	if err := sb.Fence(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if err := sb.Fence(ctx, 6); !errors.Is(err, sandbox.ErrFenced) {
		t.Fatalf("Fence(6) after 7 = %v", err)
	}
	sb.Release()
	if err := sb.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if found, err := rt.Find(ctx, sandbox.Spec{Tenant: "acme", Thread: "gone"}); found != nil || err != nil {
		t.Fatalf("Find of nothing = %#v, %v; want an untyped nil", found, err)
	}
	blank, err := rt.CreateBlank(ctx, sandbox.Spec{Owner: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := blank.Assign(ctx, "acme", "t2"); err != nil {
		t.Fatal(err)
	}
	blank.Files(ctx)

	want := []struct {
		op, thread string
		token      int64
		fenced     bool
	}{
		{"create", "t1", 5, false}, {"run", "t1", 5, false}, {"put", "t1", 5, false}, {"open", "t1", 5, false},
		{"files", "t1", 5, false}, {"pause", "t1", 5, false}, {"resume", "t1", 5, false}, {"snapshot", "t1", 5, false},
		{"restore", "t1", 5, false}, {"fence", "t1", 7, false}, {"fence", "t1", 6, true}, {"release", "t1", 7, false},
		{"remove", "t1", 7, false}, {"find", "gone", 0, false}, {"create_blank", "", 0, false}, {"assign", "t2", 0, false},
		{"files", "t2", 0, false},
	}
	es := readJournal(t, path)
	if len(es) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(es), len(want), es)
	}
	for i, w := range want {
		e := es[i]
		if e.Op != w.op || e.Thread != w.thread || e.Token != w.token || e.Fenced != w.fenced || e.Worker != "w1" {
			t.Errorf("entry %d = %+v, want %+v", i, e, w)
		}
		if e.Begin == 0 || e.End < e.Begin {
			t.Errorf("entry %d times [%d, %d]", i, e.Begin, e.End)
		}
		if e.Op != "find" && e.Sandbox == "" {
			t.Errorf("entry %d names no sandbox", i)
		}
	}
	if es[1].Run != "ex1" || es[1].Outcome != "succeeded" {
		t.Errorf("run entry %+v", es[1])
	}
	if es[10].Err == "" {
		t.Errorf("refused fence carries no error: %+v", es[10])
	}
	if es[14].Sandbox != es[15].Sandbox || es[15].Tenant != "acme" {
		t.Errorf("blank and assign entries %+v %+v", es[14], es[15])
	}
}

// A janitor's handles are journaled under the thread the sandbox serves, found by its
// name for a blank sandbox given to a thread.
func TestJournalHostNamesThreads(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.jsonl")
	fake := sandboxtest.NewFake()
	blank, _ := fake.CreateBlank(ctx, sandbox.Spec{Owner: "w1"})
	if err := blank.Assign(ctx, "acme", "t9"); err != nil {
		t.Fatal(err)
	}
	j := journal.New(path, "janitor-1")
	h := j.Host(fake)
	if _, err := h.List(ctx); err != nil {
		t.Fatal(err)
	}
	h.ThreadName("acme", "t9")
	sb, err := h.Open(ctx, blank.ID())
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Fence(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := sb.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Open(ctx, "nope"); !errors.Is(err, sandbox.ErrNotFound) {
		t.Fatalf("Open of nothing = %v", err)
	}
	es := readJournal(t, path)
	if len(es) != 4 {
		t.Fatalf("entries %+v", es)
	}
	for i, op := range []string{"attach", "fence", "remove", "attach"} {
		if es[i].Op != op || es[i].Worker != "janitor-1" {
			t.Errorf("entry %d = %+v, want %s", i, es[i], op)
		}
	}
	if es[0].Thread != "t9" || es[0].Tenant != "acme" || es[2].Thread != "t9" || es[2].Token != 3 {
		t.Errorf("thread not named: %+v %+v", es[0], es[2])
	}
	if es[3].Err == "" || es[3].Sandbox != "nope" {
		t.Errorf("failed attach %+v", es[3])
	}
}

// Operations of many goroutines, and of two journals sharing a file, are whole lines.
func TestJournalConcurrentWritersKeepLines(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.jsonl")
	fake := sandboxtest.NewFake()
	var wg sync.WaitGroup
	for w := range 2 {
		j := journal.New(path, []string{"w1", "w2"}[w])
		defer j.Close()
		rt := j.Runtime(fake)
		for range 8 {
			wg.Go(func() {
				sb, err := rt.CreateBlank(ctx, sandbox.Spec{Owner: "w"})
				if err != nil {
					t.Error(err)
					return
				}
				for range 50 {
					sb.Files(ctx)
				}
			})
		}
	}
	wg.Wait()
	if es := readJournal(t, path); len(es) != 2*8*51 {
		t.Fatalf("%d entries, want %d", len(es), 2*8*51)
	}
}

// A journal that cannot be written says so, and the operation goes on.
func TestJournalWriteErrorReported(t *testing.T) {
	j := journal.New(filepath.Join(t.TempDir(), "missing", "j.jsonl"), "w1")
	var got error
	j.OnError = func(err error) { got = err }
	if _, err := j.Runtime(sandboxtest.NewFake()).CreateBlank(context.Background(), sandbox.Spec{Owner: "w1"}); err != nil {
		t.Fatal(err)
	}
	if got == nil || !errors.Is(got, os.ErrNotExist) {
		t.Fatalf("OnError got %v", got)
	}
}
