package faults

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// Ended is an accepted execution of a thread as it ended.
type Ended struct {
	Index     int
	ID        string
	Status    string // succeeded, failed, …; "" if it vanished (404)
	ErrorName string
	Started   bool // its record says the code was sent to a kernel (started_at)
}

// mayBeMissing are the service's error names of an execution whose code may never
// have run although its record says it started: its worker died or stopped first,
// its kernel died, or its sandbox broke.
var mayBeMissing = map[string]bool{"WorkerLost": true, "WorkerStopped": true, "KernelDied": true, "SandboxError": true}

// CheckThreadLog checks one thread's log.txt — the lines its executions wrote, "start
// <i> <pid>" then "end <i>" — against how they ended, and returns what is wrong:
//
//   - order: executions started in the order accepted, none twice;
//   - no overlap: an execution ended only while it was the one running;
//   - no loss: a succeeded execution started once and ended; one missing from the
//     log failed before it started or was lost with its worker, kernel or sandbox.
//
// Executions the log shows that no accepted one explains are reported too.
func CheckThreadLog(thread, log string, ended []Ended) []string {
	var bad []string
	badf := func(format string, args ...any) { bad = append(bad, thread+": "+fmt.Sprintf(format, args...)) }
	started, finished := map[int]int{}, map[int]bool{}
	last, open := -1, -1
	sc := bufio.NewScanner(strings.NewReader(log))
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		n := -1
		if len(f) >= 2 {
			n, _ = strconv.Atoi(f[1])
		}
		switch {
		case len(f) == 3 && f[0] == "start" && n >= 0:
			if n <= last {
				badf("execution %d started after %d: out of order or run twice (line %d)", n, last, line)
			}
			started[n]++
			last, open = max(last, n), n
		case len(f) == 2 && f[0] == "end" && n >= 0:
			if open != n {
				badf("execution %d ended while %d was running: overlap (line %d)", n, open, line)
			}
			finished[n] = true
			open = -1
		default:
			badf("line %d is not a start or an end: %q", line, sc.Text())
		}
	}
	known := map[int]bool{}
	for _, e := range ended {
		known[e.Index] = true
		switch {
		case started[e.Index] > 1:
			badf("execution %d (%s) ran %d times", e.Index, e.ID, started[e.Index])
		case e.Status == "succeeded" && (started[e.Index] != 1 || !finished[e.Index]):
			badf("execution %d (%s) succeeded but the log shows started %d times, ended %v", e.Index, e.ID, started[e.Index], finished[e.Index])
		case e.Status != "succeeded" && e.Status != "" && started[e.Index] == 0 && e.Started && !mayBeMissing[e.ErrorName]:
			badf("execution %d (%s) started and ended %s %s, but never ran", e.Index, e.ID, e.Status, e.ErrorName)
		}
	}
	for n := range started {
		if !known[n] {
			badf("execution %d ran but was never accepted", n)
		}
	}
	return bad
}
