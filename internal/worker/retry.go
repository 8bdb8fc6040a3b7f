package worker

import (
	"time"

	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/webhook"
)

// RetryDelay is the asynq RetryDelayFunc of the worker's queue: each task type keeps
// its own policy.
func RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	if t != nil && t.Type() == jobs.TypeWebhook {
		return webhook.RetryDelay(n, err)
	}
	return jobs.RunRetryDelay(n)
}
