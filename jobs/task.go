package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
)

// Task types. They are part of the stored contract: never rename one.
const (
	TypeRun = "execution:run" // run a one-off execution
)

// QueueTasks is the one asynq queue: one-off executions and webhook deliveries.
// One queue, because asynq polls each queue when idle: more queues, more idle Redis
// load. Threads do not use asynq: see [ThreadQueue].
const QueueTasks = "tasks"

// MaxRetry bounds how often a run whose sandbox could not be prepared is retried
// before it is failed with a SandboxError.
const MaxRetry = 3

type runPayload struct {
	ID string `json:"id"`
}

// Enqueuer puts executions on the queue.
type Enqueuer struct {
	cli *asynq.Client
}

// NewEnqueuer returns an Enqueuer using cli.
func NewEnqueuer(cli *asynq.Client) *Enqueuer { return &Enqueuer{cli: cli} }

// Enqueue queues a run of ex. The task id is the execution id, so enqueuing the same
// execution twice queues it once.
func (e *Enqueuer) Enqueue(ctx context.Context, ex *Execution) error {
	payload, _ := json.Marshal(runPayload{ID: ex.ID})
	_, err := e.cli.EnqueueContext(ctx, asynq.NewTask(TypeRun, payload),
		asynq.TaskID(ex.ID),
		asynq.Queue(QueueTasks),
		asynq.MaxRetry(MaxRetry),
		// Long enough for the code's own timeout plus sandbox start and uploads;
		// the sandbox enforces the code's timeout itself.
		asynq.Timeout(time.Duration(ex.TimeoutMS)*time.Millisecond+10*time.Minute),
	)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("enqueue execution %s: %w", ex.ID, err)
	}
	return nil
}

// RetryDelay is the asynq retry delay: short for executions, since a user waits;
// from 10 s doubling to 10 min for webhooks, so delivery is tried for over an hour.
func RetryDelay(n int, _ error, t *asynq.Task) time.Duration {
	if t != nil && t.Type() == TypeWebhook {
		return min(10*time.Second<<min(n, 10), 10*time.Minute)
	}
	return time.Duration(1<<min(n, 5)) * time.Second
}
