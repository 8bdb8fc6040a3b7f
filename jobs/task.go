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
	TypeRun   = "execution:run" // run a one-off execution
	TypeDrain = "thread:drain"  // claim a thread that has work and no live owner
)

// Queues. A thread's warm path does not use them: the API wakes the thread's owner
// directly. They carry one-off executions and threads looking for an owner.
const (
	QueueExecutions = "executions"
	QueueThreads    = "threads"
)

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
		asynq.Queue(QueueExecutions),
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

type drainPayload struct {
	Thread string `json:"thread"` // thread key
}

// EnqueueDrain asks any worker to claim thread tk and run what it has queued.
// Duplicates are harmless: a drain for a thread someone owns wakes the owner.
func (e *Enqueuer) EnqueueDrain(ctx context.Context, tk string) error {
	payload, _ := json.Marshal(drainPayload{Thread: tk})
	_, err := e.cli.EnqueueContext(ctx, asynq.NewTask(TypeDrain, payload),
		asynq.Queue(QueueThreads), asynq.MaxRetry(MaxRetry), asynq.Timeout(time.Minute))
	if err != nil {
		return fmt.Errorf("enqueue drain of thread %s: %w", tk, err)
	}
	return nil
}

// RetryDelay is the asynq retry delay for execution tasks: short, since a user waits.
func RetryDelay(n int, _ error, _ *asynq.Task) time.Duration {
	return time.Duration(1<<min(n, 5)) * time.Second
}
