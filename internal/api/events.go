package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/codeinterp/codeinterp/jobs"
)

// keepAlive is how often an idle event stream sends a comment, so proxies keep it open.
const keepAlive = 15 * time.Second

// readBlock bounds one blocking read of the stream: a blocked read does not notice
// that its client went away, so it holds the client's stream slot (and a Redis
// connection) until it returns.
const readBlock = 5 * time.Second

// events is GET /v1/executions/{id}/events: server-sent events (status, stdout,
// stderr, result, file) while the execution runs, then done with the execution
// object. Event ids are positions in the stream: reconnecting with Last-Event-ID
// resumes right after the last event received. An execution that already ended
// answers with what is still streamed (kept an hour) and done.
func (s *Server) events(c echo.Context) error {
	ctx, tenant, id := c.Request().Context(), tenantOf(c), c.Param("id")
	stream, err := s.svc.OpenEvents(ctx, tenant, id)
	if err != nil {
		return err
	}
	after := c.Request().Header.Get("Last-Event-ID")
	if after == "" {
		after = "0"
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/event-stream")
	w.Header().Set(echo.HeaderCacheControl, "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	w.Flush()
	rc := http.NewResponseController(w.Writer)
	lastWrite := time.Now()
	for {
		// A client that stops reading is let go once a write has waited this long.
		_ = rc.SetWriteDeadline(time.Now().Add(2 * keepAlive))
		evs, err := stream.Read(ctx, after, readBlock)
		if err != nil {
			return nil // the client went away, or Redis did: the client reconnects
		}
		for _, ev := range evs {
			after = ev.ID
			data := ev.Data
			if ev.Type == jobs.EventDone {
				if data, err = s.doneData(c, tenant, id); err != nil {
					return nil
				}
			}
			fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", ev.ID, ev.Type, data)
			lastWrite = time.Now()
			if ev.Type == jobs.EventDone {
				w.Flush()
				return nil
			}
		}
		if len(evs) == 0 {
			// Nothing new: an execution whose stream expired ends here; others wait on.
			ex, err := s.svc.Get(ctx, tenant, id, 0)
			if err != nil {
				return nil
			}
			if ex.Status.Terminal() {
				data, err := s.doneData(c, tenant, id)
				if err != nil {
					return nil
				}
				fmt.Fprintf(w, "event: done\ndata: %s\n\n", data)
				w.Flush()
				return nil
			}
			if time.Since(lastWrite) >= keepAlive {
				fmt.Fprint(w, ": keep-alive\n\n")
				lastWrite = time.Now()
			}
		}
		w.Flush()
	}
}

func (s *Server) doneData(c echo.Context, tenant, id string) ([]byte, error) {
	ex, err := s.svc.Get(c.Request().Context(), tenant, id, 0)
	if err != nil {
		return nil, err
	}
	v, err := s.svc.Render(c.Request().Context(), ex)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}
