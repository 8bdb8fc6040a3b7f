package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/api"
	"github.com/codeinterp/codeinterp/internal/service"
	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/threadq"
	"github.com/codeinterp/codeinterp/storage"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// fakeQueue records what the API enqueued; the worker side is tested end to end.
type fakeQueue struct {
	mu  sync.Mutex
	ids []string
	err error
}

func (q *fakeQueue) Enqueue(_ context.Context, ex *jobs.Execution) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	q.ids = append(q.ids, ex.ID)
	return nil
}

type bundle struct {
	srv     *httptest.Server
	metrics *httptest.Server // the internal listener of /metrics
	http    *http.Client     // validates every response against openapi.json
	records *records.Store
	store   *storage.Store
	queue   *fakeQueue
}

func setup(t *testing.T) *bundle {
	t.Helper()
	addr, db := testenv.RedisDB(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	t.Cleanup(func() { rdb.Close() })
	store, err := storage.New(testenv.MinIO(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	threads := threadq.New(rdb, threadq.Config{Prefix: "t:"})
	recs := records.New(rdb, records.Config{Prefix: "t:", TTL: time.Hour, Threads: threads})
	waiter := recs.NewWaiter()
	if err := waiter.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(waiter.Shutdown)
	keys, err := api.ParseKeys("acme:key-a,globex:key-b", "")
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{records: recs, store: store, queue: &fakeQueue{}}
	svc := service.New(service.Config{
		Records: recs, Threads: threads, Waiter: waiter, Queue: b.queue, Store: store,
		Limits:   service.Limits{MaxUploadBytes: 64 << 10, WorkspaceBytes: 64 << 10, DefaultTimeoutMS: 30000, MaxTimeoutMS: 60000},
		Profiles: testProfiles,
	})
	srv := api.New(api.Config{
		Service: svc, Keys: keys,
		Limits: api.Limits{MaxRequestBytes: 256 << 10, MaxUploadBytes: 64 << 10},
		Ready:  []api.Check{{Name: "redis", Check: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }}},
	})
	b.srv, b.metrics = httptest.NewServer(srv), httptest.NewServer(srv.Metrics())
	t.Cleanup(b.srv.Close)
	t.Cleanup(b.metrics.Close)
	b.http = testenv.OpenAPIClient(t, b.srv.URL)
	return b
}

type response struct {
	status int
	header http.Header
	body   map[string]any
}

func (b *bundle) do(t *testing.T, method, path, key, body string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, header: resp.Header}
	if len(raw) > 0 && json.Unmarshal(raw, &r.body) != nil {
		t.Fatalf("%s %s: body is not JSON: %q", method, path, raw)
	}
	return r
}

func (r response) errorField() (code, field string) {
	e, _ := r.body["error"].(map[string]any)
	code, _ = e["code"].(string)
	field, _ = e["field"].(string)
	return code, field
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	big := strings.Repeat("x", 70<<10)
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
		field      string
	}{
		{"ok", `{"code":"print(1)"}`, 202, "", ""},
		{"bash", `{"code":"echo hi","language":"bash"}`, 202, "", ""},
		{"missing code", `{}`, 400, "invalid_argument", "code"},
		{"blank code", `{"code":"  "}`, 400, "invalid_argument", "code"},
		{"unknown field", `{"code":"1","colour":"red"}`, 400, "invalid_argument", "colour"},
		{"wrong type", `{"code":1}`, 400, "invalid_argument", "code"},
		{"malformed", `{"code":`, 400, "invalid_argument", ""},
		{"trailing data", `{"code":"1"} {}`, 400, "invalid_argument", ""},
		{"language", `{"code":"1","language":"ruby"}`, 400, "invalid_argument", "language"},
		{"timeout zero", `{"code":"1","timeout_ms":0}`, 400, "invalid_argument", "timeout_ms"},
		{"timeout too long", `{"code":"1","timeout_ms":600001}`, 400, "invalid_argument", "timeout_ms"},
		{"env name", `{"code":"1","env":{"1BAD":"x"}}`, 400, "invalid_argument", "env.1BAD"},
		{"bad thread", `{"code":"1","thread_id":"a/b"}`, 400, "invalid_argument", "thread_id"},
		{"metadata too big", `{"code":"1","metadata":{"k":"` + strings.Repeat("m", 17<<10) + `"}}`, 413, "payload_too_large", "metadata"},
		{"dot-dot name", `{"code":"1","files":[{"name":"../etc/passwd","content_base64":""}]}`, 400, "invalid_argument", "files[0].name"},
		{"absolute name", `{"code":"1","files":[{"name":"/etc/passwd","content_base64":""}]}`, 400, "invalid_argument", "files[0].name"},
		{"control char", `{"code":"1","files":[{"name":"a\u0001b","content_base64":""}]}`, 400, "invalid_argument", "files[0].name"},
		{"duplicate name", `{"code":"1","files":[{"name":"a","content_base64":""},{"name":"./a","content_base64":""}]}`, 400, "invalid_argument", "files[1].name"},
		{"bad base64", `{"code":"1","files":[{"name":"a","content_base64":"%%%"}]}`, 400, "invalid_argument", "files[0].content_base64"},
		{"no content", `{"code":"1","files":[{"name":"a"}]}`, 400, "invalid_argument", "files[0]"},
		{"both contents", `{"code":"1","files":[{"name":"a","content_base64":"","object":"uploads/x/a"}]}`, 400, "invalid_argument", "files[0]"},
		{"foreign object", `{"code":"1","files":[{"name":"a","object":"acme/oneoff/x"}]}`, 400, "invalid_argument", "files[0].object"},
		{"missing upload", `{"code":"1","files":[{"name":"a","object":"uploads/nope/a"}]}`, 400, "invalid_argument", "files[0].object"},
		{"files over workspace", `{"code":"1","files":[{"name":"a","content_base64":"` + b64(strings.Repeat("y", 50<<10)) + `"},{"name":"b","content_base64":"` + b64(strings.Repeat("y", 20<<10)) + `"}]}`, 413, "payload_too_large", "files"},
		{"body over limit", `{"code":"` + big + big + big + big + `"}`, 413, "payload_too_large", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(t, "POST", "/v1/executions", "key-a", tc.body)
			code, field := r.errorField()
			if r.status != tc.status || code != tc.code || field != tc.field {
				t.Fatalf("got %d %s field=%q, want %d %s field=%q; body %v", r.status, code, field, tc.status, tc.code, tc.field, r.body)
			}
			if r.status == 202 {
				if r.body["status"] != "queued" || r.header.Get("Location") != "/v1/executions/"+r.body["id"].(string) {
					t.Fatalf("created: %v, Location %q", r.body, r.header.Get("Location"))
				}
			}
		})
	}
}

func TestAuthAndTenants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, key := range []string{"", "wrong"} {
		r := b.do(t, "POST", "/v1/executions", key, `{"code":"1"}`)
		if code, _ := r.errorField(); r.status != 401 || code != "unauthenticated" {
			t.Fatalf("key %q: %d %v", key, r.status, r.body)
		}
	}
	created := b.do(t, "POST", "/v1/executions", "key-a", `{"code":"1","metadata":{"run":7}}`)
	id := created.body["id"].(string)
	if got := b.do(t, "GET", "/v1/executions/"+id, "key-a", ""); got.status != 200 || got.body["id"] != id || got.body["metadata"].(map[string]any)["run"] != 7.0 {
		t.Fatalf("owner GET: %d %v", got.status, got.body)
	}
	// Another tenant's id is 404, exactly like an id that does not exist.
	other := b.do(t, "GET", "/v1/executions/"+id, "key-b", "")
	missing := b.do(t, "GET", "/v1/executions/ex_nope", "key-b", "")
	if other.status != 404 || missing.status != 404 {
		t.Fatalf("cross-tenant GET = %d, missing = %d; want 404", other.status, missing.status)
	}
	if c1, _ := other.errorField(); c1 != "not_found" {
		t.Fatalf("code %q", c1)
	}
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"code":"print(1)","files":[{"name":"a.txt","content_base64":"` + b64("hi") + `"}]}`
	first := b.do(t, "POST", "/v1/executions", "key-a", body, "Idempotency-Key", "k1")
	// A retry resends the same bytes: the key compares raw bodies, so hashing a large
	// body costs no decoded copy of it.
	again := b.do(t, "POST", "/v1/executions", "key-a", body, "Idempotency-Key", "k1")
	if first.status != 202 || again.status != 202 || first.body["id"] != again.body["id"] {
		t.Fatalf("replay: %d %v / %d %v", first.status, first.body["id"], again.status, again.body["id"])
	}
	if len(b.queue.ids) != 1 {
		t.Fatalf("enqueued %d times, want once", len(b.queue.ids))
	}
	changed := b.do(t, "POST", "/v1/executions", "key-a", `{"code":"print(2)"}`, "Idempotency-Key", "k1")
	if code, field := changed.errorField(); changed.status != 409 || code != "conflict" || field != "Idempotency-Key" {
		t.Fatalf("reuse with another body: %d %v", changed.status, changed.body)
	}
	// Keys are per tenant.
	if other := b.do(t, "POST", "/v1/executions", "key-b", body, "Idempotency-Key", "k1"); other.status != 202 || other.body["id"] == first.body["id"] {
		t.Fatalf("other tenant: %d %v", other.status, other.body)
	}
}

func TestEnqueueFailureIsRetryable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.queue.err = fmt.Errorf("redis down")
	r := b.do(t, "POST", "/v1/executions", "key-a", `{"code":"1"}`, "Idempotency-Key", "k")
	if code, _ := r.errorField(); r.status != 503 || code != "unavailable" || r.header.Get("Retry-After") == "" {
		t.Fatalf("%d %v", r.status, r.body)
	}
	b.queue.err = nil
	if r := b.do(t, "POST", "/v1/executions", "key-a", `{"code":"1"}`, "Idempotency-Key", "k"); r.status != 202 {
		t.Fatalf("retry after failure: %d %v", r.status, r.body)
	}
}

func TestLongPoll(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.do(t, "POST", "/v1/executions", "key-a", `{"code":"1"}`).body["id"].(string)

	for _, bad := range []string{"61s", "-1s", "soon"} {
		if r := b.do(t, "GET", "/v1/executions/"+id+"?wait="+bad, "key-a", ""); r.status != 400 {
			t.Fatalf("wait=%s: %d", bad, r.status)
		}
	}
	// The wait elapses: the current state comes back.
	if r := b.do(t, "GET", "/v1/executions/"+id+"?wait=0.2", "key-a", ""); r.status != 200 || r.body["status"] != "queued" {
		t.Fatalf("elapsed wait: %d %v", r.status, r.body["status"])
	}
	// The execution ends while the client waits: it is answered at once.
	got := make(chan response, 1)
	go func() { got <- b.do(t, "GET", "/v1/executions/"+id+"?wait=60s", "key-a", "") }()
	ex, err := b.records.Get(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	ex.Status, ex.Stdout = jobs.Succeeded, "1\n"
	// The waiter may not have subscribed yet; announcing until it answers proves the
	// long-poll returns on the announcement, not on its 60 s timer.
	deadline := time.After(30 * time.Second)
	for {
		if _, _, err := b.records.Transition(context.Background(), ex, jobs.Queued, jobs.Succeeded); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-got:
			if r.status != 200 || r.body["status"] != "succeeded" || r.body["stdout"] != "1\n" {
				t.Fatalf("long-poll: %d %v", r.status, r.body)
			}
			return
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("long-poll did not return after the execution ended")
		}
	}
}

func TestUploadAndReference(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req, _ := http.NewRequest("POST", b.srv.URL+"/v1/files?name=data/in.csv", strings.NewReader("a,b\n1,2\n"))
	req.Header.Set("Authorization", "Bearer key-a")
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var up map[string]any
	json.NewDecoder(resp.Body).Decode(&up)
	resp.Body.Close()
	object, _ := up["object"].(string)
	if resp.StatusCode != 201 || !strings.HasPrefix(object, "uploads/") || up["size"] != 8.0 {
		t.Fatalf("upload: %d %v", resp.StatusCode, up)
	}
	ok := b.do(t, "POST", "/v1/executions", "key-a", `{"code":"1","files":[{"name":"in.csv","object":"`+object+`"}]}`)
	if ok.status != 202 {
		t.Fatalf("reference own upload: %d %v", ok.status, ok.body)
	}
	// Another tenant cannot reference it: its object names resolve in its own space.
	other := b.do(t, "POST", "/v1/executions", "key-b", `{"code":"1","files":[{"name":"in.csv","object":"`+object+`"}]}`)
	if _, field := other.errorField(); other.status != 400 || field != "files[0].object" {
		t.Fatalf("cross-tenant reference: %d %v", other.status, other.body)
	}
	big, _ := http.NewRequest("POST", b.srv.URL+"/v1/files?name=big.bin", strings.NewReader(strings.Repeat("z", 65<<10)))
	big.Header.Set("Authorization", "Bearer key-a")
	resp, err = b.http.Do(big)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("oversized upload: %d", resp.StatusCode)
	}
}

func TestHealthAndErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if r := b.do(t, "GET", "/healthz", "", ""); r.status != 200 {
		t.Fatalf("healthz %d", r.status)
	}
	if r := b.do(t, "GET", "/readyz", "", ""); r.status != 200 || r.body["checks"].(map[string]any)["redis"] != "ok" {
		t.Fatalf("readyz %d %v", r.status, r.body)
	}
	if r := b.do(t, "GET", "/v1/nothing", "key-a", ""); r.status != 404 {
		t.Fatalf("unknown route %d %v", r.status, r.body)
	} else if code, _ := r.errorField(); code != "not_found" {
		t.Fatalf("unknown route code %q", code)
	}
	// The metrics name every tenant: the API's port does not serve them, with a key
	// or without; their own listener does.
	if err := b.records.AddUsage(context.Background(), "acme", records.Spent{Status: jobs.Succeeded, WallSeconds: 1}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", "key-a"} {
		req, _ := http.NewRequest("GET", b.srv.URL+"/metrics", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := b.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || strings.Contains(string(text), "acme") || strings.Contains(string(text), "codeinterp_") {
			t.Errorf("GET /metrics on the API's port (key %q): %d %.300s; want 404 naming no tenant", key, resp.StatusCode, text)
		}
	}
	status, text := get(t, b.metrics.URL+"/metrics")
	if status != 200 || !strings.Contains(text, "codeinterp_http_request_duration_seconds") ||
		!strings.Contains(text, `codeinterp_tenant_executions_total{status="succeeded",tenant="acme"} 1`) {
		t.Fatalf("internal metrics %d: %.300s", status, text)
	}
}
