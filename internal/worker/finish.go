package worker

import (
	"context"
	"errors"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/threadq"
	"github.com/codeinterp/codeinterp/sandbox"
)

// finishBackoff is how long finish waits before each new attempt to save a record's
// end: about a minute in all, so neither a Redis failover nor a Redis restart (which
// loads its data for seconds per GB: DESIGN.md, "Redis durability") leaves an
// execution running with its outcome lost.
var finishBackoff = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
	15 * time.Second, 15 * time.Second, 15 * time.Second}

// finish records the end of ex, retrying a failed save, and adds an execution's use
// to its tenant's usage. A record that already ended is left alone. A record too
// large to store is cut to fit first (see fitRecord).
func (r *Runner) finish(ctx context.Context, ex *jobs.Execution, status jobs.Status, failure *sandbox.Error) error {
	now := r.cfg.Now()
	ex.Status, ex.Error, ex.FinishedAt = status, failure, &now
	if ex.StartedAt != nil {
		d := now.Sub(*ex.StartedAt).Milliseconds()
		ex.DurationMS = &d
	}
	if fitRecord(ex, r.cfg.Budgets.MaxRecordBytes) {
		r.cfg.Logger.Warn("execution record over its size limit; cut to fit", "execution", ex.ID, "limit", r.cfg.Budgets.MaxRecordBytes)
	}
	for attempt := 0; ; attempt++ {
		ok, found, err := r.transition(ctx, ex, jobs.Queued, jobs.Running)
		if errors.Is(err, threadq.ErrLost) {
			// Another worker holds the thread now: it settles the item (WorkerLost).
			r.cfg.Logger.Warn("thread taken over; this outcome is not recorded", "execution", ex.ID, "err", err)
			return err
		}
		if err == nil {
			if !ok {
				r.cfg.Logger.Info("execution already ended", "execution", ex.ID, "status", found)
				return nil
			}
			r.addUsage(ctx, ex)
			return nil
		}
		if attempt == len(finishBackoff) || !r.pause(ctx, finishBackoff[attempt]) {
			r.cfg.Logger.Error("record execution outcome", "execution", ex.ID, "attempts", attempt+1, "err", err)
			return err
		}
		r.cfg.Logger.Warn("record execution outcome; retrying", "execution", ex.ID, "attempt", attempt+1, "err", err)
	}
}

// addUsage adds an ended execution's use to its tenant's counters. Thread operations
// are not executions and count nothing.
func (r *Runner) addUsage(ctx context.Context, ex *jobs.Execution) {
	if ex.Kind != jobs.KindExecution {
		return
	}
	sp := records.Spent{Status: ex.Status}
	if ex.CPUMS != nil {
		sp.CPUSeconds = float64(*ex.CPUMS) / 1000
	}
	if ex.DurationMS != nil {
		sp.WallSeconds = float64(*ex.DurationMS) / 1000
	}
	for _, f := range ex.Files {
		sp.BytesStored += f.Size
	}
	if err := r.cfg.Records.AddUsage(context.WithoutCancel(ctx), ex.Tenant, sp); err != nil {
		r.cfg.Logger.Warn("record usage", "execution", ex.ID, "tenant", ex.Tenant, "err", err)
	}
}
