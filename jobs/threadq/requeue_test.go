package threadq_test

import (
	"errors"
	"testing"

	"github.com/codeinterp/codeinterp/jobs/threadq"
)

// --- requeue.lua -------------------------------------------------------------------

func TestRequeue(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		setup     func(e *env) // A owns t1 unless the setup releases or loses it
		worker    string
		id        string
		wantErr   error
		wantState threadq.State
		wantNext  string // for A, after the requeue ("" for no check)
	}{{
		name: "owner puts its item in flight back at the head",
		setup: func(e *env) {
			e.push(t1, "a", "b")
			e.next(t1, "A", "a")
		},
		worker:    "A",
		id:        "a",
		wantState: threadq.State{Owner: "A", Queued: []string{"a", "b"}},
		wantNext:  "a",
	}, {
		name: "the only item",
		setup: func(e *env) {
			e.push(t1, "a")
			e.next(t1, "A", "a")
		},
		worker:    "A",
		id:        "a",
		wantState: threadq.State{Owner: "A", Queued: []string{"a"}},
		wantNext:  "a",
	}, {
		name: "items queued meanwhile stay behind it",
		setup: func(e *env) {
			e.push(t1, "a")
			e.next(t1, "A", "a")
			e.push(t1, "b", "c")
		},
		worker:    "A",
		id:        "a",
		wantState: threadq.State{Owner: "A", Queued: []string{"a", "b", "c"}},
		wantNext:  "a",
	}, {
		name: "requeued twice: queued once",
		setup: func(e *env) {
			e.push(t1, "a", "b")
			e.next(t1, "A", "a")
			e.check(e.q.Requeue(e.ctx, e.lease(t1, "A"), "a"))
		},
		worker:    "A",
		id:        "a",
		wantErr:   threadq.ErrNotInFlight,
		wantState: threadq.State{Owner: "A", Queued: []string{"a", "b"}},
		wantNext:  "a",
	}, {
		name: "not the item in flight",
		setup: func(e *env) {
			e.push(t1, "a", "b")
			e.next(t1, "A", "a")
		},
		worker:    "A",
		id:        "b",
		wantErr:   threadq.ErrNotInFlight,
		wantState: threadq.State{Owner: "A", Queued: []string{"b"}, Inflight: "a"},
	}, {
		name:      "nothing in flight",
		setup:     func(e *env) { e.push(t1, "a") },
		worker:    "A",
		id:        "a",
		wantErr:   threadq.ErrNotInFlight,
		wantState: threadq.State{Owner: "A", Queued: []string{"a"}},
	}, {
		name: "not the owner",
		setup: func(e *env) {
			e.push(t1, "a", "b")
			e.next(t1, "A", "a")
			e.beat("B")
		},
		worker:    "B",
		id:        "a",
		wantErr:   threadq.ErrLost,
		wantState: threadq.State{Owner: "A", Queued: []string{"b"}, Inflight: "a"},
	}, {
		name: "taken over meanwhile: the new owner settles the item",
		setup: func(e *env) {
			e.push(t1, "a", "b")
			e.next(t1, "A", "a")
			e.die()
			e.beat("B")
			if got := e.claim(t1, "B"); got != "a" {
				e.t.Fatalf("takeover returned %q, want a", got)
			}
		},
		worker:    "A",
		id:        "a",
		wantErr:   threadq.ErrLost,
		wantState: threadq.State{Owner: "B", Queued: []string{"b"}, Inflight: "a"},
	}, {
		name: "owner released the thread",
		setup: func(e *env) {
			e.push(t1, "a", "b")
			e.next(t1, "A", "a")
			e.release(t1, "A", true)
		},
		worker:    "A",
		id:        "a",
		wantErr:   threadq.ErrLost,
		wantState: threadq.State{Queued: []string{"b"}, Inflight: "a"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.beat("A")
			e.claim(t1, "A")
			e.push(t2, "other") // another thread's queue is never touched
			tc.setup(e)
			if err := e.q.Requeue(e.ctx, e.lease(t1, tc.worker), tc.id); !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Errorf("Requeue(%s, %s) = %v, want %v", tc.worker, tc.id, err, tc.wantErr)
			}
			e.wantState(t1, tc.wantState)
			e.wantState(t2, threadq.State{Queued: []string{"other"}})
			if tc.wantNext != "" {
				e.next(t1, "A", tc.wantNext)
			}
		})
	}
}
