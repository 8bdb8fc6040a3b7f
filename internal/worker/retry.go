package worker

import (
	"errors"
	"time"

	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/webhook"
)

// postponeDelay is how long a one-off postponed for its tenant's share waits before
// it is offered again (asynq moves it back to the queue on its next check of
// scheduled tasks, within a few seconds).
const postponeDelay = 500 * time.Millisecond

// IsFailure is the asynq IsFailure of the worker's queue: a postponed one-off did not
// fail, and uses none of its retries.
func IsFailure(err error) bool { return err != nil && !errors.Is(err, ErrTenantBusy) }

// RetryDelay is the asynq RetryDelayFunc of the worker's queue: each task type keeps
// its own policy.
func RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	if t != nil && t.Type() == jobs.TypeWebhook {
		return webhook.RetryDelay(n, err)
	}
	if errors.Is(err, ErrTenantBusy) {
		return postponeDelay
	}
	return jobs.RunRetryDelay(n)
}
