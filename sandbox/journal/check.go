package journal

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

// Read returns the entries of a journal. A line that is not an entry (a file cut
// short by a full disk) is counted in bad, not fatal.
func Read(r io.Reader) (entries []Entry, bad int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Op == "" {
			bad++
			continue
		}
		entries = append(entries, e)
	}
	return entries, bad, sc.Err()
}

// ReadFiles reads and concatenates the journals at paths.
func ReadFiles(paths ...string) (entries []Entry, bad int, err error) {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, bad, err
		}
		es, b, err := Read(f)
		f.Close()
		if err != nil {
			return nil, bad, fmt.Errorf("read journal %s: %w", p, err)
		}
		entries, bad = append(entries, es...), bad+b
	}
	return entries, bad, nil
}

// Report is what Check found.
type Report struct {
	Entries  int
	Workers  int            // processes that acted
	ByOp     map[string]int // successful operations by op
	Fenced   map[string]int // operations refused by the fence, by op: the fence working
	Failed   map[string]int // operations that failed otherwise, by op
	Overlaps []Overlap      // successful operations of two workers on one sandbox at once
	Drops    []Drop         // a successful operation under a token below one already used
	// Preempted lists runs of a stale owner whose kernel a newer owner (a larger
	// token) killed while or before they ran: they end KernelDied and overlap, or
	// follow, the newer owner's adoption. That is the fence working, not a clash.
	Preempted []Overlap
	// RunTwice lists request ids (execution ids) run to an outcome more than once.
	RunTwice map[string]int
	// Runs counts the successful runs of each request id.
	Runs map[string]int
}

// Overlap is two successful operations of different workers on one sandbox (or one
// thread's sandboxes) whose times overlap.
type Overlap struct {
	On   string // "sandbox <id>" or "thread <tenant>/<thread>"
	A, B Entry
}

func (o Overlap) String() string {
	return fmt.Sprintf("%s: %s by %s (token %d) [%d, %d] overlaps %s by %s (token %d) [%d, %d]", o.On,
		o.A.Op, o.A.Worker, o.A.Token, o.A.Begin, o.A.End, o.B.Op, o.B.Worker, o.B.Token, o.B.Begin, o.B.End)
}

// Drop is a successful operation under a token below that of a successful operation
// that had ended before it began.
type Drop struct {
	On          string
	Before, Op  Entry
	BeforeToken int64
}

func (d Drop) String() string {
	return fmt.Sprintf("%s: %s by %s under token %d began after %s by %s under token %d ended", d.On,
		d.Op.Op, d.Op.Worker, d.Op.Token, d.Before.Op, d.Before.Worker, d.BeforeToken)
}

// OK reports whether the journal shows no overlap, no token going down and no run
// repeated.
func (r Report) OK() bool { return len(r.Overlaps) == 0 && len(r.Drops) == 0 && len(r.RunTwice) == 0 }

// FencedTotal is the number of operations the fence refused.
func (r Report) FencedTotal() int {
	n := 0
	for _, c := range r.Fenced {
		n += c
	}
	return n
}

// Check checks that no two workers' successful operations on one sandbox overlapped
// in time — per sandbox id, and per thread across the sandboxes it had — and that the
// tokens of successful operations on each never went down: an operation that began
// after one under token T had ended holds a token of at least T. Operations under no
// token (one-off and blank sandboxes, a janitor's before it fences) are not
// compared by token.
//
// A stale owner's run that ended KernelDied because the newer owner's adoption killed
// its kernel is counted in Preempted. Releases are not compared: a release only lets go of the caller's own kernel
// connection, and a worker that lost its lease releases its handle while the new
// owner works. A refused (fenced) or failed operation did nothing, so it is counted
// apart and not compared either.
func Check(entries []Entry) Report {
	r := Report{Entries: len(entries), ByOp: map[string]int{}, Fenced: map[string]int{}, Failed: map[string]int{},
		RunTwice: map[string]int{}, Runs: map[string]int{}}
	workers := map[string]bool{}
	groups := map[string][]Entry{}
	for _, e := range entries {
		workers[e.Worker] = true
		switch {
		case e.Fenced:
			r.Fenced[e.Op]++
			continue
		case !e.OK():
			r.Failed[e.Op]++
			continue
		}
		r.ByOp[e.Op]++
		if e.Op == OpRun && e.Run != "" {
			r.Runs[e.Run]++
		}
		if e.Op == OpRelease {
			continue
		}
		if e.Sandbox != "" {
			groups["sandbox "+e.Sandbox] = append(groups["sandbox "+e.Sandbox], e)
		}
		if e.Thread != "" {
			k := "thread " + e.Tenant + "/" + e.Thread
			groups[k] = append(groups[k], e)
		}
	}
	r.Workers = len(workers)
	for id, n := range r.Runs {
		if n > 1 {
			r.RunTwice[id] = n
		}
	}
	// An overlap or a drop on a sandbox is one on its thread too: report it once.
	seen, dropped := map[[2]Entry]bool{}, map[Entry]bool{}
	for _, on := range slices.Sorted(maps.Keys(groups)) {
		es := groups[on]
		for _, o := range overlaps(on, es) {
			switch {
			case seen[[2]Entry{o.A, o.B}]:
			case preempted(o.A, o.B) || preempted(o.B, o.A):
				r.Preempted = append(r.Preempted, o)
			default:
				r.Overlaps = append(r.Overlaps, o)
			}
			seen[[2]Entry{o.A, o.B}] = true
		}
		for _, d := range drops(on, es) {
			switch {
			case dropped[d.Op]:
			case preempted(d.Op, d.Before):
				r.Preempted = append(r.Preempted, Overlap{On: on, A: d.Before, B: d.Op})
			default:
				r.Drops = append(r.Drops, d)
			}
			dropped[d.Op] = true
		}
	}
	return r
}

// preempted reports whether e is a run whose kernel died under a token below that of
// by: by's owner took the sandbox over and killed e's kernel.
func preempted(e, by Entry) bool {
	return e.Op == OpRun && strings.HasSuffix(e.Outcome, " "+kernelDied) && e.Token < by.Token
}

// kernelDied is the error name of a run whose kernel was killed under it.
const kernelDied = "KernelDied"

// overlaps returns the pairs of es of different workers whose times overlap, each
// with the one that began first as A.
func overlaps(on string, es []Entry) []Overlap {
	slices.SortStableFunc(es, func(a, b Entry) int { return cmp.Compare(a.Begin, b.Begin) })
	var out []Overlap
	var active []Entry // entries that began earlier and had not ended at the last begin
	for _, e := range es {
		kept := active[:0]
		for _, a := range active {
			if a.End <= e.Begin {
				continue
			}
			kept = append(kept, a)
			if a.Worker != e.Worker {
				out = append(out, Overlap{On: on, A: a, B: e})
			}
		}
		active = append(kept, e)
	}
	return out
}

// drops returns the operations of es under a token below that of one that ended
// before they began.
func drops(on string, es []Entry) []Drop {
	var tokened []Entry
	for _, e := range es {
		if e.Token > 0 {
			tokened = append(tokened, e)
		}
	}
	byBegin := slices.Clone(tokened)
	slices.SortStableFunc(byBegin, func(a, b Entry) int { return cmp.Compare(a.Begin, b.Begin) })
	byEnd := tokened
	slices.SortStableFunc(byEnd, func(a, b Entry) int { return cmp.Compare(a.End, b.End) })
	var out []Drop
	var highest Entry // of those ended so far, the one under the largest token
	i := 0
	for _, e := range byBegin {
		for ; i < len(byEnd) && byEnd[i].End < e.Begin; i++ {
			if byEnd[i].Token > highest.Token {
				highest = byEnd[i]
			}
		}
		if e.Token < highest.Token {
			out = append(out, Drop{On: on, Before: highest, Op: e, BeforeToken: highest.Token})
		}
	}
	return out
}

// Summary is a short human account of the report.
func (r Report) Summary() string {
	return fmt.Sprintf("%d operations by %d processes; ok %v; fenced %v; failed %v; %d runs preempted by a newer owner; %d overlaps, %d token drops, %d runs repeated",
		r.Entries, r.Workers, r.ByOp, r.Fenced, r.Failed, len(r.Preempted), len(r.Overlaps), len(r.Drops), len(r.RunTwice))
}
