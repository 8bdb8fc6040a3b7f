package jobs

import "encoding/json"

// Every execution has an event stream, written by the worker while it runs and by
// every status change, and read by any API process for GET /v1/executions/{id}/events.
// Stream entry ids are the SSE event ids, so a client resumes with Last-Event-ID
// without loss. jobs/records keeps the streams.

// EventType says what an [Event] carries.
type EventType string

// Event types.
const (
	EventStatus EventType = "status"
	EventStdout EventType = "stdout"
	EventStderr EventType = "stderr"
	EventResult EventType = "result"
	EventFile   EventType = "file"
	EventDone   EventType = "done"
	// EventTruncated comes once, when an execution's stdout, stderr and results have
	// used up the bytes its stream may carry; no stdout, stderr or result event
	// follows it (status, file and done events still do).
	EventTruncated EventType = "truncated"
)

// Event is one entry of an execution's event stream.
type Event struct {
	ID   string          // stream entry id
	Type EventType       // one of the Event* constants
	Data json.RawMessage // JSON
}
