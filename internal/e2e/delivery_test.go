package e2e

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// receiver is a webhook endpoint that verifies signatures the way the docs show.
type receiver struct {
	mu         sync.Mutex
	calls      int
	failFirst  int // answer 500 to this many calls first
	deliveries []string
	bodies     [][]byte
	badSig     bool
	srv        *httptest.Server
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	r := &receiver{failFirst: failFirst}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls++
		if !verify(req.Header.Get("Codeinterp-Signature"), body, webhookSecret, 5*time.Minute) ||
			req.Header.Get("Codeinterp-Event") != "execution.completed" {
			r.badSig = true
		}
		r.deliveries = append(r.deliveries, req.Header.Get("Codeinterp-Delivery"))
		r.bodies = append(r.bodies, body)
		if r.calls <= r.failFirst {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// verify checks a Codeinterp-Signature header, as a receiver should (see docs/API.md).
func verify(header string, body []byte, secret string, tolerance time.Duration) bool {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sent, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sent, 0)).Abs() > tolerance {
		return false // unsigned, or replayed later
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(sig), []byte(want))
}

func (r *receiver) snapshot() (calls int, deliveries []string, bodies [][]byte, badSig bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls, append([]string(nil), r.deliveries...), append([][]byte(nil), r.bodies...), r.badSig
}

type webhookState struct {
	State      string `json:"state"`
	Attempts   int    `json:"attempts"`
	LastStatus int    `json:"last_status"`
	LastError  string `json:"last_error"`
}

func (s *stack) webhookState(t *testing.T, id string) webhookState {
	var v struct {
		Webhook *webhookState `json:"webhook"`
	}
	s.call(t, "GET", "/v1/executions/"+id, nil, &v)
	if v.Webhook == nil {
		t.Fatalf("execution %s has no webhook state", id)
	}
	return *v.Webhook
}

func TestWebhookSignedAndRetried(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{webhookAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	rcv := newReceiver(t, 1)
	ex := s.run(t, map[string]any{"code": "print('hooked')", "webhook_url": rcv.srv.URL + "/hook"})
	if ex.Status != "succeeded" {
		t.Fatalf("%s %+v", ex.Status, ex.Error)
	}
	eventually(t, time.Minute, "webhook delivered", func() bool { return s.webhookState(t, ex.ID).State == "delivered" })
	calls, deliveries, bodies, badSig := rcv.snapshot()
	if calls != 2 || badSig || deliveries[0] == "" || deliveries[0] != deliveries[1] {
		t.Fatalf("calls=%d badSig=%v deliveries=%v", calls, badSig, deliveries)
	}
	var body struct {
		ID, Status, Stdout string
	}
	if err := json.Unmarshal(bodies[1], &body); err != nil || body.ID != ex.ID || body.Status != "succeeded" || body.Stdout != "hooked\n" {
		t.Fatalf("body %s: %v", bodies[1], err)
	}
	if st := s.webhookState(t, ex.ID); st.Attempts != 2 || st.LastStatus != http.StatusNoContent {
		t.Fatalf("delivery state %+v", st)
	}
}

func TestWebhookPrivateTargetsRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{}) // no allow-list: loopback is off limits
	rcv := newReceiver(t, 0)
	// An address literal is refused at once.
	var e struct {
		Error struct{ Code, Field string } `json:"error"`
	}
	for _, target := range []string{rcv.srv.URL, "http://169.254.169.254/latest/meta-data", "http://[::1]:80/"} {
		if code := s.call(t, "POST", "/v1/executions", map[string]any{"code": "1", "webhook_url": target}, &e); code != 400 || e.Error.Field != "webhook_url" {
			t.Fatalf("%s: %d %+v", target, code, e)
		}
	}
	// A name that resolves to loopback is refused when connecting, after DNS.
	byName := strings.Replace(rcv.srv.URL, "127.0.0.1", "localhost", 1)
	ex := s.run(t, map[string]any{"code": "1", "webhook_url": byName})
	eventually(t, time.Minute, "webhook refused", func() bool { return s.webhookState(t, ex.ID).State == "failed" })
	if st := s.webhookState(t, ex.ID); !strings.Contains(st.LastError, "not allowed") {
		t.Fatalf("state %+v", st)
	}
	if calls, _, _, _ := rcv.snapshot(); calls != 0 {
		t.Fatalf("the private receiver was called %d times", calls)
	}
	// A tenant without a signing secret cannot ask for webhooks.
	if code := s.callAs(t, "key-b", "POST", "/v1/executions", map[string]any{"code": "1", "webhook_url": "https://example.com/h"}, &e); code != 400 || e.Error.Field != "webhook_url" {
		t.Fatalf("tenant without secret: %d %+v", code, e)
	}
}

type sseEvent struct{ id, typ, data string }

// readEvents reads server-sent events until done, or until stop says so.
func (s *stack) readEvents(t *testing.T, id, lastID string, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/executions/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer key-a")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.typ == "" {
				continue
			}
			out = append(out, cur)
			if cur.typ == "done" || (stop != nil && stop(cur)) {
				return out
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	t.Fatalf("event stream ended without done: %+v (%v)", out, sc.Err())
	return nil
}

func TestEventsStreamAndResume(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.run(t, map[string]any{"thread_id": "sse", "code": "import time"}) // warm the thread
	id := s.submit(t, "key-a", map[string]any{"thread_id": "sse",
		"code": "for i in range(4):\n    print(i, flush=True)\n    time.sleep(0.3)"})

	// Read until the second line, then drop the connection.
	var seen int
	first := s.readEvents(t, id, "", func(ev sseEvent) bool {
		if ev.typ == "stdout" {
			seen++
		}
		return seen == 2
	})
	last := first[len(first)-1]
	if last.typ != "stdout" {
		t.Fatalf("first connection: %+v", first)
	}
	// Resume: the rest, without repeats, then done with the execution object.
	rest := s.readEvents(t, id, last.id, nil)
	var stdout strings.Builder
	for _, ev := range append(first, rest...) {
		if ev.typ == "stdout" {
			var d struct{ Text string }
			json.Unmarshal([]byte(ev.data), &d)
			stdout.WriteString(d.Text)
		}
	}
	done := rest[len(rest)-1]
	var ex execution
	if err := json.Unmarshal([]byte(done.data), &ex); err != nil || ex.Status != "succeeded" || ex.ID != id {
		t.Fatalf("done: %s %v", done.data, err)
	}
	if stdout.String() != "0\n1\n2\n3\n" {
		t.Fatalf("streamed stdout %q", stdout.String())
	}
	types := map[string]bool{}
	for _, ev := range first {
		types[ev.typ] = true
	}
	if !types["status"] {
		t.Fatalf("no status event before output: %+v", first)
	}

	// An execution that already ended: the stream replays and ends at once.
	again := s.readEvents(t, id, "", nil)
	if again[len(again)-1].typ != "done" {
		t.Fatalf("replay: %+v", again)
	}
}
