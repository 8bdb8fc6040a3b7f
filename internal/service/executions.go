package service

import (
	"context"
	"errors"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
)

// MaxWait bounds how long a read may wait for an execution to end.
const MaxWait = 60 * time.Second

// Get returns one of the tenant's executions; with wait > 0 it first waits up to wait
// for it to end.
func (s *Service) Get(ctx context.Context, tenant, id string, wait time.Duration) (*jobs.Execution, error) {
	var done <-chan struct{}
	if wait > 0 {
		var stop func()
		done, stop = s.cfg.Waiter.Watch(id) // before the read, so an end in between is not missed
		defer stop()
	}
	ex, err := s.execution(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	if wait > 0 && !ex.Status.Terminal() {
		return s.awaitEnd(ctx, tenant, id, done, wait)
	}
	return ex, nil
}

// execution loads one of the tenant's executions, or reports it not found.
func (s *Service) execution(ctx context.Context, tenant, id string) (*jobs.Execution, error) {
	ex, err := s.cfg.Records.Get(ctx, tenant, id)
	if errors.Is(err, records.ErrNotFound) || (err == nil && ex.Kind != jobs.KindExecution) {
		return nil, NotFound("execution " + id)
	}
	return ex, err
}

// awaitEnd waits until done is closed (the record ended) or wait passes, and reloads
// the record.
func (s *Service) awaitEnd(ctx context.Context, tenant, id string, done <-chan struct{}, wait time.Duration) (*jobs.Execution, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.cfg.Records.Get(ctx, tenant, id)
}

// Cancel cancels one of the tenant's executions: a queued one never runs, a running
// one is interrupted; an ended one is left as it is. It returns the execution as it
// stands.
func (s *Service) Cancel(ctx context.Context, tenant, id string) (*jobs.Execution, error) {
	if _, err := s.execution(ctx, tenant, id); err != nil {
		return nil, err
	}
	return s.cfg.Records.Cancel(ctx, tenant, id)
}

// ListRequest filters and pages [Service.List].
type ListRequest struct {
	Thread string
	Status jobs.Status
	Limit  int // 0: 20
	Cursor string
}

// List returns a page of the tenant's executions, newest first, and the cursor of
// the next page ("" at the end). Items are summaries with bounded output, errors and
// files (see [records.Store.List]); a client GETs one execution for all of it. With a
// status filter a page may come back short, even empty, with a cursor to go on from.
func (s *Service) List(ctx context.Context, tenant string, req ListRequest) ([]*jobs.Execution, string, error) {
	if req.Thread != "" {
		if err := ValidThread("thread_id", req.Thread); err != nil {
			return nil, "", err
		}
	}
	if req.Status != "" && req.Status != jobs.Queued && req.Status != jobs.Running && !req.Status.Terminal() {
		return nil, "", Invalid("status", "must be one of queued, running, succeeded, failed, timed_out, canceled")
	}
	if req.Limit == 0 {
		req.Limit = 20
	}
	if req.Limit < 1 || req.Limit > 100 {
		return nil, "", Invalid("limit", "must be between 1 and 100")
	}
	if req.Cursor != "" && !jobs.ExecutionPrefix.Of(req.Cursor) {
		return nil, "", Invalid("cursor", "is not a cursor this API returned")
	}
	return s.cfg.Records.List(ctx, tenant, records.ListOptions{Thread: req.Thread, Status: req.Status, Limit: req.Limit, Cursor: req.Cursor})
}

// Events is the event stream of one execution.
type Events struct {
	s  *Service
	id string
}

// OpenEvents opens the event stream of one of the tenant's executions.
func (s *Service) OpenEvents(ctx context.Context, tenant, id string) (*Events, error) {
	if _, err := s.execution(ctx, tenant, id); err != nil {
		return nil, err
	}
	return &Events{s: s, id: id}, nil
}

// Read returns the events after the stream entry after ("0": from the start), waiting
// up to block for the first; none when block passes.
func (e *Events) Read(ctx context.Context, after string, block time.Duration) ([]jobs.Event, error) {
	return e.s.cfg.Records.Events(ctx, e.id, after, block)
}
