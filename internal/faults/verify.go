package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/codeinterp/codeinterp/client"
)

// Final is how an accepted execution stood when the suite stopped waiting.
type Final struct {
	Accepted
	Status     string // "" when the API no longer knows it (404)
	ErrorName  string
	ErrorValue string
	Started    bool
	Err        string // the last error asking for it, if it could not be read
}

// Done reports whether the execution is terminal.
func (f Final) Done() bool {
	switch f.Status {
	case "succeeded", "failed", "timed_out", "canceled":
		return true
	}
	return false
}

// awaitAll polls every accepted execution until all are terminal, gone (404) or the
// deadline passes, a few at a time.
func awaitAll(ctx context.Context, clients map[string]*client.Client, accepted []Accepted, within time.Duration) []Final {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	finals := make([]Final, len(accepted))
	pending := make([]int, len(accepted))
	for i, a := range accepted {
		finals[i].Accepted = a
		pending[i] = i
	}
	for len(pending) > 0 {
		var mu sync.Mutex
		var still []int
		work := make(chan int)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for i := range work {
					f := &finals[i]
					gctx, gcancel := context.WithTimeout(ctx, 10*time.Second)
					ex, err := clients[f.Tenant].Get(gctx, f.ID, 0)
					gcancel()
					switch {
					case errors.Is(err, client.ErrNotFound):
						f.Status, f.Err = "", "404: the API no longer knows it"
					case err != nil:
						f.Err = err.Error()
					default:
						f.Status, f.Started, f.Err = ex.Status, ex.StartedAt != nil, ""
						if ex.Error != nil {
							f.ErrorName, f.ErrorValue = ex.Error.Name, ex.Error.Value
						}
					}
					if !f.Done() && f.Status != "" || err != nil && !errors.Is(err, client.ErrNotFound) {
						mu.Lock()
						still = append(still, i)
						mu.Unlock()
					}
				}
			})
		}
		for _, i := range pending {
			work <- i
		}
		close(work)
		wg.Wait()
		pending = still
		if len(pending) == 0 || !sleepUntil(ctx, time.Now().Add(2*time.Second)) {
			break
		}
	}
	return finals
}

// threadLog reads a thread's log.txt through the API, retrying a while: the read is
// an item of the thread, run by its owner like an execution.
func threadLog(ctx context.Context, c *client.Client, thread string) (string, error) {
	var err error
	for range 10 {
		var b strings.Builder
		gctx, cancel := context.WithTimeout(ctx, time.Minute)
		err = c.GetFile(gctx, thread, "log.txt", &b)
		cancel()
		if err == nil {
			return b.String(), nil
		}
		if !sleepUntil(ctx, time.Now().Add(2*time.Second)) {
			break
		}
	}
	return "", fmt.Errorf("read log.txt of thread %s: %w", thread, err)
}
