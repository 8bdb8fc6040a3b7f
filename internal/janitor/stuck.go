package janitor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
)

// Tasks is what the stuck sweep needs of the one-off task queue (asynq; internal/app
// wires it).
type Tasks interface {
	// Pending reports whether the queue still holds a task that will run one-off
	// execution id: waiting, scheduled, retrying or running. A task the queue finished
	// with or gave up on (archived) is not pending.
	Pending(ctx context.Context, id string) (bool, error)
	// Requeue queues a run of ex, replacing a task the queue finished with or gave up
	// on; a pending one is left as it is.
	Requeue(ctx context.Context, ex *jobs.Execution) error
}

// Messages of the executions the stuck sweep ends.
const (
	lostRunning = "the worker running this execution was lost and nothing will finish it; it was not re-run because the code may already have had effects"
	lostQueued  = "this execution was lost from its thread's queue before it started, and will never run; it can be submitted again"
)

// sweepStuck makes sure nothing stays queued or running for good. For every execution
// in a tenant's active index created StuckAfter ago or earlier:
//   - a one-off whose task is pending is left to asynq (without reading its record);
//   - ended or gone: it is dropped from the index (it would hold a quota slot for good);
//   - a queued one-off with no pending task (the API died between storing and
//     queueing it, or asynq gave up on it): it is queued again;
//   - a running one-off with no pending task: it ends failed, WorkerLost;
//   - a thread's item with no live owner, in neither the thread's queue nor in flight
//     (so no owner will ever take or settle it): it ends failed, WorkerLost.
//
// It is conservative: nothing a live worker may still be running is ended (a running
// record whose worker is alive is left alone), and every end is a compare-and-set on
// the status it saw, so a normal end that lands meanwhile wins. It walks every
// tenant's index (a SCAN of the keyspace), so it runs once per StuckAfter/2 across all
// janitors: an execution is settled at most 1.5 × StuckAfter after it was created.
func (j *Janitor) sweepStuck(ctx context.Context, rep *Report) error {
	ok, err := j.cfg.Records.TryLock(ctx, "stuck", j.cfg.StuckAfter/2)
	if err != nil || !ok {
		return err
	}
	alive, err := j.cfg.Threads.Alive(ctx)
	if err != nil {
		return err
	}
	cutoff := j.cfg.Now().Add(-j.cfg.StuckAfter)
	// One execution that cannot be settled (a record that does not decode) must not
	// stop the sweep for everyone after it: it is logged, and the sweep goes on.
	var first error
	err = j.cfg.Records.StaleActive(ctx, cutoff, func(st records.Stale) error {
		if err := j.unstick(ctx, st, alive, rep); err != nil {
			j.cfg.Logger.Error("settle stuck execution", "execution", st.ID, "tenant", st.Tenant, "err", err)
			first = cmp.Or(first, err)
		}
		return ctx.Err()
	})
	return cmp.Or(err, first)
}

func (j *Janitor) unstick(ctx context.Context, st records.Stale, alive []string, rep *Report) error {
	// Checked before the record is read: a task asynq will run settles its execution
	// (a backlog costs no record reads), and a task seen gone cannot have been running
	// what the record, read after, says is still queued or running.
	if j.cfg.Tasks != nil {
		if pending, err := j.cfg.Tasks.Pending(ctx, st.ID); err != nil || pending {
			return err
		}
	}
	ex, err := j.cfg.Records.Get(ctx, "", st.ID)
	switch {
	case errors.Is(err, records.ErrNotFound) || (err == nil && (ex.Status.Terminal() || ex.Tenant != st.Tenant)):
		if err := j.cfg.Records.DropActive(ctx, st.Tenant, st.ID); err != nil {
			return err
		}
		rep.ActiveDropped++
		return nil
	case err != nil:
		return err
	case ex.Status == jobs.Running && slices.Contains(alive, ex.Worker):
		return nil // its worker may still be running it, and will end it
	case ex.ThreadID != "":
		return j.unstickThreadItem(ctx, ex, rep)
	case j.cfg.Tasks == nil:
		return nil
	case ex.Status == jobs.Running:
		return j.end(ctx, ex, lostRunning, rep)
	}
	if err := j.cfg.Tasks.Requeue(ctx, ex); err != nil {
		return fmt.Errorf("queue stuck execution %s again: %w", ex.ID, err)
	}
	rep.StuckRequeued++
	j.cfg.Logger.Warn("queued a stuck one-off execution again", "execution", ex.ID, "tenant", ex.Tenant, "created", ex.CreatedAt)
	return nil
}

func (j *Janitor) unstickThreadItem(ctx context.Context, ex *jobs.Execution, rep *Report) error {
	tk := jobs.NewThreadKey(ex.Tenant, ex.ThreadID)
	owner, err := j.cfg.Threads.OwnerAlive(ctx, tk)
	if err != nil || owner != "" {
		return err // the live owner takes or settles its items
	}
	// Read after the record: an item leaves the queue only to be in flight, and is
	// replaced in flight only once its owner is done with it.
	q, err := j.cfg.Threads.State(ctx, tk)
	if err != nil || q.Inflight == ex.ID || slices.Contains(q.Queued, ex.ID) {
		return err // the thread's next owner takes or settles it
	}
	msg := lostRunning
	if ex.Status == jobs.Queued {
		msg = lostQueued
	}
	return j.end(ctx, ex, msg, rep)
}

// end fails ex with WorkerLost, if its status is still the one read.
func (j *Janitor) end(ctx context.Context, ex *jobs.Execution, msg string, rep *Report) error {
	from := ex.Status
	now := j.cfg.Now().UTC()
	ex.Status, ex.Error, ex.FinishedAt = jobs.Failed, jobs.ErrWorkerLost.With(msg), &now
	if ex.StartedAt != nil {
		d := now.Sub(*ex.StartedAt).Milliseconds()
		ex.DurationMS = &d
	}
	ok, _, err := j.cfg.Records.Transition(ctx, ex, from)
	if err != nil || !ok {
		return err
	}
	rep.StuckEnded++
	j.cfg.Logger.Warn("ended a stuck execution", "execution", ex.ID, "tenant", ex.Tenant, "thread", ex.ThreadID,
		"was", from, "created", ex.CreatedAt.Format(time.RFC3339))
	return nil
}
