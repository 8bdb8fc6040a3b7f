package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Event is a server-sent event of a running execution.
type Event struct {
	ID   string
	Type string          // status, stdout, stderr, result, file, done
	Data json.RawMessage // for stdout/stderr: {"text": …}; for done: the execution
}

// Text returns the text of a stdout or stderr event.
func (e Event) Text() string {
	var d struct{ Text string }
	_ = json.Unmarshal(e.Data, &d)
	return d.Text
}

// Stream calls fn with each event of the execution as it happens, reconnecting (with
// Last-Event-ID, so nothing is lost or repeated) if the connection drops, and returns
// the execution from the final done event.
func (c *Client) Stream(ctx context.Context, id string, fn func(Event) error) (*Execution, error) {
	last := ""
	for attempt := 0; ; attempt++ {
		ex, err := c.streamOnce(ctx, id, &last, fn)
		if ex != nil || err == nil {
			return ex, err
		}
		var apiErr *APIError
		if errors.As(err, &apiErr) || ctx.Err() != nil || attempt == 10 {
			return nil, err
		}
		select { // a dropped connection: resume shortly
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
}

func (c *Client) streamOnce(ctx context.Context, id string, last *string, fn func(Event) error) (*Execution, error) {
	h := http.Header{"Accept": {"text/event-stream"}}
	if *last != "" {
		h.Set("Last-Event-ID", *last)
	}
	resp, err := c.do(ctx, http.MethodGet, "/v1/executions/"+url.PathEscape(id)+"/events", h, nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var ev Event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Type == "" {
				continue
			}
			if ev.ID != "" {
				*last = ev.ID
			}
			if err := fn(ev); err != nil {
				return nil, err
			}
			if ev.Type == "done" {
				var ex Execution
				if err := json.Unmarshal(ev.Data, &ex); err != nil {
					return nil, fmt.Errorf("decode done event: %w", err)
				}
				return &ex, nil
			}
			ev = Event{}
		case strings.HasPrefix(line, "id: "):
			ev.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.Type = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.Data = json.RawMessage(line[6:])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, io.ErrUnexpectedEOF
}
