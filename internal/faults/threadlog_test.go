package faults

import (
	"strings"
	"testing"
)

func ok(i int) Ended { return Ended{Index: i, ID: "ex", Status: "succeeded", Started: true} }

func TestCheckThreadLog(t *testing.T) {
	for _, tc := range []struct {
		name  string
		log   string
		ended []Ended
		want  string // a problem that must be reported; "" for none
	}{
		{name: "clean", log: "start 0 11\nend 0\nstart 1 11\nend 1\n", ended: []Ended{ok(0), ok(1)}},
		{name: "a run cut short by a dead worker", log: "start 0 11\nstart 1 12\nend 1\n",
			ended: []Ended{{Index: 0, Status: "failed", ErrorName: "WorkerLost", Started: true}, ok(1)}},
		{name: "never started: failed before the code ran", log: "start 1 12\nend 1\n",
			ended: []Ended{{Index: 0, Status: "failed", ErrorName: "SandboxError"}, ok(1)}},
		{name: "lost with its worker before it ran", log: "start 1 12\nend 1\n",
			ended: []Ended{{Index: 0, Status: "failed", ErrorName: "WorkerLost", Started: true}, ok(1)}},
		{name: "out of order", log: "start 1 11\nend 1\nstart 0 11\nend 0\n", ended: []Ended{ok(0), ok(1)},
			want: "execution 0 started after 1"},
		{name: "run twice", log: "start 0 11\nend 0\nstart 0 12\nend 0\n", ended: []Ended{ok(0)},
			want: "ran 2 times"},
		{name: "overlap", log: "start 0 11\nstart 1 12\nend 0\nend 1\n", ended: []Ended{ok(0), ok(1)},
			want: "execution 0 ended while 1 was running"},
		{name: "succeeded but never ran", log: "start 1 12\nend 1\n", ended: []Ended{ok(0), ok(1)},
			want: "execution 0 (ex) succeeded but the log shows started 0 times"},
		{name: "succeeded but never ended", log: "start 0 12\n", ended: []Ended{ok(0)},
			want: "ended false"},
		{name: "started, failed for no reason that explains it, never ran", log: "",
			ended: []Ended{{Index: 0, ID: "ex", Status: "failed", ErrorName: "ZeroDivisionError", Started: true}},
			want:  "started and ended failed ZeroDivisionError, but never ran"},
		{name: "ran but never accepted", log: "start 0 11\nend 0\nstart 1 11\nend 1\n", ended: []Ended{ok(0)},
			want: "execution 1 ran but was never accepted"},
		{name: "garbage", log: "start 0 11\nhello\nend 0\n", ended: []Ended{ok(0)},
			want: `line 2 is not a start or an end: "hello"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := CheckThreadLog("t1", tc.log, tc.ended)
			switch {
			case tc.want == "" && len(bad) > 0:
				t.Fatalf("problems in a clean log: %q", bad)
			case tc.want != "" && !strings.Contains(strings.Join(bad, "\n"), tc.want):
				t.Fatalf("problems %q, want one with %q", bad, tc.want)
			}
		})
	}
}
