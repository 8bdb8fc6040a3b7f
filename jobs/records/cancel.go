package records

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
)

// Cancel cancels an execution of tenant's. A queued one is marked canceled at once and
// never runs; a running one is interrupted by its worker, which records the outcome.
// It returns the record as it stands, and ErrNotFound for another tenant's id.
func (s *Store) Cancel(ctx context.Context, tenant, id string) (*jobs.Execution, error) {
	for {
		ex, err := s.Get(ctx, tenant, id)
		if err != nil {
			return nil, err
		}
		switch ex.Status {
		case jobs.Queued:
			t := s.now().UTC()
			ex.Status, ex.FinishedAt = jobs.Canceled, &t
			ex.Error = jobs.ErrCanceled.With("canceled before it started")
			ok, _, err := s.Transition(ctx, ex, jobs.Queued)
			if err != nil {
				return nil, err
			}
			if ok {
				if ex.ThreadID != "" {
					// It would be skipped when its turn came; free its place now.
					if err := s.threads.Remove(ctx, jobs.NewThreadKey(ex.Tenant, ex.ThreadID), ex.ID); err != nil {
						return nil, err
					}
				}
				return ex, nil
			}
			// It started meanwhile: cancel the run instead.
		case jobs.Running:
			if err := s.rdb.Publish(ctx, s.cancelChannel(), id).Err(); err != nil {
				return nil, fmt.Errorf("cancel execution %s: %w", id, err)
			}
			return ex, nil
		default:
			return ex, nil
		}
	}
}

// Cancels is a subscription to cancel requests of running executions.
type Cancels struct{ sub *redis.PubSub }

// SubscribeCancels subscribes to cancel requests; a worker interrupts the ones it runs.
// It does not wait for a Redis that is down or loading its data (see subscribe); it
// fails only if ctx ends.
func (s *Store) SubscribeCancels(ctx context.Context) (*Cancels, error) {
	sub, err := subscribe(ctx, s.rdb, s.cancelChannel())
	if err != nil {
		return nil, err
	}
	return &Cancels{sub: sub}, nil
}

// Each calls f with the id of each cancel request until Close.
func (c *Cancels) Each(f func(id string)) {
	for msg := range c.sub.Channel() {
		f(msg.Payload)
	}
}

// Close ends the subscription.
func (c *Cancels) Close() error { return c.sub.Close() }
