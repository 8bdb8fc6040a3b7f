package service

import (
	"context"
	"errors"
	"slices"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
)

// ResetThread restarts the thread's kernel, in order after the executions queued
// before it: variables, imports and processes are gone; the workspace stays.
func (s *Service) ResetThread(ctx context.Context, tenant, id string) error {
	if _, err := s.Thread(ctx, tenant, id); err != nil {
		return err
	}
	op, err := s.runOp(ctx, &jobs.Execution{Kind: jobs.KindReset, Tenant: tenant, ThreadID: id})
	if err != nil {
		return err
	}
	if op.Status != jobs.Succeeded {
		return Unavailable("resetting thread %s: %s", id, opProblem(op))
	}
	return nil
}

// Interrupt cancels the execution the thread is running and returns it as it
// stands, or nil when none runs. Executions queued behind it stay queued.
func (s *Service) Interrupt(ctx context.Context, tenant, id string) (*jobs.Execution, error) {
	if err := ValidThread("id", id); err != nil {
		return nil, err
	}
	st, err := s.cfg.Threads.State(ctx, jobs.NewThreadKey(tenant, id))
	if err != nil || st.Inflight == "" {
		return nil, err
	}
	ex, err := s.cfg.Records.Get(ctx, tenant, st.Inflight)
	switch {
	case errors.Is(err, records.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case ex.Kind != jobs.KindExecution || ex.Status != jobs.Running:
		return nil, nil
	}
	return s.cfg.Records.Cancel(ctx, tenant, ex.ID)
}

// Position returns how many items of its thread are ahead of a queued execution (the
// one in flight included), or -1 when it waits in no thread's queue (a one-off, or
// an execution taken already).
func (s *Service) Position(ctx context.Context, ex *jobs.Execution) (int, error) {
	if ex.ThreadID == "" {
		return -1, nil
	}
	st, err := s.cfg.Threads.State(ctx, jobs.NewThreadKey(ex.Tenant, ex.ThreadID))
	if err != nil {
		return -1, err
	}
	i := slices.Index(st.Queued, ex.ID)
	if i < 0 {
		return -1, nil
	}
	if st.Inflight != "" {
		i++
	}
	return i, nil
}
