package faults

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/codeinterp/codeinterp/client"
	"github.com/codeinterp/codeinterp/sandbox/journal"
)

// aofWindow is how much of what Redis accepted before a crash AOF everysec may lose:
// a second of writes, and the fsync under way.
const aofWindow = 3 * time.Second

// Result is what one run found.
type Result struct {
	Config  Config
	Timings struct{ Up, Load, Drain, Total time.Duration }
	Events  []Event
	Redis   *RedisRecovery

	AcceptedThread, AcceptedOneOff int
	Refused                        map[string]int      // submission attempts not accepted, by cause
	GaveUp                         []string            // submissions never accepted
	Outcomes                       map[string]int      // accepted executions by how they ended: "succeeded", "failed WorkerLost", …
	Examples                       map[string][]string // of each outcome but success, a few executions and their errors
	NotTerminal                    []string            // still queued or running (or unreadable) after the drain
	Vanished                       []string            // accepted, then unknown to the API, outside the AOF window
	LostToAOF                      int                 // accepted within aofWindow before Redis's crash, then unknown
	LogProblems                    []string            // from the threads' logs
	Journal                        journal.Report
	JournalBadLines                int
	Unjournaled                    []string // succeeded executions with no successful run in the journal
	SandboxesLeft                  int
	Checks                         []Check
}

// Check is one assertion of the suite.
type Check struct {
	Name   string
	OK     bool
	Detail string
}

// Passed reports whether every check passed.
func (r *Result) Passed() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return len(r.Checks) > 0
}

func (r *Result) check(name string, ok bool, detail string, problems []string) {
	if len(problems) > 0 {
		shown := problems[:min(len(problems), 10)]
		detail += "\n      " + strings.Join(shown, "\n      ")
		if len(problems) > len(shown) {
			detail += fmt.Sprintf("\n      … and %d more", len(problems)-len(shown))
		}
	}
	r.Checks = append(r.Checks, Check{Name: name, OK: ok, Detail: detail})
}

// evaluate reads the threads' logs and the journals and runs the checks.
func (r *Result) evaluate(ctx context.Context, clients map[string]*client.Client, finals []Final, journalDir string) {
	byThread, tenantOf := r.classify(finals)
	r.LogProblems = r.readLogs(ctx, clients, byThread, tenantOf)
	paths, _ := filepath.Glob(filepath.Join(journalDir, "*.jsonl"))
	entries, bad, err := journal.ReadFiles(paths...)
	if err != nil {
		r.LogProblems = append(r.LogProblems, "journal: "+err.Error())
	}
	r.judgeJournal(entries, bad, finals)
	r.runChecks()
}

// classify counts how the accepted executions ended and groups the threads'.
func (r *Result) classify(finals []Final) (byThread map[string][]Ended, tenantOf map[string]string) {
	r.Outcomes, r.Examples = map[string]int{}, map[string][]string{}
	byThread, tenantOf = map[string][]Ended{}, map[string]string{}
	for _, f := range finals {
		if f.Status != "succeeded" {
			k := strings.TrimSpace(f.Status + " " + f.ErrorName)
			if len(r.Examples[k]) < 3 {
				r.Examples[k] = append(r.Examples[k], fmt.Sprintf("%s (thread %q #%d, accepted %s): %s", f.ID, f.Thread, f.Index,
					f.At.Format("15:04:05.000"), f.ErrorValue))
			}
		}
		if f.Thread != "" {
			r.AcceptedThread++
		} else {
			r.AcceptedOneOff++
		}
		switch {
		case f.Status == "" && r.Redis != nil && !f.At.Before(r.Redis.Killed.Add(-aofWindow)) && !f.At.After(r.Redis.Killed):
			r.LostToAOF++
			r.Outcomes["lost with Redis's last second (AOF everysec)"]++
		case f.Status == "":
			r.Vanished = append(r.Vanished, fmt.Sprintf("%s (thread %q #%d, accepted %s)", f.ID, f.Thread, f.Index, f.At.Format(time.RFC3339Nano)))
			r.Outcomes["vanished"]++
		case !f.Done():
			r.NotTerminal = append(r.NotTerminal, fmt.Sprintf("%s (thread %q #%d): %s %s", f.ID, f.Thread, f.Index, f.Status, f.Err))
			r.Outcomes["not terminal: "+f.Status]++
		default:
			r.Outcomes[strings.TrimSpace(f.Status+" "+f.ErrorName)]++
		}
		if f.Thread != "" {
			byThread[f.Thread] = append(byThread[f.Thread], Ended{Index: f.Index, ID: f.ID, Status: f.Status, ErrorName: f.ErrorName, Started: f.Started})
			tenantOf[f.Thread] = f.Tenant
		}
	}
	return byThread, tenantOf
}

// judgeJournal checks the journals' entries, and that each succeeded execution's run
// is among them: a journal that recorded nothing would pass every other check.
func (r *Result) judgeJournal(entries []journal.Entry, bad int, finals []Final) {
	r.Journal, r.JournalBadLines = journal.Check(entries), bad
	for _, f := range finals {
		if f.Status == "succeeded" && r.Journal.Runs[f.ID] == 0 {
			r.Unjournaled = append(r.Unjournaled, f.ID)
		}
	}
	sort.Strings(r.Unjournaled)
}

func (r *Result) readLogs(ctx context.Context, clients map[string]*client.Client, byThread map[string][]Ended, tenantOf map[string]string) []string {
	var mu sync.Mutex
	var problems []string
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, thread := range slices.Sorted(maps.Keys(byThread)) {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			log, err := threadLog(ctx, clients[tenantOf[thread]], thread)
			var bad []string
			if err != nil {
				bad = []string{err.Error()}
			} else {
				bad = CheckThreadLog(thread, log, byThread[thread])
			}
			mu.Lock()
			problems = append(problems, bad...)
			mu.Unlock()
		})
	}
	wg.Wait()
	sort.Strings(problems)
	return problems
}

func (r *Result) runChecks() {
	var injected []string
	for _, e := range r.Events {
		if e.Err != "" {
			injected = append(injected, e.What+": "+e.Err)
		}
	}
	r.check("every fault injected", len(injected) == 0 && len(r.Events) > 0,
		fmt.Sprintf("%d fault steps", len(r.Events)), injected)
	r.check("every submission accepted in the end (refusals retried)", len(r.GaveUp) == 0,
		fmt.Sprintf("%d thread executions and %d one-offs accepted; refusals %v", r.AcceptedThread, r.AcceptedOneOff, r.Refused), r.GaveUp)
	r.check("every accepted execution terminal", len(r.NotTerminal) == 0 && len(r.Vanished) == 0,
		fmt.Sprintf("%d not terminal, %d vanished (%d more lost with Redis's last second, which AOF everysec allows)",
			len(r.NotTerminal), len(r.Vanished), r.LostToAOF), append(slices.Clone(r.NotTerminal), r.Vanished...))
	r.check("thread logs: in order, none twice, no overlap, no loss", len(r.LogProblems) == 0,
		fmt.Sprintf("%d problems", len(r.LogProblems)), r.LogProblems)
	var clashes []string
	for _, o := range r.Journal.Overlaps {
		clashes = append(clashes, o.String())
	}
	for _, d := range r.Journal.Drops {
		clashes = append(clashes, d.String())
	}
	r.check("journal: no two workers on a sandbox at once, tokens never down", len(clashes) == 0,
		fmt.Sprintf("%d overlaps, %d token drops; %d operations refused by the fence, %d stale runs preempted",
			len(r.Journal.Overlaps), len(r.Journal.Drops), r.Journal.FencedTotal(), len(r.Journal.Preempted)), clashes)
	var twice []string
	for _, id := range slices.Sorted(maps.Keys(r.Journal.RunTwice)) {
		twice = append(twice, fmt.Sprintf("%s ran %d times", id, r.Journal.RunTwice[id]))
	}
	r.check("journal: no execution run twice", len(twice) == 0, fmt.Sprintf("%d run ids", len(r.Journal.Runs)), twice)
	r.check("journal: every succeeded execution's run recorded", len(r.Unjournaled) == 0 && r.JournalBadLines == 0 && r.Journal.Entries > 0,
		fmt.Sprintf("%d operations, %d unreadable lines, %d succeeded executions without a recorded run",
			r.Journal.Entries, r.JournalBadLines, len(r.Unjournaled)), r.Unjournaled)
}

// Print writes the summary.
func (r *Result) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "\n== fault suite: %d threads × %d executions over %s, one-off every %s, faults %v\n",
		c.Threads, c.Each, c.Over, c.OneOffEvery, c.Faults)
	fmt.Fprintf(w, "timings: stack up %s, load %s, drain %s, total %s\n", r.Timings.Up.Round(time.Second),
		r.Timings.Load.Round(time.Second), r.Timings.Drain.Round(time.Second), r.Timings.Total.Round(time.Second))
	for _, e := range r.Events {
		fmt.Fprintf(w, "  %s (+%s)  %s %s\n", e.Wall.Format("15:04:05.000"), e.At, e.What, e.Err)
	}
	if r.Redis != nil {
		fmt.Fprintf(w, "redis crash: restarted %s after the kill; API accepted writes again %s after the kill (%d probes)\n",
			r.Redis.Restarted.Round(time.Millisecond), r.Redis.WritesBack.Round(time.Millisecond), r.Redis.Probes)
	}
	fmt.Fprintf(w, "accepted: %d thread executions, %d one-offs; refused attempts (retried): %v\n",
		r.AcceptedThread, r.AcceptedOneOff, r.Refused)
	fmt.Fprintf(w, "ended:\n")
	for _, k := range slices.Sorted(maps.Keys(r.Outcomes)) {
		fmt.Fprintf(w, "  %6d  %s\n", r.Outcomes[k], k)
		for _, ex := range r.Examples[k] {
			fmt.Fprintf(w, "          e.g. %s\n", ex)
		}
	}
	fmt.Fprintf(w, "journal: %s\n", r.Journal.Summary())
	fmt.Fprintf(w, "sandboxes left on the engine after the drain: %d\n", r.SandboxesLeft)
	passed, failed := 0, 0
	for _, ch := range r.Checks {
		mark := "PASS"
		if ch.OK {
			passed++
		} else {
			mark, failed = "FAIL", failed+1
		}
		fmt.Fprintf(w, "%s  %s: %s\n", mark, ch.Name, ch.Detail)
	}
	fmt.Fprintf(w, "fault checks: %d passed, %d failed\n", passed, failed)
}
