package journal_test

import (
	"strings"
	"testing"

	"github.com/codeinterp/codeinterp/sandbox/journal"
)

// op is a compact entry for the tables: sandbox id, thread, worker, token, [begin, end].
func op(name, id, thread, worker string, token, begin, end int64) journal.Entry {
	e := journal.Entry{Op: name, Sandbox: id, Worker: worker, Token: token, Begin: begin, End: end}
	if thread != "" {
		e.Tenant, e.Thread = "acme", thread
	}
	return e
}

func fenced(e journal.Entry) journal.Entry {
	e.Err, e.Fenced = "sandbox fenced by a newer owner", true
	return e
}

func failed(e journal.Entry) journal.Entry {
	e.Err = "container gone"
	return e
}

func died(e journal.Entry) journal.Entry {
	e.Outcome = "failed KernelDied"
	return e
}

func run(e journal.Entry, id string) journal.Entry {
	e.Op, e.Run = "run", id
	return e
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		entries              []journal.Entry
		overlaps, drops, two int
		fenced, preempted    int
	}{
		{name: "a clean handover", entries: []journal.Entry{
			op("create", "s1", "t1", "A", 10, 100, 200), op("run", "s1", "t1", "A", 10, 210, 300),
			op("find", "s1", "t1", "B", 20, 400, 500), op("run", "s1", "t1", "B", 20, 510, 600),
		}},
		{name: "two workers on one sandbox at once", overlaps: 1, entries: []journal.Entry{
			op("create", "s1", "t1", "A", 10, 100, 200), op("run", "s1", "t1", "A", 10, 210, 450),
			op("find", "s1", "t1", "B", 20, 400, 500),
		}},
		{name: "touching ends do not overlap", entries: []journal.Entry{
			op("run", "s1", "t1", "A", 10, 100, 200), op("find", "s1", "t1", "B", 20, 200, 300),
		}},
		{name: "one worker's own concurrent operations", entries: []journal.Entry{
			op("run", "s1", "t1", "A", 10, 100, 300), op("files", "s1", "t1", "A", 10, 150, 160),
		}},
		{name: "a refused operation is the fence working", fenced: 2, entries: []journal.Entry{
			op("find", "s1", "t1", "B", 20, 100, 500),
			fenced(op("pause", "s1", "t1", "A", 10, 200, 300)), fenced(op("fence", "s1", "t1", "A", 10, 350, 360)),
		}},
		{name: "a failed operation did nothing", entries: []journal.Entry{
			op("find", "s1", "t1", "B", 20, 100, 500), failed(op("remove", "s1", "t1", "A", 10, 200, 300)),
		}},
		{name: "a stale owner's release is not an action", entries: []journal.Entry{
			op("run", "s1", "t1", "B", 20, 100, 500), op("release", "s1", "t1", "A", 10, 200, 200),
		}},
		{name: "two sandboxes of one thread at once", overlaps: 1, entries: []journal.Entry{
			op("run", "s1", "t1", "A", 10, 100, 500), op("create", "s2", "t1", "B", 20, 200, 300),
		}},
		{name: "a janitor that knows no thread, on the same sandbox", overlaps: 1, entries: []journal.Entry{
			op("run", "s1", "t1", "A", 10, 100, 500), op("snapshot", "s1", "", "janitor", 0, 200, 300),
		}},
		{name: "different threads never clash", entries: []journal.Entry{
			op("run", "s1", "t1", "A", 10, 100, 500), op("run", "s2", "t2", "B", 20, 200, 300),
		}},
		{name: "a token going down", drops: 1, entries: []journal.Entry{
			op("find", "s1", "t1", "B", 20, 100, 200), op("pause", "s1", "t1", "A", 10, 300, 400),
		}},
		{name: "a token going down across the thread's sandboxes", drops: 1, entries: []journal.Entry{
			op("remove", "s1", "t1", "B", 20, 100, 200), op("create", "s2", "t1", "A", 10, 300, 400),
		}},
		{name: "no token is no claim", entries: []journal.Entry{
			op("fence", "s1", "t1", "B", 20, 100, 200), op("assign", "s2", "t1", "A", 0, 300, 400),
			op("fence", "s2", "t1", "A", 30, 410, 420),
		}},
		{name: "a stale owner's run killed by the newer owner's adoption", preempted: 2, entries: []journal.Entry{
			died(op("run", "s1", "t1", "A", 10, 100, 450)), op("find", "s1", "t1", "B", 20, 400, 500),
			died(op("run", "s1", "t1", "A", 10, 600, 700)),
		}},
		{name: "a kernel death is no excuse without a newer owner", overlaps: 1, entries: []journal.Entry{
			died(op("run", "s1", "t1", "A", 20, 100, 450)), op("find", "s1", "t1", "B", 10, 400, 500),
		}},
		{name: "a run repeated", two: 1, entries: []journal.Entry{
			run(op("", "s1", "t1", "A", 10, 100, 200), "ex1"), run(op("", "s1", "t1", "B", 20, 300, 400), "ex1"),
			run(op("", "s1", "t1", "B", 20, 500, 600), "ex2"),
		}},
		{name: "a run refused is not a run", fenced: 1, entries: []journal.Entry{
			fenced(run(op("", "s1", "t1", "A", 10, 100, 200), "ex1")), run(op("", "s1", "t1", "B", 20, 300, 400), "ex1"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := journal.Check(tc.entries)
			if len(r.Overlaps) != tc.overlaps || len(r.Drops) != tc.drops || len(r.RunTwice) != tc.two ||
				r.FencedTotal() != tc.fenced || len(r.Preempted) != tc.preempted {
				t.Fatalf("overlaps %v, drops %v, run twice %v, fenced %d, preempted %v; want %d, %d, %d, %d, %d",
					r.Overlaps, r.Drops, r.RunTwice, r.FencedTotal(), r.Preempted, tc.overlaps, tc.drops, tc.two, tc.fenced, tc.preempted)
			}
			if r.OK() != (tc.overlaps+tc.drops+tc.two == 0) {
				t.Fatalf("OK() = %v", r.OK())
			}
		})
	}
}

// The overlap found names both operations; a line that is not an entry is counted.
func TestCheckReadsAJournal(t *testing.T) {
	text := `{"op":"run","sandbox":"s1","tenant":"acme","thread":"t1","worker":"A","token":10,"run":"ex1","begin":100,"end":450}
{"op":"find","sandbox":"s1","tenant":"acme","thread":"t1","worker":"B","token":20,"begin":400,"end":500}
{"op":"run","sandbox":"s1","tenant":"ac
`
	es, bad, err := journal.Read(strings.NewReader(text))
	if err != nil || bad != 1 || len(es) != 2 {
		t.Fatalf("Read = %d entries, %d bad, %v", len(es), bad, err)
	}
	r := journal.Check(es)
	if len(r.Overlaps) != 1 || !strings.Contains(r.Overlaps[0].String(), "run by A (token 10)") ||
		!strings.Contains(r.Overlaps[0].String(), "find by B (token 20)") {
		t.Fatalf("overlaps %v", r.Overlaps)
	}
	if r.Workers != 2 || r.ByOp["run"] != 1 || r.Runs["ex1"] != 1 {
		t.Fatalf("report %+v", r)
	}
}
