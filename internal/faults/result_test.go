package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/client"
	"github.com/codeinterp/codeinterp/sandbox/journal"
)

func final(id, thread string, index int, status, errName string, at time.Time) Final {
	return Final{Accepted: Accepted{ID: id, Tenant: "alpha", Thread: thread, Index: index, At: at},
		Status: status, ErrorName: errName, Started: status != ""}
}

func runEntry(id, worker string, begin, end int64) journal.Entry {
	return journal.Entry{Op: "run", Run: id, Sandbox: "s1", Tenant: "alpha", Thread: "f00", Worker: worker, Token: 1, Begin: begin, End: end}
}

func checkNamed(t *testing.T, r *Result, prefix string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if strings.HasPrefix(c.Name, prefix) {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", prefix, r.Checks)
	return Check{}
}

// A run where everything held passes every check; each kind of failure fails its own.
func TestResultChecks(t *testing.T) {
	killed := time.Now()
	base := func() (*Result, []Final, []journal.Entry) {
		r := &Result{Events: []Event{{What: "SIGKILL redis"}}, Redis: &RedisRecovery{Killed: killed}}
		finals := []Final{
			final("e0", "f00", 0, "succeeded", "", killed.Add(-time.Minute)),
			final("e1", "f00", 1, "failed", "WorkerLost", killed.Add(-time.Minute)),
			final("o1", "", 0, "succeeded", "", killed.Add(-time.Minute)),
		}
		entries := []journal.Entry{runEntry("e0", "A", 100, 200), runEntry("e1", "A", 300, 400), runEntry("o1", "B", 300, 400)}
		entries[2].Sandbox, entries[2].Thread, entries[2].Token = "s2", "", 0
		return r, finals, entries
	}
	judge := func(r *Result, finals []Final, entries []journal.Entry) *Result {
		r.classify(finals)
		r.judgeJournal(entries, 0, finals)
		r.runChecks()
		return r
	}

	if r := judge(base()); !r.Passed() {
		t.Fatalf("a clean run failed: %+v", r.Checks)
	}

	r, finals, entries := base()
	entries = append(entries, journal.Entry{Op: "find", Sandbox: "s1", Tenant: "alpha", Thread: "f00", Worker: "B", Token: 2, Begin: 350, End: 500})
	if c := checkNamed(t, judge(r, finals, entries), "journal: no two workers"); c.OK || !strings.Contains(c.Detail, "run by A") {
		t.Fatalf("an overlap passed: %+v", c)
	}

	r, finals, entries = base()
	entries = append(entries, runEntry("e0", "B", 900, 1000))
	if c := checkNamed(t, judge(r, finals, entries), "journal: no execution run twice"); c.OK {
		t.Fatalf("a run repeated passed: %+v", c)
	}

	r, finals, _ = base()
	if c := checkNamed(t, judge(r, finals, nil), "journal: every succeeded"); c.OK {
		t.Fatalf("an empty journal passed: %+v", c)
	}

	r, finals, entries = base()
	finals = append(finals, final("e2", "f00", 2, "running", "", killed.Add(-time.Minute)))
	if c := checkNamed(t, judge(r, finals, entries), "every accepted execution terminal"); c.OK {
		t.Fatalf("an execution still running passed: %+v", c)
	}

	// Gone after Redis's crash: allowed within AOF everysec's window before the kill,
	// not before it.
	r, finals, entries = base()
	finals = append(finals, final("e3", "f00", 3, "", "", killed.Add(-time.Second)))
	if r = judge(r, finals, entries); !r.Passed() || r.LostToAOF != 1 {
		t.Fatalf("an execution lost with the last second failed the run: %d %+v", r.LostToAOF, r.Checks)
	}
	r, finals, entries = base()
	finals = append(finals, final("e3", "f00", 3, "", "", killed.Add(-time.Minute)))
	if c := checkNamed(t, judge(r, finals, entries), "every accepted execution terminal"); c.OK {
		t.Fatalf("an execution vanished long before the crash passed: %+v", c)
	}

	r, finals, entries = base()
	r.Events = append(r.Events, Event{What: "SIGKILL api", Err: "no such container"})
	if c := checkNamed(t, judge(r, finals, entries), "every fault injected"); c.OK {
		t.Fatalf("a fault not injected passed: %+v", c)
	}
}

func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&client.APIError{Status: 503, Code: "unavailable"}, "HTTP 503"},
		{fmt.Errorf("post: %w", &client.APIError{Status: 500, Code: "internal"}), "HTTP 500"},
		{&client.APIError{Status: 429, Code: "quota_exceeded"}, "HTTP 429"},
		{&client.APIError{Status: 400, Code: "invalid_argument"}, "rejected"},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, "connection"},
		{context.DeadlineExceeded, "timeout"},
	} {
		if got := refusal(tc.err); got != tc.want {
			t.Errorf("refusal(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
