package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// errUserCanceled is the cause of a run's context canceled through the API.
var errUserCanceled = errors.New("canceled by the user")

type runningRun struct{ cancel context.CancelCauseFunc }

func (r *Records) cancelChannel() string { return r.prefix + "cancel" }

// Cancel cancels an execution of tenant's. A queued one is marked canceled at once and
// never runs; a running one is interrupted by its worker, which records the outcome.
// It returns the record as it stands, and ErrNotFound for another tenant's id.
func (r *Records) Cancel(ctx context.Context, tenant, id string, now func() time.Time) (*Execution, error) {
	for {
		ex, err := r.Get(ctx, tenant, id)
		if err != nil {
			return nil, err
		}
		switch ex.Status {
		case Queued:
			t := now().UTC()
			ex.Status, ex.FinishedAt = Canceled, &t
			ex.Error = &sandbox.Error{Name: "Canceled", Value: "canceled before it started"}
			ok, _, err := r.Transition(ctx, ex, Queued)
			if err != nil {
				return nil, err
			}
			if ok {
				return ex, nil
			}
			// It started meanwhile: cancel the run instead.
		case Running:
			if err := r.rdb.Publish(ctx, r.cancelChannel(), id).Err(); err != nil {
				return nil, fmt.Errorf("cancel execution %s: %w", id, err)
			}
			return ex, nil
		default:
			return ex, nil
		}
	}
}

// track registers a running execution so a cancel can reach it, and returns its
// context and a function to unregister it.
func (r *Runner) track(ctx context.Context, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	r.mu.Lock()
	r.running[id] = &runningRun{cancel: cancel}
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		delete(r.running, id)
		r.mu.Unlock()
		cancel(nil)
	}
}

// cancelLocal interrupts execution id if it runs on this worker.
func (r *Runner) cancelLocal(id string) {
	r.mu.Lock()
	run := r.running[id]
	r.mu.Unlock()
	if run != nil {
		run.cancel(errUserCanceled)
	}
}
