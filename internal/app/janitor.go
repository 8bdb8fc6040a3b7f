package app

import (
	"context"
	"errors"

	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/internal/janitor"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// Janitor builds the janitor of the host whose sandboxes host lists.
func (a *App) Janitor(host sandbox.Host) *janitor.Janitor {
	cfg := a.Config
	id := "janitor-" + cfg.WorkerID
	if j := a.journal(id); j != nil {
		host = j.Host(host)
	}
	return janitor.New(janitor.Config{
		Records: a.Records, Threads: a.Threads, Sandboxes: host, Store: a.Store, Tasks: a.janitorTasks(),
		ID: id, IdlePause: cfg.IdlePause, IdleReap: cfg.IdleReap, StuckAfter: cfg.StuckAfter,
		Logger: a.Logger,
	})
}

// janitorTasks returns the janitor's view of the one-off task queue (asynq).
func (a *App) janitorTasks() janitor.Tasks {
	return &oneOffTasks{inspect: asynq.NewInspectorFromRedisClient(a.Redis), enqueue: jobs.NewEnqueuer(a.Tasks)}
}

// oneOffTasks is janitor.Tasks over asynq, where a one-off's task id is its execution
// id.
type oneOffTasks struct {
	inspect *asynq.Inspector
	enqueue *jobs.Enqueuer
}

// state returns the state of id's task, or 0 when asynq holds none.
func (t *oneOffTasks) state(id string) (asynq.TaskState, error) {
	info, err := t.inspect.GetTaskInfo(jobs.QueueTasks, id)
	if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return info.State, nil
}

func (t *oneOffTasks) Pending(_ context.Context, id string) (bool, error) {
	st, err := t.state(id)
	return st != 0 && st != asynq.TaskStateCompleted && st != asynq.TaskStateArchived, err
}

func (t *oneOffTasks) Requeue(ctx context.Context, ex *jobs.Execution) error {
	st, err := t.state(ex.ID)
	if err != nil {
		return err
	}
	if st == asynq.TaskStateCompleted || st == asynq.TaskStateArchived {
		// A finished task keeps its id: it must go for the new one to be queued.
		if err := t.inspect.DeleteTask(jobs.QueueTasks, ex.ID); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
			return err
		}
	}
	return t.enqueue.Enqueue(ctx, ex)
}
