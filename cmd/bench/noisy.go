package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codeinterp/codeinterp/client"
)

// The noisy-neighbour section: tenant B's warm-thread print(1) on a quiet stack, then
// again while tenant A floods the stack from many goroutines — big outputs, many rich
// results, event streams, uploads and new threads. The goal is B within 3× of
// quiet; the section prints the ratio and never fails on it. A is refused (429) past its
// quotas: that is counted and reported, not an error. Everything stops within the
// flood window, and A's leftover executions are canceled before the section returns.
const (
	floodFor    = 20 * time.Second // the whole flood, start to stop
	floodRamp   = 2 * time.Second  // B's samples in the first moments of the flood are not kept
	bRunTimeout = 15 * time.Second // one B execution under the flood
	aTimeoutMS  = 25000            // A's executions end on their own even if cleanup missed them
	sseStreams  = 50
	uploadBytes = 4 << 20
)

// aOutput prints ~10 MiB.
const aOutput = `line = "x" * 1023
for i in range(10240):
    print(line)`

// aRich displays 300 large values through the driver's display(): 100 KB strings, and
// every tenth a DataFrame (text/plain and text/html; pandas takes ~50 ms to render one,
// so they are kept few enough for a run to end within the flood).
const aRich = `import numpy as np, pandas as pd
df = pd.DataFrame(np.random.default_rng(0).random((60, 20)))
for i in range(300):
    display(df if i % 10 == 0 else str(i) * (100_000 // len(str(i))))`

// aLong runs ~30 s printing a tick every 50 ms: what A's event streams follow.
const aLong = `import time
for i in range(600):
    print("tick", i, flush=True)
    time.sleep(0.05)`

func noisy(b bench, t *table, url, noisyKey string, n int) error {
	ctx := context.Background()
	counts := &countingTransport{base: aTransport()}
	a := client.New(url, noisyKey, client.WithHTTPClient(&http.Client{Transport: counts}))
	if _, err := a.List(ctx, client.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("noisy neighbour: tenant A's key is refused (does the stack have CODEINTERP_API_KEYS=demo:demo-key,noisy:%s?): %w", noisyKey, err)
	}

	// B's warm thread: made, kept busy a moment (the warm pool refills meanwhile; an
	// idle wait would let the janitor pause it), then measured on a quiet stack.
	thread := fmt.Sprintf("quiet-b-%d", time.Now().UnixNano())
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		if _, _, err := runB(ctx, b, thread, time.Minute); err != nil {
			return fmt.Errorf("noisy neighbour: warm B's thread: %w", err)
		}
	}
	var quietCold int
	quiet, err := measure(n, func() (time.Duration, error) {
		ex, d, err := runB(ctx, b, thread, time.Minute)
		if err == nil && !warm(ex) {
			quietCold++
		}
		return d, err
	})
	if err != nil {
		return fmt.Errorf("noisy neighbour: B quiet: %w", err)
	}
	t.add("noisy neighbour: B warm-thread print(1) quiet", quiet, coldNote(quietCold))

	// The flood, and B measured throughout it.
	fmt.Fprintf(os.Stderr, "noisy neighbour: tenant A floods for %s…\n", floodFor)
	sent0, refused0 := counts.snapshot()
	f := &flood{a: a, ids: map[string]bool{}, stamp: time.Now().UnixNano()}
	fctx, stop := context.WithTimeout(ctx, floodFor)
	start := time.Now()
	done := f.start(fctx)
	ended := make(chan time.Duration, 1)
	go func() { done.Wait(); ended <- time.Since(start) }()

	var loaded sample
	var loadedCold, bFailed int
	var bErr error
	for fctx.Err() == nil {
		ex, d, err := runB(ctx, b, thread, bRunTimeout)
		switch {
		case err != nil:
			bFailed++
			bErr = cmpErr(bErr, err)
			sleep(fctx, 200*time.Millisecond)
		case time.Since(start)-d >= floodRamp:
			loaded = append(loaded, d)
			if !warm(ex) {
				loadedCold++
			}
		}
	}
	stop()
	floodTook := <-ended // every flood goroutine has ended
	sent, refused := counts.snapshot()

	note := ratioNote(quiet, loaded)
	if loadedCold > 0 {
		note += ", " + coldNote(loadedCold)
	}
	if bFailed > 0 {
		note += fmt.Sprintf(", %d failed or timed out (%s)", bFailed, bRunTimeout)
		fmt.Fprintln(os.Stderr, "noisy neighbour: B under the flood:", bErr)
	}
	t.add("noisy neighbour: B warm-thread print(1) while A floods", loaded, note)

	var byKind []string
	var totalSent, totalRefused int64
	for i, name := range categories {
		sent[i], refused[i] = sent[i]-sent0[i], refused[i]-refused0[i]
		totalSent, totalRefused = totalSent+sent[i], totalRefused+refused[i]
		if sent[i] > 0 {
			byKind = append(byKind, fmt.Sprintf("%s %d/%d", name, refused[i], sent[i]))
		}
	}
	t.row("noisy neighbour: A requests refused 429 / sent", fmt.Sprintf("%d / %d", totalRefused, totalSent),
		fmt.Sprintf("flood of %s: %s", floodTook.Round(100*time.Millisecond), strings.Join(byKind, ", ")))
	t.row("noisy neighbour: A flood that got through", "", f.summary())
	if failed := f.failures(); failed != "" {
		t.row("noisy neighbour: A errors other than 429", "", failed)
	}

	canceled, left := f.cleanup(ctx)
	value := fmt.Sprint(canceled)
	if left > 0 {
		value += fmt.Sprintf(" (%d still not ended after 15 s)", left)
	}
	t.row("noisy neighbour: A executions canceled after the flood", value, "")
	return nil
}

// runB runs print(1) on B's thread within limit and returns the client's wall time
// (POST + GET ?wait). A run over the limit is canceled.
func runB(ctx context.Context, b bench, thread string, limit time.Duration) (*client.Execution, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	sub, err := b.c.Submit(ctx, client.RunRequest{ThreadID: thread, Code: "print(1)"})
	if err != nil {
		return nil, time.Since(start), err
	}
	ex, err := b.c.Wait(ctx, sub.ID)
	took := time.Since(start)
	if err != nil {
		if ctx.Err() != nil { // over the limit: it must not run on after the section
			cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer ccancel()
			_, _ = b.c.Cancel(cctx, sub.ID)
		}
		return nil, took, err
	}
	if ex.Status != "succeeded" || strings.TrimSpace(ex.Stdout) != "1" {
		return ex, took, fmt.Errorf("execution %s %s: stdout %q, error %+v", ex.ID, ex.Status, ex.Stdout, ex.Error)
	}
	return ex, took, nil
}

// warm reports whether an execution ran in its thread's running sandbox.
func warm(ex *client.Execution) bool { return ex.Sandbox.Reused && !ex.Sandbox.Resumed }

func coldNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d not warm (resumed or new sandbox)", n)
}

func ratioNote(quiet, loaded sample) string {
	if len(quiet) == 0 || len(loaded) == 0 {
		return "no sample to compare"
	}
	r := func(p int) float64 { return float64(loaded.pct(p)) / float64(max(quiet.pct(p), 1)) }
	return fmt.Sprintf("%.1f× quiet p50, %.1f× p95 (goal ≤ 3×)", r(50), r(95))
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// row adds a row with a value in the p50 column and a note.
func (t *table) row(name, value, note string) {
	t.rows = append(t.rows, []string{name, value, "", "", note})
}

// flood is tenant A's load. Each kind runs in goroutines bounded in count, all ending
// when the flood's context does.
type flood struct {
	a     *client.Client
	stamp int64

	mu  sync.Mutex
	ids map[string]bool // A's executions not yet seen ended

	kinds map[string]*kindStats // fixed before the flood starts

	streamsOpen, streamsPeak, streamEvents atomic.Int64
}

type kindStats struct {
	ok, refused, failed atomic.Int64
	mu                  sync.Mutex
	firstErr            error
}

var floodKinds = []string{"output 10 MiB", "rich 300 values", "new thread", "upload with length", "upload chunked", "SSE stream"}

func (f *flood) start(ctx context.Context) *sync.WaitGroup {
	f.kinds = map[string]*kindStats{}
	for _, k := range floodKinds {
		f.kinds[k] = &kindStats{}
	}
	var wg sync.WaitGroup
	execLoop := func(kind string, workers, each int, req func(g, i int) client.RunRequest) {
		for g := range workers {
			wg.Go(func() {
				for i := 0; i < each && ctx.Err() == nil; i++ {
					ex, err := f.exec(ctx, req(g, i))
					if err == nil && ex.Status != "succeeded" {
						err = fmt.Errorf("execution %s %s: %+v", ex.ID, ex.Status, ex.Error)
					}
					f.count(ctx, kind, err)
				}
			})
		}
	}
	execLoop("output 10 MiB", 2, 20, func(g, _ int) client.RunRequest {
		return client.RunRequest{ThreadID: fmt.Sprintf("noisy-out-%d-%d", f.stamp, g), Code: aOutput, TimeoutMS: aTimeoutMS}
	})
	execLoop("rich 300 values", 1, 20, func(g, _ int) client.RunRequest {
		return client.RunRequest{ThreadID: fmt.Sprintf("noisy-rich-%d-%d", f.stamp, g), Code: aRich, TimeoutMS: aTimeoutMS}
	})
	execLoop("new thread", 3, 20, func(g, i int) client.RunRequest {
		return client.RunRequest{ThreadID: fmt.Sprintf("noisy-new-%d-%d-%d", f.stamp, g, i), Code: "print(1)", TimeoutMS: aTimeoutMS}
	})

	payload := make([]byte, uploadBytes)
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(payload)
	for _, chunked := range []bool{false, true} {
		kind := "upload with length"
		if chunked {
			kind = "upload chunked"
		}
		wg.Go(func() {
			for i := 0; i < 25 && ctx.Err() == nil; i++ {
				var body io.Reader = bytes.NewReader(payload) // the client sends its length
				if chunked {
					body = struct{ io.Reader }{body} // hides the length: chunked encoding
				}
				_, err := f.a.Upload(ctx, fmt.Sprintf("noisy-%d.bin", i), body)
				f.count(ctx, kind, err)
			}
		})
	}

	// Event streams: 50 at once, on two long one-offs (run by the one-off workers, so
	// they do not take thread slots away from the other kinds).
	var long []string
	for range 2 {
		ex, err := f.submit(ctx, client.RunRequest{Code: aLong, TimeoutMS: aTimeoutMS})
		if err != nil {
			f.count(ctx, "SSE stream", fmt.Errorf("submit the long execution: %w", err))
			continue
		}
		long = append(long, ex.ID)
	}
	for i := range sseStreams {
		if len(long) == 0 {
			break
		}
		wg.Go(func() { f.stream(ctx, long[i%len(long)]) })
	}
	return &wg
}

// stream follows one execution's events until the flood ends, retrying when refused.
func (f *flood) stream(ctx context.Context, id string) {
	for attempt := 0; attempt < 30 && ctx.Err() == nil; attempt++ {
		opened := false
		_, err := f.a.Stream(ctx, id, func(client.Event) error {
			if !opened {
				opened = true
				now := f.streamsOpen.Add(1)
				for peak := f.streamsPeak.Load(); now > peak && !f.streamsPeak.CompareAndSwap(peak, now); peak = f.streamsPeak.Load() {
				}
			}
			f.streamEvents.Add(1)
			return nil
		})
		if opened {
			f.streamsOpen.Add(-1)
		}
		f.count(ctx, "SSE stream", err)
		if !refused(err) {
			return // the execution ended, the flood did, or a real error (counted)
		}
		sleep(ctx, time.Second)
	}
}

// exec submits and waits, like client.Run, but survives refused long-polls.
func (f *flood) exec(ctx context.Context, req client.RunRequest) (*client.Execution, error) {
	ex, err := f.submit(ctx, req)
	if err != nil {
		return nil, err
	}
	wait := 5 * time.Second
	for {
		got, err := f.a.Get(ctx, ex.ID, wait)
		switch {
		case err == nil && got.Done():
			f.mu.Lock()
			delete(f.ids, ex.ID)
			f.mu.Unlock()
			return got, nil
		case err == nil && wait == 0:
			sleep(ctx, 300*time.Millisecond)
			wait = 5 * time.Second
		case err == nil:
		case refused(err): // past the long-poll quota: poll without holding a connection
			wait = 0
			sleep(ctx, 300*time.Millisecond)
		default:
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// submit queues an execution and remembers it for cleanup. The request is not cut
// short by the flood's end, so nothing accepted goes untracked; a refused one is
// retried after a pause while the flood lasts.
func (f *flood) submit(ctx context.Context, req client.RunRequest) (*client.Execution, error) {
	for {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		ex, err := f.a.Submit(sctx, req)
		cancel()
		if err == nil {
			f.mu.Lock()
			f.ids[ex.ID] = true
			f.mu.Unlock()
			return ex, nil
		}
		if !refused(err) {
			return nil, err
		}
		if !sleep(ctx, 500*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
}

// count records the outcome of one flood request of a kind ("" counts only refusals,
// which the transport counts per request anyway). The flood's own end is no error.
func (f *flood) count(ctx context.Context, kind string, err error) {
	s := f.kinds[kind]
	if s == nil {
		return
	}
	switch {
	case err == nil:
		s.ok.Add(1)
	case refused(err):
		s.refused.Add(1)
	case ctx.Err() != nil:
	default:
		s.failed.Add(1)
		s.mu.Lock()
		if s.firstErr == nil {
			s.firstErr = err
		}
		s.mu.Unlock()
	}
}

func (f *flood) summary() string {
	var parts []string
	for _, k := range floodKinds {
		s := f.kinds[k]
		if k == "SSE stream" {
			parts = append(parts, fmt.Sprintf("SSE: peak %d of %d open, %d events, %d refused",
				f.streamsPeak.Load(), sseStreams, f.streamEvents.Load(), s.refused.Load()))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", k, s.ok.Load()))
	}
	return strings.Join(parts, ", ")
}

func (f *flood) failures() string {
	var parts []string
	for _, k := range floodKinds {
		s := f.kinds[k]
		if n := s.failed.Load(); n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
			fmt.Fprintf(os.Stderr, "noisy neighbour: A %s: %v\n", k, s.firstErr)
		}
	}
	return strings.Join(parts, ", ")
}

// cleanup cancels every A execution not known to have ended — those the flood
// submitted and any the API still lists queued or running — and waits up to 15 s for
// them to end. It returns how many it canceled and how many had not ended.
func (f *flood) cleanup(ctx context.Context) (canceled, left int) {
	ids := map[string]bool{}
	f.mu.Lock()
	for id := range f.ids {
		ids[id] = true
	}
	f.mu.Unlock()
	for _, id := range f.pending(ctx) {
		ids[id] = true
	}
	work := make(chan string)
	var n atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for id := range work {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				ex, err := f.a.Cancel(cctx, id)
				cancel()
				if err == nil && ex.Status == "canceled" {
					n.Add(1)
				} else if err != nil && !errors.Is(err, client.ErrConflict) && !errors.Is(err, client.ErrNotFound) {
					fmt.Fprintln(os.Stderr, "noisy neighbour: cancel A's", id+":", err)
				}
			}
		})
	}
	for id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for {
		left = len(f.pending(ctx))
		if left == 0 || time.Now().After(deadline) {
			return int(n.Load()), left
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// pending lists A's executions queued or running (up to a few pages of each).
func (f *flood) pending(ctx context.Context) []string {
	var ids []string
	for _, status := range []string{"queued", "running"} {
		cursor := ""
		for range 5 {
			lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			p, err := f.a.List(lctx, client.ListOptions{Status: status, Limit: 100, Cursor: cursor})
			cancel()
			if err != nil {
				fmt.Fprintln(os.Stderr, "noisy neighbour: list A's", status, "executions:", err)
				break
			}
			for _, ex := range p.Items {
				ids = append(ids, ex.ID)
			}
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
	}
	return ids
}

func refused(err error) bool {
	var apiErr *client.APIError
	return errors.As(err, &apiErr) && apiErr.Status == http.StatusTooManyRequests
}

// sleep waits d unless ctx ends first; it reports whether the wait completed.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// A's own connection pool, so its connections are never B's.
func aTransport() http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 100
	return tr
}

// countingTransport counts A's requests and their 429 answers, per kind of request.
type countingTransport struct {
	base          http.RoundTripper
	sent, refused [len(categories)]atomic.Int64
}

var categories = [...]string{"submit", "wait", "events", "upload", "cancel", "other"}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	i := category(r)
	c.sent[i].Add(1)
	resp, err := c.base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		c.refused[i].Add(1)
	}
	return resp, err
}

func (c *countingTransport) snapshot() (sent, refused [len(categories)]int64) {
	for i := range categories {
		sent[i], refused[i] = c.sent[i].Load(), c.refused[i].Load()
	}
	return sent, refused
}

func category(r *http.Request) int {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && p == "/v1/executions":
		return 0
	case r.Method == http.MethodGet && strings.HasSuffix(p, "/events"):
		return 2
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/v1/executions/"):
		return 1
	case r.Method == http.MethodPost && p == "/v1/files":
		return 3
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/cancel"):
		return 4
	}
	return 5
}
