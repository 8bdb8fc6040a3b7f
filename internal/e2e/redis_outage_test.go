package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/threadq"
)

// The API serves while Redis is down or loading its data, and everything resumes by
// itself when Redis is back. Before Redis ever answered: /healthz 200, /readyz 503
// saying why, submissions and reads 503 with Retry-After and a JSON error; a worker
// started meanwhile serves as soon as Redis answers. After a crash and a restart with
// a loading phase: what was accepted is still there and the thread's warm state too,
// the worker's loops are back, and so are the subscriptions of the API (a long-poll
// ends when its execution does) and of the worker (a cancel reaches a running run).
func TestRedisOutage(t *testing.T) {
	t.Parallel()
	// Every write is fsynced before it is acknowledged, so a crash loses nothing
	// accepted. key-load-delay (a Redis debug setting its own tests use) stretches
	// loading to half a millisecond a key, so the test sees the LOADING phase.
	own := testenv.NewOwnRedis(t, "--appendfsync", "always", "--key-load-delay", "500")
	s := newStack(t, stackOptions{redisURL: "redis://" + own.Addr + "/0"})
	x41 := map[string]any{"thread_id": "outage", "code": "x = 41"}

	// Redis never answered yet: the API and the worker started anyway.
	s.wantReadiness(t, http.StatusServiceUnavailable, "redis does not answer")
	wantRefused(t, "a submission while Redis is down", s.do(t, "POST", "/v1/executions", x41), http.StatusServiceUnavailable, "unavailable")
	wantRefused(t, "a read while Redis is down", s.do(t, "GET", "/v1/executions/"+jobs.NewID()+"?wait=1s", nil),
		http.StatusServiceUnavailable, "unavailable")

	own.Start(t)
	first := s.submitRetrying(t, x41, "first")
	if ex := s.wait(t, first); ex.Status != "succeeded" {
		t.Fatalf("the first thread execution: %+v", ex)
	}
	if ex := s.wait(t, s.submitRetrying(t, map[string]any{"code": "print('one-off')"}, "one-off")); ex.Status != "succeeded" || ex.Stdout != "one-off\n" {
		t.Fatalf("a one-off: %+v", ex)
	}
	s.wantReadiness(t, http.StatusOK, "")

	// Enough data for the restart to load for about ten seconds.
	rdb := redis.NewClient(&redis.Options{Addr: own.Addr})
	defer rdb.Close()
	if err := rdb.Eval(context.Background(), "for i = 1, 20000 do redis.call('SET', 'filler:' .. i, i) end return 1", nil).Err(); err != nil {
		t.Fatal(err)
	}

	own.Kill(t)
	for i := range 3 { // the first of them meets the pool's broken connections
		wantRefused(t, fmt.Sprintf("a submission after the crash (%d)", i), s.do(t, "POST", "/v1/executions", x41),
			http.StatusServiceUnavailable, "unavailable")
	}
	own.Start(t)
	eventually(t, time.Minute, "Redis loading its data answers 503 saying so", func() bool {
		a := s.do(t, "POST", "/v1/executions", x41)
		if a.status == http.StatusAccepted {
			t.Fatalf("accepted before Redis loaded its data: %s", a.body)
		}
		wantRefused(t, "a submission while Redis restarts", a, http.StatusServiceUnavailable, "unavailable")
		return strings.Contains(string(a.body), "loading its data")
	})
	wantRefused(t, "a read while Redis loads", s.do(t, "GET", "/v1/executions/"+first, nil), http.StatusServiceUnavailable, "unavailable")
	if ready := s.readiness(t); ready.status != http.StatusServiceUnavailable || !strings.Contains(ready.checks["redis"], "loading its data") {
		t.Fatalf("readiness while Redis loads: %d %v", ready.status, ready.checks)
	}

	// No worker is buried when Redis comes back, though every heartbeat is stale
	// then: a worker buries others only a heartbeat TTL after its own heartbeats get
	// through again. A ghost worker, last heard of an hour ago and registered as soon
	// as Redis takes writes, shows when the worker buries again.
	ctx := context.Background()
	ghost := threadq.New(rdb, threadq.Config{Prefix: "ci:", Now: func() time.Time { return time.Now().Add(-time.Hour) }})
	eventually(t, time.Minute, "Redis takes writes after loading", func() bool { return ghost.Beat(ctx, "ghost", false) == nil })
	back := timeOf(t, "the worker's heartbeats get through", func() bool {
		alive, err := s.threads.Alive(ctx)
		return err == nil && slices.Contains(alive, s.workers[0].id)
	})
	buried := timeOf(t, "the ghost is buried", func() bool {
		dead, err := s.threads.Dead(ctx)
		return err == nil && !slices.Contains(dead, "ghost")
	})
	if d := buried.Sub(back); d < heartbeatTTL-250*time.Millisecond {
		t.Fatalf("the worker buried others %s after its heartbeats got through again; want a heartbeat TTL (%s)", d, heartbeatTTL)
	}

	// Back: the thread goes on in its warm sandbox, on the worker that held it.
	x42 := s.wait(t, s.submitRetrying(t, map[string]any{"thread_id": "outage", "code": "print(x + 1)"}, "after"))
	if x42.Status != "succeeded" || x42.Stdout != "42\n" {
		t.Fatalf("the thread after the restart: %+v", x42)
	}
	var ex execution
	if code := s.call(t, "GET", "/v1/executions/"+first, nil, &ex); code != http.StatusOK || ex.Status != "succeeded" {
		t.Fatalf("the execution accepted before the crash: %d %+v", code, ex)
	}
	s.wantReadiness(t, http.StatusOK, "")

	// The worker's cancel subscription is back: a cancel interrupts a run that would
	// last minutes; the API's is too: the long-poll ends when the run does.
	long := idOf(t, s.do(t, "POST", "/v1/executions", map[string]any{"thread_id": "outage", "code": "import time\ntime.sleep(600)"}))
	eventually(t, time.Minute, "the long run starts", func() bool {
		var ex execution
		s.call(t, "GET", "/v1/executions/"+long, nil, &ex)
		return ex.Status == "running"
	})
	if a := s.do(t, "POST", "/v1/executions/"+long+"/cancel", nil); a.status != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", a.status, a.body)
	}
	start := time.Now()
	code := s.call(t, "GET", "/v1/executions/"+long+"?wait=60s", nil, &ex)
	if code != http.StatusOK || ex.Status != "canceled" || time.Since(start) > 50*time.Second {
		t.Fatalf("long-poll of a canceled run: %d %s after %s", code, ex.Status, time.Since(start))
	}
}

// do sends a JSON request as tenant acme through the client that checks answers
// against openapi.json.
func (s *stack) do(t *testing.T, method, path string, body any, header ...string) answer {
	t.Helper()
	req := s.newRequest("key-a", method, path, nil)
	if body != nil {
		req = s.newRequest("key-a", method, path, jsonBody(body))
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// submitRetrying submits req like a client facing a service that is coming back: it
// retries on 503 with the same Idempotency-Key until the submission is accepted, and
// returns the execution's id.
func (s *stack) submitRetrying(t *testing.T, req map[string]any, key string) string {
	t.Helper()
	var id string
	eventually(t, 2*time.Minute, "a submission accepted", func() bool {
		a := s.do(t, "POST", "/v1/executions", req, "Idempotency-Key", key)
		if a.status == http.StatusAccepted {
			id = idOf(t, a)
			return true
		}
		wantRefused(t, "a submission while the service comes back", a, http.StatusServiceUnavailable, "unavailable")
		return false
	})
	return id
}

type readiness struct {
	status int
	checks map[string]string
}

func (s *stack) readiness(t *testing.T) readiness {
	t.Helper()
	a := s.do(t, "GET", "/readyz", nil)
	var body struct{ Checks map[string]string }
	if err := json.Unmarshal(a.body, &body); err != nil {
		t.Fatalf("/readyz: %d %s", a.status, a.body)
	}
	return readiness{status: a.status, checks: body.Checks}
}

// wantReadiness waits until /readyz answers status, with Redis's check saying
// reason if it is not empty, while /healthz answers 200 throughout.
func (s *stack) wantReadiness(t *testing.T, status int, reason string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if a := s.do(t, "GET", "/healthz", nil); a.status != http.StatusOK {
			t.Fatalf("/healthz: %d %s", a.status, a.body)
		}
		r := s.readiness(t)
		if r.status == status && strings.Contains(r.checks["redis"], reason) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %v; want %d with redis %q", r.status, r.checks, status, reason)
		}
		<-tick.C
	}
}

// timeOf polls cond until it holds, and returns when it did.
func timeOf(t *testing.T, what string, cond func() bool) time.Time {
	t.Helper()
	eventually(t, time.Minute, what, cond)
	return time.Now()
}
