package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Every execution has an event stream (a Redis Stream), written by the worker while it
// runs and by every status change, and read by any API process for
// GET /v1/executions/{id}/events. Stream entry ids are the SSE event ids, so a client
// resumes with Last-Event-ID without loss.

// eventTTL is how long an execution's event stream is kept after its last event.
const eventTTL = time.Hour

// maxStreamEntries bounds a stream: past it, the oldest entries are trimmed (the whole
// stdout is kept as an artifact anyway).
const maxStreamEntries = 10000

// Event types.
const (
	EventStatus = "status"
	EventStdout = "stdout"
	EventStderr = "stderr"
	EventResult = "result"
	EventFile   = "file"
	EventDone   = "done"
)

// Event is one entry of an execution's event stream.
type Event struct {
	ID   string          // stream entry id
	Type string          // one of the Event* constants
	Data json.RawMessage // JSON
}

func (r *Records) eventsKey(id string) string { return r.prefix + "ev:" + id }

// Publish appends an event to an execution's stream.
func (r *Records) Publish(ctx context.Context, id, typ string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	key := r.eventsKey(id)
	pipe := r.rdb.Pipeline()
	pipe.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: maxStreamEntries, Approx: true, Values: []any{"type", typ, "data", b}})
	pipe.Expire(ctx, key, eventTTL)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("publish %s event of %s: %w", typ, id, err)
	}
	return nil
}

// Events returns the events of execution id after the entry after ("0" from the
// start), waiting up to block for the first one. It returns none when block passes.
func (r *Records) Events(ctx context.Context, id, after string, block time.Duration) ([]Event, error) {
	res, err := r.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{r.eventsKey(id), after}, Count: 500, Block: block}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", id, err)
	}
	var out []Event
	for _, s := range res {
		for _, m := range s.Messages {
			typ, _ := m.Values["type"].(string)
			data, _ := m.Values["data"].(string)
			out = append(out, Event{ID: m.ID, Type: typ, Data: json.RawMessage(data)})
		}
	}
	return out, nil
}
