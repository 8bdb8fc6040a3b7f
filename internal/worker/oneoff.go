package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/sandbox"
)

// ProcessOneOff is the handler of [jobs.TypeRun]: it runs a one-off execution in a fresh
// sandbox, removed afterwards. It returns an error only when the
// run should be retried: the sandbox could not be prepared and the code never started.
func (r *Runner) ProcessOneOff(ctx context.Context, t *asynq.Task) error {
	p, err := jobs.DecodePayload(t)
	if err != nil {
		return err
	}
	ex, err := r.cfg.Records.Get(ctx, "", p.ID)
	if errors.Is(err, records.ErrNotFound) {
		r.cfg.Logger.Warn("execution record gone; dropping task", "execution", p.ID)
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case ex.Status.Terminal():
		return nil // a duplicate delivery
	case ex.Status == jobs.Running:
		// An earlier attempt started the code and its worker died. Code is not
		// idempotent, so it is not run again.
		return r.finish(ctx, ex, jobs.Failed, jobs.ErrWorkerLost.With(
			"the worker running this execution stopped before it finished; it was not re-run because the code may already have had effects"))
	}
	err = r.run(ctx, ex)
	if err == nil {
		return nil
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	if retried < maxRetry && ctx.Err() == nil {
		return err
	}
	return r.finish(ctx, ex, jobs.Failed, sandboxError(err))
}

// run prepares a sandbox and runs ex in it. An error means the code did not start.
func (r *Runner) run(ctx context.Context, ex *jobs.Execution) (err error) {
	sb, err := r.cfg.Runtime.Create(ctx, sandbox.Spec{
		Tenant: ex.Tenant, Thread: ex.ThreadID, Owner: r.cfg.Worker, Limits: r.cfg.Limits,
	})
	if err != nil {
		return fmt.Errorf("create sandbox: %w", err)
	}
	defer func() {
		// Removal must happen even when the worker is shutting down.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if rerr := sb.Remove(cctx); rerr != nil {
			r.cfg.Logger.Error("remove sandbox", "execution", ex.ID, "err", rerr)
		}
	}()
	if err := r.putInputs(ctx, sb, ex); err != nil {
		return err
	}
	if ok, err := r.start(ctx, ex); err != nil || !ok {
		return err
	}
	// From here on the code may run: no error may reach asynq, or it would run twice.
	_, _ = r.execute(ctx, sb, ex, nil)
	return nil
}
