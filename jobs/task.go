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
	TypeRun     = "execution:run"   // run a one-off execution
	TypeWebhook = "webhook:deliver" // deliver an execution's webhook (jobs/webhook)
)

// QueueTasks is the asynq queue of one-off executions. Threads do not use asynq: see
// jobs/threadq.
const QueueTasks = "tasks"

// QueueWebhooks is the asynq queue of webhook deliveries, served by workers of its own
// so receivers that are slow or never answer cannot hold the slots one-offs run in.
const QueueWebhooks = "webhooks"

// MaxRetry bounds how often a run whose sandbox could not be prepared is retried
// before it is failed with a SandboxError.
const MaxRetry = 3

// Payload is the payload of every task: the execution it is about.
type Payload struct {
	ID string `json:"id"`
}

// Encode returns the task payload.
func (p Payload) Encode() []byte {
	b, _ := json.Marshal(p)
	return b
}

// DecodePayload reads a task's payload.
func DecodePayload(t *asynq.Task) (Payload, error) {
	var p Payload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.ID == "" {
		return p, fmt.Errorf("bad %s payload %q: %w", t.Type(), t.Payload(), asynq.SkipRetry)
	}
	return p, nil
}

// Enqueuer puts one-off executions on the queue.
type Enqueuer struct {
	cli *asynq.Client
}

// NewEnqueuer returns an Enqueuer using cli.
func NewEnqueuer(cli *asynq.Client) *Enqueuer { return &Enqueuer{cli: cli} }

// Enqueue queues a run of ex. The task id is the execution id, so enqueuing the same
// execution twice queues it once.
func (e *Enqueuer) Enqueue(ctx context.Context, ex *Execution) error {
	_, err := e.cli.EnqueueContext(ctx, asynq.NewTask(TypeRun, Payload{ID: ex.ID}.Encode()),
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

// RunRetryDelay is the asynq retry delay of a one-off whose sandbox could not be
// prepared: short, since a user waits.
func RunRetryDelay(n int) time.Duration { return time.Duration(1<<min(n, 5)) * time.Second }
