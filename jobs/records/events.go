package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
)

// eventTTL is how long an execution's event stream is kept after its last event.
const eventTTL = time.Hour

// maxStreamEntries bounds a stream: past it, the oldest entries are trimmed (the whole
// stdout is kept as an artifact anyway).
const maxStreamEntries = 10000

// Publish appends an event to an execution's stream.
func (s *Store) Publish(ctx context.Context, id string, typ jobs.EventType, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	key := s.eventsKey(id)
	pipe := s.rdb.Pipeline()
	pipe.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: maxStreamEntries, Approx: true, Values: []any{"type", string(typ), "data", b}})
	pipe.Expire(ctx, key, eventTTL)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("publish %s event of %s: %w", typ, id, err)
	}
	return nil
}

// Events returns the events of execution id after the entry after ("0" from the
// start), waiting up to block for the first one. It returns none when block passes.
// A blocking read holds a connection of the store's Blocking pool, so open streams
// cannot starve other requests of connections.
func (s *Store) Events(ctx context.Context, id, after string, block time.Duration) ([]jobs.Event, error) {
	res, err := s.blocking.XRead(ctx, &redis.XReadArgs{Streams: []string{s.eventsKey(id), after}, Count: 500, Block: block}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", id, err)
	}
	var out []jobs.Event
	for _, st := range res {
		for _, m := range st.Messages {
			typ, _ := m.Values["type"].(string)
			data, _ := m.Values["data"].(string)
			out = append(out, jobs.Event{ID: m.ID, Type: jobs.EventType(typ), Data: json.RawMessage(data)})
		}
	}
	return out, nil
}
