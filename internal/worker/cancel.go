package worker

import (
	"context"
	"errors"
)

// errUserCanceled is the cause of a run's context canceled through the API.
var errUserCanceled = errors.New("canceled by the user")

type runningRun struct{ cancel context.CancelCauseFunc }

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
