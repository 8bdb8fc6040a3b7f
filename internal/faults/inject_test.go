package faults

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox/journal"
)

// The worker killed is the one whose journal shows the most thread executions run in
// the last ten seconds; one-offs, failed runs and older runs do not count.
func TestBusiestWorker(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UnixNano()
	write := func(w string, es ...journal.Entry) {
		f, err := os.Create(filepath.Join(dir, w+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, e := range es {
			b, _ := json.Marshal(e)
			f.Write(append(b, '\n'))
		}
	}
	run := func(thread string, ago time.Duration) journal.Entry {
		return journal.Entry{Op: "run", Thread: thread, Begin: now - int64(ago), End: now - int64(ago)}
	}
	failed := run("t", time.Second)
	failed.Err = "broken"
	write("worker1", run("t", time.Second), run("t", 2*time.Second))
	write("worker2", run("t", time.Second), run("", time.Second), run("", time.Second), failed, failed)
	write("worker3", run("t", time.Minute), run("t", time.Minute), run("t", time.Minute), run("t", 3*time.Second))
	in := &injector{stack: &Stack{JournalDir: dir}}
	if got := in.busiest(); got != "worker1" {
		t.Fatalf("busiest = %s, want worker1", got)
	}
	if got := in.threadRuns(time.Time{}, ""); got != 7 {
		t.Fatalf("thread runs in all = %d, want 7", got)
	}
}
