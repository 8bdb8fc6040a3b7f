package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The API's quotas and budgets under abuse (issue: no tenant can starve the others).
// A tenant past a quota gets 429 quota_exceeded, a server at a limit 503 unavailable,
// both as the API's error object with Retry-After; the other tenant never notices.

// sleepCode runs until it is canceled (or the test is long over).
const sleepCode = "import time\ntime.sleep(55)"

var sleeper = map[string]any{"code": sleepCode, "timeout_ms": 60000}

// answer is one HTTP answer, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (s *stack) newRequest(key, method, path string, body io.Reader) *http.Request {
	req, err := http.NewRequest(method, s.url+path, body)
	if err != nil {
		panic(err) // a test's own method or path
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req
}

// send sends req with a plain client, not s.http (which checks answers against
// openapi.json): made-up methods and paths are outside the document, and whether the
// quota answers match it is TestAbuseAPIQuotaAnswersDocumented's to say.
func send(req *http.Request) (answer, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, err
}

// request sends method path as the tenant of key ("": none).
func (s *stack) request(t *testing.T, key, method, path string, body io.Reader) answer {
	t.Helper()
	a, err := send(s.newRequest(key, method, path, body))
	if err != nil {
		t.Fatalf("%.40s %s: %v", method, path, err)
	}
	return a
}

func jsonBody(v any) io.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

func (s *stack) post(t *testing.T, key string, req map[string]any) answer {
	t.Helper()
	return s.request(t, key, "POST", "/v1/executions", jsonBody(req))
}

// wantStatus fails the test unless a has status.
func wantStatus(t *testing.T, what string, a answer, status int) {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: %d %s; want %d", what, a.status, a.body, status)
	}
}

// wantRefused checks that a is the API's error object with status and code, a
// message and a Retry-After of at least a second; it returns the error's field.
func wantRefused(t *testing.T, what string, a answer, status int, code string) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message, Field string } `json:"error"`
	}
	err := json.Unmarshal(a.body, &e)
	retry, rerr := strconv.Atoi(a.header.Get("Retry-After"))
	if a.status != status || err != nil || e.Error.Code != code || e.Error.Message == "" || rerr != nil || retry < 1 {
		t.Fatalf("%s: %d Retry-After %q %s; want %d %s with a message and Retry-After ≥ 1",
			what, a.status, a.header.Get("Retry-After"), a.body, status, code)
	}
	return e.Error.Field
}

// idOf returns the id of the execution a accepted.
func idOf(t *testing.T, a answer) string {
	t.Helper()
	var ex execution
	if a.status != http.StatusAccepted || json.Unmarshal(a.body, &ex) != nil || ex.ID == "" {
		t.Fatalf("submission: %d %s; want 202 with an execution", a.status, a.body)
	}
	return ex.ID
}

// waitStatus polls acme's execution id until it has status.
func (s *stack) waitStatus(t *testing.T, id, status string) {
	t.Helper()
	eventually(t, 2*time.Minute, id+" "+status, func() bool {
		var ex execution
		s.call(t, "GET", "/v1/executions/"+id, nil, &ex)
		return ex.Status == status
	})
}

// cancelAtEnd cancels executions when the test ends (before its workers stop), so
// no sandbox sleeps on.
func (s *stack) cancelAtEnd(t *testing.T, key string, ids ...string) {
	t.Cleanup(func() {
		for _, id := range ids {
			_, _ = send(s.newRequest(key, "POST", "/v1/executions/"+id+"/cancel", nil))
		}
	})
}

// A tenant submits its burst at once, then at its rate; past them it is told when to
// come back, and another tenant's submissions go through meanwhile.
func TestAbuseAPISubmissionRate(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorkers: true, env: map[string]string{"CODEINTERP_QUOTA_RATE": "1", "CODEINTERP_QUOTA_BURST": "3"}})
	req := map[string]any{"code": "print(1)"}
	for i := range 3 {
		wantStatus(t, fmt.Sprintf("acme's submission %d of its burst", i+1), s.post(t, "key-a", req), http.StatusAccepted)
	}
	if field := wantRefused(t, "acme's 4th rapid submission", s.post(t, "key-a", req), http.StatusTooManyRequests, "quota_exceeded"); field != "" {
		t.Errorf("field %q, want none", field)
	}
	for i := range 3 {
		wantStatus(t, fmt.Sprintf("globex's submission %d meanwhile", i+1), s.post(t, "key-b", req), http.StatusAccepted)
	}
	// At 1/s the bucket refills: a refusal is not a ban.
	eventually(t, 5*time.Second, "acme may submit again a second later", func() bool {
		return s.post(t, "key-a", req).status == http.StatusAccepted
	})
}

// The executions a tenant has queued or running are bounded; ending one frees its slot.
func TestAbuseAPIActiveQuota(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{env: map[string]string{"CODEINTERP_QUOTA_ACTIVE": "2"}})
	a, b := idOf(t, s.post(t, "key-a", sleeper)), idOf(t, s.post(t, "key-a", sleeper))
	s.cancelAtEnd(t, "key-a", a, b)
	wantRefused(t, "a third execution while two are queued", s.post(t, "key-a", sleeper), http.StatusTooManyRequests, "quota_exceeded")
	s.waitStatus(t, a, "running")
	s.waitStatus(t, b, "running")
	wantRefused(t, "a third execution while two run", s.post(t, "key-a", sleeper), http.StatusTooManyRequests, "quota_exceeded")
	wantStatus(t, "globex meanwhile", s.post(t, "key-b", map[string]any{"code": "print(1)"}), http.StatusAccepted)

	wantStatus(t, "cancel", s.request(t, "key-a", "POST", "/v1/executions/"+a+"/cancel", nil), http.StatusAccepted)
	if ex := s.wait(t, a); ex.Status != "canceled" {
		t.Fatalf("after cancel: %s", ex.Status)
	}
	c := idOf(t, s.post(t, "key-a", sleeper))
	s.cancelAtEnd(t, "key-a", c)
}

// One thread holds a bounded queue; the tenant's other threads are not held up by it.
func TestAbuseAPIThreadQueueQuota(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{env: map[string]string{"CODEINTERP_QUOTA_THREAD_QUEUE": "2"}})
	on := func(thread string, req map[string]any) map[string]any {
		out := map[string]any{"thread_id": thread}
		for k, v := range req {
			out[k] = v
		}
		return out
	}
	blocker := idOf(t, s.post(t, "key-a", on("busy", sleeper)))
	s.cancelAtEnd(t, "key-a", blocker)
	s.waitStatus(t, blocker, "running") // taken off the thread's queue
	quick := map[string]any{"code": "print(1)"}
	q1, q2 := idOf(t, s.post(t, "key-a", on("busy", quick))), idOf(t, s.post(t, "key-a", on("busy", quick)))
	s.cancelAtEnd(t, "key-a", q1, q2) // runs before the blocker's cancel: cleanups are last in, first out
	field := wantRefused(t, "a third queued on the thread", s.post(t, "key-a", on("busy", quick)), http.StatusTooManyRequests, "quota_exceeded")
	if field != "thread_id" {
		t.Errorf("field %q, want thread_id", field)
	}
	wantStatus(t, "another thread of acme", s.post(t, "key-a", on("idle", quick)), http.StatusAccepted)
}

// Canceling a queued execution frees its place in the thread's queue, as it frees its
// active slot: a client whose thread is held by a long run can replace what it queued.
func TestAbuseAPIThreadQueueFreedByCancel(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{env: map[string]string{"CODEINTERP_QUOTA_THREAD_QUEUE": "1"}})
	busy := func(code string) answer {
		return s.post(t, "key-a", map[string]any{"thread_id": "busy", "code": code, "timeout_ms": 60000})
	}
	blocker := idOf(t, busy(sleepCode))
	s.cancelAtEnd(t, "key-a", blocker)
	s.waitStatus(t, blocker, "running")
	const quick = "print(1)"
	queued := idOf(t, busy(quick))
	wantRefused(t, "a second queued on the thread", busy(quick), http.StatusTooManyRequests, "quota_exceeded")
	var ex execution
	if code := s.call(t, "POST", "/v1/executions/"+queued+"/cancel", nil, &ex); code != http.StatusAccepted || ex.Status != "canceled" {
		t.Fatalf("cancel the queued one: %d %s", code, ex.Status)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); ; <-tick.C {
		a := busy(quick)
		if a.status == http.StatusAccepted {
			s.cancelAtEnd(t, "key-a", idOf(t, a))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after its queued execution was canceled, while the blocker runs, the thread still refuses: %d %s", a.status, a.body)
		}
	}
}

// usageView is GET /v1/usage.
type usageView struct {
	Tenant      string           `json:"tenant"`
	Executions  map[string]int64 `json:"executions"`
	WallSeconds float64          `json:"wall_seconds"`
	BytesStored int64            `json:"bytes_stored"`
	Current     struct {
		LiveSandboxes    int64 `json:"live_sandboxes"`
		ActiveExecutions int64 `json:"active_executions"`
		UploadBytesToday int64 `json:"upload_bytes_today"`
		OpenStreams      int   `json:"open_streams"`
	} `json:"current"`
	Quotas struct {
		Rate           float64 `json:"submissions_per_second"`
		Burst          int     `json:"burst"`
		Active         int     `json:"active_executions"`
		ThreadQueue    int     `json:"queued_per_thread"`
		Streams        int     `json:"streams"`
		UploadBytesDay int64   `json:"upload_bytes_per_day"`
	} `json:"quotas"`
}

func (s *stack) usage(t *testing.T, key string) usageView {
	t.Helper()
	a := s.request(t, key, "GET", "/v1/usage", nil)
	var u usageView
	if a.status != http.StatusOK || json.Unmarshal(a.body, &u) != nil {
		t.Fatalf("GET /v1/usage: %d %s", a.status, a.body)
	}
	return u
}

// objects lists the keys under prefix in the test's bucket.
func (s *stack) objects(t *testing.T, prefix string) []string {
	t.Helper()
	st := s.storageConfig
	mc, err := minio.New(st.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(st.AccessKey, st.SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for o := range mc.ListObjects(context.Background(), st.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	return keys
}

// A tenant's uploads per day are bounded, whether it declares their length or not,
// and inline files of executions count too; a refused upload is not kept.
func TestAbuseAPIUploadBytesPerDay(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorkers: true, env: map[string]string{"CODEINTERP_QUOTA_UPLOAD_BYTES_DAY": "100000"}})
	upload := func(body io.Reader) answer {
		return s.request(t, "key-a", "POST", "/v1/files?name=data.bin", body)
	}
	first := upload(bytes.NewReader(make([]byte, 60000)))
	var up struct{ Object string }
	if first.status != http.StatusCreated || json.Unmarshal(first.body, &up) != nil {
		t.Fatalf("first upload: %d %s", first.status, first.body)
	}
	wantRefused(t, "a second 60 KB upload", upload(bytes.NewReader(make([]byte, 60000))), http.StatusTooManyRequests, "quota_exceeded")

	// Of unknown length (chunked), it is refused once stored, and deleted again.
	pr, pw := io.Pipe()
	go func() {
		_, err := pw.Write(make([]byte, 60000))
		pw.CloseWithError(err)
	}()
	wantRefused(t, "a chunked 60 KB upload", upload(pr), http.StatusTooManyRequests, "quota_exceeded")
	if keys := s.objects(t, "acme/uploads/"); len(keys) != 1 || keys[0] != "acme/"+up.Object {
		t.Fatalf("stored uploads %q, want only the first, acme/%s", keys, up.Object)
	}

	inline := func(n int) map[string]any {
		return map[string]any{"code": "print(1)", "files": []map[string]any{{"name": "in.bin", "content_base64": base64.StdEncoding.EncodeToString(make([]byte, n))}}}
	}
	wantStatus(t, "an execution with a 30 KB inline file", s.post(t, "key-a", inline(30000)), http.StatusAccepted)
	field := wantRefused(t, "an execution with a 20 KB inline file", s.post(t, "key-a", inline(20000)), http.StatusTooManyRequests, "quota_exceeded")
	if field != "files" {
		t.Errorf("field %q, want files", field)
	}
	wantRefused(t, "a 20 KB upload after the inline file", upload(bytes.NewReader(make([]byte, 20000))), http.StatusTooManyRequests, "quota_exceeded")
	if u := s.usage(t, "key-a"); u.Current.UploadBytesToday != 90000 {
		t.Fatalf("upload_bytes_today %d, want 90000: refusals count nothing", u.Current.UploadBytesToday)
	}
	wantStatus(t, "an upload up to the quota exactly", upload(bytes.NewReader(make([]byte, 10000))), http.StatusCreated)
}

// A submission a quota refuses counts none of its inline bytes against the day's
// uploads and leaves none of its files in storage: a client that retries it after
// Retry-After, as told, must not use up its uploads of the day or fill the bucket.
func TestAbuseAPIRefusedSubmissionKeepsNothing(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorkers: true, env: map[string]string{
		"CODEINTERP_QUOTA_ACTIVE": "1", "CODEINTERP_QUOTA_UPLOAD_BYTES_DAY": "100000",
	}})
	first := idOf(t, s.post(t, "key-a", map[string]any{"code": "print(1)"}))
	withFile := map[string]any{"code": "print(1)", "files": []map[string]any{{"name": "in.bin", "content_base64": base64.StdEncoding.EncodeToString(make([]byte, 30000))}}}
	for i := range 4 {
		wantRefused(t, fmt.Sprintf("retry %d past the active quota", i+1), s.post(t, "key-a", withFile), http.StatusTooManyRequests, "quota_exceeded")
	}
	if u := s.usage(t, "key-a"); u.Current.UploadBytesToday != 0 {
		t.Errorf("upload_bytes_today %d after refused submissions, want 0", u.Current.UploadBytesToday)
	}
	if keys := s.objects(t, "acme/"); len(keys) != 0 {
		t.Errorf("refused submissions left %d objects in storage: %q", len(keys), keys)
	}
	var ex execution
	if code := s.call(t, "POST", "/v1/executions/"+first+"/cancel", nil, &ex); code != http.StatusAccepted || ex.Status != "canceled" {
		t.Fatalf("cancel: %d %s", code, ex.Status)
	}
	wantStatus(t, "the same submission once the active slot is free", s.post(t, "key-a", withFile), http.StatusAccepted)
}

// hold opens a long-lived GET as key. A 200 event stream stays open until close (or
// the end of the test); any other answer is read whole. An answer that takes 10 s
// fails the test: a refusal is immediate, a stream answers at once.
func (s *stack) hold(t *testing.T, key, path string) (a answer, release func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(10*time.Second, cancel)
	req := s.newRequest(key, "GET", path, nil).WithContext(ctx)
	resp, err := http.DefaultClient.Do(req)
	if !timer.Stop() || err != nil {
		cancel()
		t.Fatalf("GET %s: %v (within 10 s: an answer is due at once)", path, err)
	}
	a = answer{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		a.body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return a, func() {}
	}
	release = sync.OnceFunc(func() { resp.Body.Close(); cancel() })
	t.Cleanup(release)
	return a, release
}

// A tenant's open event streams and long-polls are bounded per API process; the
// other tenant, and plain requests, are not held up; a closed stream frees its slot.
func TestAbuseAPIStreamQuota(t *testing.T) {
	t.Parallel()
	// Without workers the executions stay queued: their streams stay open.
	s := newStack(t, stackOptions{noWorkers: true, env: map[string]string{"CODEINTERP_QUOTA_STREAMS": "2"}})
	id := idOf(t, s.post(t, "key-a", map[string]any{"code": "print(1)"}))
	theirs := idOf(t, s.post(t, "key-b", map[string]any{"code": "print(1)"}))
	// Ended, they end their streams, so the server closes without waiting for them.
	s.cancelAtEnd(t, "key-a", id)
	s.cancelAtEnd(t, "key-b", theirs)
	events := "/v1/executions/" + id + "/events"

	first, closeFirst := s.hold(t, "key-a", events)
	wantStatus(t, "acme's first stream", first, http.StatusOK)
	second, _ := s.hold(t, "key-a", events)
	wantStatus(t, "acme's second stream", second, http.StatusOK)
	third, _ := s.hold(t, "key-a", events)
	wantRefused(t, "acme's third stream", third, http.StatusTooManyRequests, "quota_exceeded")
	poll, _ := s.hold(t, "key-a", "/v1/executions/"+id+"?wait=30s")
	wantRefused(t, "acme's long-poll", poll, http.StatusTooManyRequests, "quota_exceeded")

	other, _ := s.hold(t, "key-b", "/v1/executions/"+theirs+"/events")
	wantStatus(t, "globex's stream", other, http.StatusOK)
	wantStatus(t, "acme's plain GET", s.request(t, "key-a", "GET", "/v1/executions/"+id, nil), http.StatusOK)

	closeFirst()
	closed := time.Now()
	eventually(t, time.Minute, "acme opens a stream again once it closed one", func() bool {
		a, _ := s.hold(t, "key-a", events)
		if a.status != http.StatusOK {
			wantRefused(t, "acme's stream while one closes", a, http.StatusTooManyRequests, "quota_exceeded")
		}
		return a.status == http.StatusOK
	})
	t.Logf("a stream's slot was free again %s after the client closed it", time.Since(closed).Round(time.Millisecond))
}

// The API's own server drops a connection that sends half a request header and then
// nothing, after the header timeout; whole requests are served.
func TestAbuseAPIServerTimeouts(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorkers: true, env: map[string]string{"CODEINTERP_HTTP_HEADER_TIMEOUT": "300ms"}})
	x, err := s.app.API(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Close)
	srv := x.HTTPServer("127.0.0.1:0")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-served })
	addr := ln.Addr().String()

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\nX-Slow: th"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	conn.SetReadDeadline(start.Add(5 * time.Second))
	_, err = io.Copy(io.Discard, conn) // nil at EOF
	if elapsed := time.Since(start); (err != nil && !errors.Is(err, syscall.ECONNRESET)) || elapsed > 3*time.Second {
		t.Fatalf("half a header: connection ended after %s with %v; want closed after the 300ms header timeout", elapsed, err)
	}

	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %d", resp.StatusCode)
	}
}

// sample is one line of the Prometheus text format.
type sample struct {
	labels map[string]string
	value  float64
}

var (
	sampleRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
	labelRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// scrape reads /metrics from the API's internal listener.
func (s *stack) scrape(t *testing.T) answer {
	t.Helper()
	req, err := http.NewRequest("GET", s.metrics+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := send(req)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "GET /metrics (internal)", a, http.StatusOK)
	return a
}

// samples returns the samples of the metrics named name in a /metrics page.
func samples(page []byte, name string) []sample {
	var out []sample
	for line := range strings.SplitSeq(string(page), "\n") {
		m := sampleRE.FindStringSubmatch(line)
		if m == nil || m[1] != name {
			continue
		}
		sm := sample{labels: map[string]string{}}
		for _, l := range labelRE.FindAllStringSubmatch(m[2], -1) {
			sm.labels[l[1]] = l[2]
		}
		sm.value, _ = strconv.ParseFloat(m[3], 64)
		out = append(out, sm)
	}
	return out
}

// randomToken returns n random capital letters.
func randomToken(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = 'A' + b[i]%26
	}
	return string(b)
}

// Clients cannot mint metric series: a made-up method is "other", a path that is no
// route is "unmatched".
func TestAbuseAPIMetricsCardinality(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorkers: true})
	var minted []string // every made-up token, none of which may reach /metrics
	token := func(n int) string {
		tok := randomToken(n)
		minted = append(minted, tok)
		return tok
	}
	for _, m := range []string{"FOOBAR" + token(8), token(5000), "get"} {
		for _, path := range []string{"/healthz", "/v1/executions", "/nowhere-" + token(8)} {
			s.request(t, "key-a", m, path, nil)
		}
	}
	for _, p := range []string{"/%s", "/v1/%s", "/v1/executions/%s/%s", "/healthz/%s", "/v1/threads/x/%s"} {
		path := p
		for strings.Contains(path, "%s") {
			path = strings.Replace(path, "%s", token(12), 1)
		}
		s.request(t, "key-a", "GET", path, nil)
		s.request(t, "", "POST", path, nil)
	}
	page := s.scrape(t)

	methods := map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true, "PATCH": true, "OPTIONS": true, "other": true}
	// The routes of internal/api/server.go, and the catch-alls echo adds for the /v1 group.
	routes := map[string]bool{"unmatched": true, "/healthz": true, "/readyz": true, "/openapi.json": true,
		"/v1": true, "/v1/*": true, "/v1/executions": true, "/v1/executions/:id": true, "/v1/executions/:id/cancel": true,
		"/v1/executions/:id/events": true, "/v1/threads": true, "/v1/threads/:id": true, "/v1/threads/:id/files/*": true,
		"/v1/files": true, "/v1/usage": true, "/mcp": true, "/v1/threads/:id/reset": true, "/v1/runtimes": true,
		"/v1/skills": true, "/v1/skills/:name": true}
	seen := map[string]bool{}
	for _, sm := range samples(page.body, "codeinterp_http_request_duration_seconds_count") {
		m, r := sm.labels["method"], sm.labels["route"]
		if !methods[m] || !routes[r] {
			t.Errorf("series with method %.40q route %.60q", m, r)
		}
		seen[m+" "+r] = true
	}
	if !seen["other /healthz"] || !seen["GET unmatched"] {
		t.Errorf("no series for the made-up requests (other /healthz, GET unmatched) among %v", seen)
	}
	for _, tok := range minted {
		if i := bytes.Index(page.body, []byte(tok[:8])); i >= 0 {
			t.Errorf("/metrics holds the made-up %.40q: %.200s", tok, page.body[max(i-100, 0):])
		}
	}
}

// A tenant sees what it used, what it holds now and its quotas, and nothing of
// another tenant's; the same counts are on /metrics (the internal listener), labelled
// by tenant.
func TestAbuseAPIUsage(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{env: map[string]string{
		"CODEINTERP_QUOTA_RATE": "1000", "CODEINTERP_QUOTA_BURST": "2000", "CODEINTERP_QUOTA_ACTIVE": "50",
		"CODEINTERP_QUOTA_THREAD_QUEUE": "7", "CODEINTERP_QUOTA_STREAMS": "5", "CODEINTERP_QUOTA_UPLOAD_BYTES_DAY": "123456789",
	}})
	for _, tc := range []struct{ code, status string }{
		{"print(sum(range(10**6)))", "succeeded"},
		{"open('outputs/report.txt', 'w').write('x' * 10000)", "succeeded"},
		{"raise ValueError('boom')", "failed"},
	} {
		if ex := s.run(t, map[string]any{"thread_id": "usage", "code": tc.code}); ex.Status != tc.status {
			t.Fatalf("%q: %s %+v, want %s", tc.code, ex.Status, ex.Error, tc.status)
		}
	}
	busy := idOf(t, s.post(t, "key-a", map[string]any{"thread_id": "usage", "code": sleepCode, "timeout_ms": 60000}))
	s.cancelAtEnd(t, "key-a", busy)
	s.waitStatus(t, busy, "running")

	var u usageView
	eventually(t, 30*time.Second, "acme's usage counts its ended executions", func() bool {
		u = s.usage(t, "key-a")
		return u.Executions["succeeded"] == 2 && u.Executions["failed"] == 1
	})
	q := u.Quotas
	if u.Tenant != "acme" || len(u.Executions) != 2 || u.WallSeconds <= 0 || u.BytesStored < 10000 ||
		u.Current.ActiveExecutions != 1 || u.Current.LiveSandboxes != 1 {
		t.Errorf("acme's usage %+v; want 2 succeeded, 1 failed, wall seconds, ≥ 10000 bytes stored, 1 active, 1 sandbox", u)
	}
	if q.Rate != 1000 || q.Burst != 2000 || q.Active != 50 || q.ThreadQueue != 7 || q.Streams != 5 || q.UploadBytesDay != 123456789 {
		t.Errorf("acme's quotas %+v, want those configured", q)
	}
	if g := s.usage(t, "key-b"); g.Tenant != "globex" || len(g.Executions) != 0 || g.WallSeconds != 0 || g.BytesStored != 0 || g.Current.ActiveExecutions != 0 {
		t.Errorf("globex's usage %+v, want none", g)
	}

	page := s.scrape(t)
	got := map[string]float64{}
	for _, name := range []string{"codeinterp_tenant_executions_total", "codeinterp_tenant_wall_seconds_total", "codeinterp_tenant_active_executions"} {
		for _, sm := range samples(page.body, name) {
			got[name+" "+sm.labels["tenant"]+" "+sm.labels["status"]] = sm.value
		}
	}
	for k, want := range map[string]float64{
		"codeinterp_tenant_executions_total acme succeeded": 2, "codeinterp_tenant_executions_total acme failed": 1,
		"codeinterp_tenant_active_executions acme ": 1,
	} {
		if got[k] != want {
			t.Errorf("%s = %g, want %g", k, got[k], want)
		}
	}
	if got["codeinterp_tenant_wall_seconds_total acme "] <= 0 {
		t.Errorf("no wall seconds of acme on /metrics: %v", got)
	}
	for k := range got {
		if strings.Contains(k, " globex") {
			t.Errorf("/metrics has %s: globex ran nothing", k)
		}
	}
	// The API's own port serves no metrics, to anyone: they name every tenant.
	for _, key := range []string{"", "key-a", "key-b"} {
		a := s.request(t, key, "GET", "/metrics", nil)
		if a.status != http.StatusNotFound || bytes.Contains(a.body, []byte("acme")) || bytes.Contains(a.body, []byte("codeinterp_")) {
			t.Errorf("GET /metrics on the API's port (key %q): %d %.300s; want 404 naming no tenant", key, a.status, a.body)
		}
	}
}

// bigSubmission is a POST /v1/executions body of exactly n bytes: an inline file of
// zeros, padded with JSON whitespace.
func bigSubmission(n int) []byte {
	head, tail := `{"code":"print(1)","files":[{"name":"big.bin","content_base64":"`, `"}]}`
	b := []byte(head + strings.Repeat("A", (n-len(head)-len(tail))/4*4) + tail)
	return append(b, bytes.Repeat([]byte(" "), n-len(b))...)
}

// slowBody starts req, whose body the test writes through the returned pipe, and
// returns where its answer will arrive.
//
// It goes on a connection of its own: a body read from a pipe cannot be sent again,
// so a pooled connection the server closed as it was taken (idle too long) would
// fail the request where a replayable body is retried.
func slowBody(req *http.Request, pr *io.PipeReader) <-chan answer {
	req.Body = pr
	out := make(chan answer, 1)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		resp, err := client.Do(req)
		var a answer
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			a, err = answer{status: resp.StatusCode, header: resp.Header, body: b}, rerr
		}
		if err != nil {
			a.status, a.body = -1, []byte(err.Error())
		}
		out <- a
	}()
	return out
}

// receive waits for the answer to a slow body.
func receive(t *testing.T, what string, answers <-chan answer) answer {
	t.Helper()
	select {
	case a := <-answers:
		return a
	case <-time.After(time.Minute):
		t.Fatalf("%s: no answer a minute after the body was sent", what)
		return answer{}
	}
}

// The bodies an API process reads at once are bounded: while one large body is on its
// way, another is refused with 503 and Retry-After, and accepted once the first is in.
// A body of unknown length holds what has arrived of it.
func TestAbuseAPIBodyBudget(t *testing.T) {
	t.Parallel()
	const size = 2 << 20
	s := newStack(t, stackOptions{noWorkers: true, env: map[string]string{
		"CODEINTERP_MAX_REQUEST_BYTES": strconv.Itoa(size), "CODEINTERP_INFLIGHT_BYTES": strconv.Itoa(size),
		// The budget is the largest of the inflight bytes, the request limit and the
		// upload limit (the workspace size, 8 MiB in the harness).
		"CODEINTERP_WORKSPACE_MB": "2",
	}})
	body := bigSubmission(size)

	var first <-chan answer
	budgetHeld := func(what string) {
		eventually(t, time.Minute, what, func() bool {
			select {
			case a := <-first:
				t.Fatalf("%s: the slow body was answered before it was all sent: %d %s", what, a.status, a.body)
			default:
			}
			return s.request(t, "key-a", "POST", "/v1/executions", strings.NewReader("{}")).status == http.StatusServiceUnavailable
		})
	}

	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.CloseWithError(errors.New("test over")) })
	req := s.newRequest("key-a", "POST", "/v1/executions", nil)
	req.ContentLength = size
	first = slowBody(req, pr)
	if _, err := pw.Write(body[:64<<10]); err != nil {
		t.Fatal(err)
	}
	budgetHeld("the slow body holds the whole budget (even a tiny body is refused)")
	wantRefused(t, "a second large body meanwhile", s.request(t, "key-a", "POST", "/v1/executions", bytes.NewReader(body)),
		http.StatusServiceUnavailable, "unavailable")
	if _, err := pw.Write(body[64<<10:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	wantStatus(t, "the slow body", receive(t, "the slow body", first), http.StatusAccepted)
	wantStatus(t, "the second large body again", s.request(t, "key-a", "POST", "/v1/executions", bytes.NewReader(body)), http.StatusAccepted)

	// Chunked, a body holds only what has arrived (in steps), not the most it may grow
	// to: while one is open, another small body is still read. Written by hand on a
	// connection of its own, so the headers and the first chunk are surely on the wire
	// (Go's client may hold back a body of unknown length while it probes it).
	u, _ := url.Parse(s.url)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	rd := bufio.NewReader(conn)
	part := `{"code": "print(1)"`
	if _, err := fmt.Fprintf(conn, "POST /v1/executions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer key-a\r\n"+
		"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", u.Host, len(part), part); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the chunked body being read, holding one step", func() bool {
		return s.metric(t, "codeinterp_api_inflight_bytes") == 64<<10
	})
	// The server releases a body's budget when its handler returns, which can be just
	// after the client has the answer: a probe may meet another's last moment.
	eventually(t, time.Minute, "a small body read beside the open chunked one", func() bool {
		return s.request(t, "key-a", "POST", "/v1/executions", strings.NewReader("{}")).status == http.StatusBadRequest
	})
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := io.WriteString(conn, "1\r\n}\r\n0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		t.Fatalf("the chunked body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the chunked body: %d, want %d", resp.StatusCode, http.StatusAccepted)
	}
}

// Quota refusals and GET /v1/usage are part of the contract in openapi.json: s.http
// checks every answer against it.
func TestAbuseAPIQuotaAnswersDocumented(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorkers: true, env: map[string]string{"CODEINTERP_QUOTA_RATE": "0.01", "CODEINTERP_QUOTA_BURST": "1"}})
	req := map[string]any{"code": "print(1)"}
	if code := s.call(t, "POST", "/v1/executions", req, nil); code != http.StatusAccepted {
		t.Fatalf("first submission: %d", code)
	}
	var refused map[string]any
	if code := s.call(t, "POST", "/v1/executions", req, &refused); code != http.StatusTooManyRequests {
		t.Fatalf("second submission: %d %v", code, refused)
	}
	var u map[string]any
	if code := s.call(t, "GET", "/v1/usage", nil, &u); code != http.StatusOK {
		t.Fatalf("GET /v1/usage: %d", code)
	}
}
