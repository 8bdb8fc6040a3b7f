package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/codeinterp/codeinterp/client"
)

// Accepted is an execution the API accepted (answered 2xx to its submission).
type Accepted struct {
	ID     string
	Tenant string
	Thread string // empty for a one-off
	Index  int    // its place in its thread's order
	At     time.Time
}

// load submits the suite's executions: each thread's in order, paced over a duration,
// and a stream of one-offs, retrying every submission the service could not take
// until it is accepted (a 2xx) or the run ends. Retries carry the first attempt's
// idempotency key, so an attempt whose answer was lost is never accepted twice.
type load struct {
	clients map[string]*client.Client // by tenant
	run     string                    // makes idempotency keys unique to this run

	mu       sync.Mutex
	accepted []Accepted
	refused  map[string]int // submission attempts not accepted, by cause
	gaveUp   []string       // submissions never accepted
}

func newLoad(clients map[string]*client.Client) *load {
	return &load{clients: clients, run: fmt.Sprintf("%x", time.Now().UnixNano()), refused: map[string]int{}}
}

// threadCode is execution i of a thread: it logs its start and end in the thread's
// workspace (the record the order, overlap and re-run checks read), sleeps a little —
// every tenth a second and a half, so kills land mid-run — and every fifth writes an
// output file, so the worker stores to MinIO.
func threadCode(i int) string {
	sleep := 0.05 + 0.2*rand.Float64()
	if i%10 == 9 {
		sleep = 1.5
	}
	out := ""
	if i%5 == 4 {
		out = fmt.Sprintf("import os\nos.makedirs('outputs', exist_ok=True)\nopen('outputs/o%d.txt', 'w').write('%d')\n", i, i)
	}
	return fmt.Sprintf("%simport os, time\n"+
		"with open('log.txt', 'a') as f:\n"+
		"    f.write('start %d %%d\\n' %% os.getpid()); f.flush()\n"+
		"    time.sleep(%.3f)\n"+
		"    f.write('end %d\\n')\n", out, i, sleep, i)
}

// threads runs one submitter per thread until each submitted its executions, each
// thread's evenly over the duration, from a random phase.
func (l *load) threads(ctx context.Context, n, each int, over time.Duration) {
	var wg sync.WaitGroup
	start := time.Now()
	step := over / time.Duration(max(each, 1))
	for th := range n {
		tenant := l.tenant(th)
		thread := fmt.Sprintf("f%02d", th)
		phase := time.Duration(rand.Int64N(int64(step) + 1))
		wg.Go(func() {
			for i := range each {
				if !sleepUntil(ctx, start.Add(phase+time.Duration(i)*step)) {
					return
				}
				req := client.RunRequest{ThreadID: thread, Code: threadCode(i),
					IdempotencyKey: fmt.Sprintf("%s-%s-%d", l.run, thread, i)}
				l.submit(ctx, tenant, req, i)
			}
		})
	}
	wg.Wait()
}

// oneOffs submits a one-off every interval until stop is closed, and returns once
// each is accepted (or ctx ends).
func (l *load) oneOffs(ctx context.Context, stop <-chan struct{}, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		req := client.RunRequest{Code: fmt.Sprintf("print(sum(range(%d)))", n),
			IdempotencyKey: fmt.Sprintf("%s-oneoff-%d", l.run, n)}
		wg.Go(func() { l.submit(ctx, l.tenant(n), req, n) })
	}
}

func (l *load) tenant(n int) string {
	if n%2 == 0 {
		return "alpha"
	}
	return "beta"
}

// submit submits req until it is accepted or ctx ends, counting each refusal.
func (l *load) submit(ctx context.Context, tenant string, req client.RunRequest, index int) (Accepted, bool) {
	backoff := 100 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, 20*time.Second)
		ex, err := l.clients[tenant].Submit(actx, req)
		cancel()
		if err == nil {
			a := Accepted{ID: ex.ID, Tenant: tenant, Thread: req.ThreadID, Index: index, At: time.Now()}
			l.mu.Lock()
			l.accepted = append(l.accepted, a)
			l.mu.Unlock()
			return a, true
		}
		cause := refusal(err)
		if ctx.Err() == nil {
			l.mu.Lock()
			l.refused[cause]++
			l.mu.Unlock()
		}
		if cause == "rejected" || !sleepUntil(ctx, time.Now().Add(backoff)) {
			l.mu.Lock()
			l.gaveUp = append(l.gaveUp, fmt.Sprintf("%s %s #%d: %v", tenant, req.ThreadID, index, err))
			l.mu.Unlock()
			return Accepted{}, false
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// refusal names why a submission was not accepted: the connection failed (the API
// was down or restarting), or the API answered an error status.
func refusal(err error) string {
	var apiErr *client.APIError
	var netErr net.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Status >= 500:
		return fmt.Sprintf("HTTP %d", apiErr.Status)
	case errors.As(err, &apiErr) && apiErr.Status == 429:
		return "HTTP 429"
	case errors.As(err, &apiErr):
		return "rejected" // a 4xx is the suite's bug: not retried
	case errors.As(err, &netErr) && netErr.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	default:
		return "connection"
	}
}

func (l *load) snapshot() (accepted []Accepted, refused map[string]int, gaveUp []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	refused = map[string]int{}
	for k, v := range l.refused {
		refused[k] = v
	}
	return append([]Accepted(nil), l.accepted...), refused, append([]string(nil), l.gaveUp...)
}

// sleepUntil waits until t or until ctx ends; it reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
