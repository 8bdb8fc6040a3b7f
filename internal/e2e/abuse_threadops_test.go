package e2e

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/internal/janitor"
	"github.com/codeinterp/codeinterp/jobs"
)

// Thread operations cost like submissions (issue 22, finding 4): a loop of reads,
// resets or deletes of a thread is bounded by the tenant's rate, over HTTP and MCP.
func TestAbuseThreadOpsRateLimited(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{env: map[string]string{"CODEINTERP_QUOTA_RATE": "0.01", "CODEINTERP_QUOTA_BURST": "6"}})
	// The burst: the execution that makes the thread, the MCP session, and four
	// operations, one of each kind the tenant has besides a delete.
	if ex := s.run(t, map[string]any{"thread_id": "t", "code": "open('f.txt', 'w').write('x')"}); ex.Status != "succeeded" {
		t.Fatalf("making the thread: %s %+v", ex.Status, ex.Error)
	}
	cs, err := s.mcpHTTP(t, "key-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := callTool(t, cs, "read_file", map[string]any{"thread_id": "t", "path": "f.txt"}); res.IsError {
		t.Fatalf("read_file within the burst: %s", texts(res))
	}
	wantStatus(t, "GET a file within the burst", s.request(t, "key-a", "GET", "/v1/threads/t/files/f.txt?inline=true", nil), http.StatusOK)
	wantStatus(t, "reset within the burst", s.request(t, "key-a", "POST", "/v1/threads/t/reset", nil), http.StatusOK)
	wantStatus(t, "PUT a file within the burst", s.request(t, "key-a", "PUT", "/v1/threads/t/files/g.txt", strings.NewReader("y")), http.StatusCreated)

	for _, op := range []struct{ what, method, path string }{
		{"GET a file", "GET", "/v1/threads/t/files/f.txt?inline=true"},
		{"reset", "POST", "/v1/threads/t/reset"},
		{"DELETE the thread", "DELETE", "/v1/threads/t"},
		{"PUT a file", "PUT", "/v1/threads/t/files/g.txt"},
	} {
		var body io.Reader
		if op.method == "PUT" {
			body = strings.NewReader("y")
		}
		a := s.request(t, "key-a", op.method, op.path, body)
		wantRefused(t, op.what+" past the rate", a, http.StatusTooManyRequests, "quota_exceeded")
	}
	res := callTool(t, cs, "read_file", map[string]any{"thread_id": "t", "path": "f.txt"})
	if !res.IsError || !strings.Contains(texts(res), "quota") {
		t.Fatalf("read_file past the rate: error %v, %q; want a quota error", res.IsError, texts(res))
	}
	wantStatus(t, "another tenant meanwhile", s.post(t, "key-b", map[string]any{"code": "print(1)"}), http.StatusAccepted)
}

// An operation waiting in a thread's queue holds a place there and among the
// tenant's active work, as an execution does: queued reads cannot pile up behind a
// long run without bound.
func TestAbuseThreadOpsCountAgainstQuotas(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{env: map[string]string{"CODEINTERP_QUOTA_THREAD_QUEUE": "1", "CODEINTERP_QUOTA_ACTIVE": "3"}})
	blocker := idOf(t, s.post(t, "key-a", map[string]any{"thread_id": "busy", "code": sleepCode, "timeout_ms": 60000}))
	s.cancelAtEnd(t, "key-a", blocker)
	s.waitStatus(t, blocker, "running")
	stopGet := s.queueGet(t, "busy", "f.txt")
	defer stopGet()

	field := wantRefused(t, "an execution behind the queued read", s.post(t, "key-a", map[string]any{"thread_id": "busy", "code": "print(1)"}),
		http.StatusTooManyRequests, "quota_exceeded")
	if field != "thread_id" {
		t.Errorf("field %q, want thread_id", field)
	}
	wantRefused(t, "a reset behind the queued read", s.request(t, "key-a", "POST", "/v1/threads/busy/reset", nil),
		http.StatusTooManyRequests, "quota_exceeded")
	other := idOf(t, s.post(t, "key-a", map[string]any{"thread_id": "other", "code": sleepCode, "timeout_ms": 60000}))
	s.cancelAtEnd(t, "key-a", other)
	// Active: the blocker, the queued read and the other thread's run.
	wantRefused(t, "a one-off while the read holds an active place", s.post(t, "key-a", map[string]any{"code": "print(1)"}),
		http.StatusTooManyRequests, "quota_exceeded")
}

// queueGet starts a GET of a file of thread, which waits behind the thread's running
// execution, and returns once the read is in the thread's queue. The returned
// function abandons the GET.
func (s *stack) queueGet(t *testing.T, thread, name string) (abandon func()) {
	t.Helper()
	tk := jobs.NewThreadKey("acme", thread)
	queued := func() int {
		st, err := s.threads.State(context.Background(), tk)
		if err != nil {
			t.Fatal(err)
		}
		return len(st.Queued)
	}
	before := queued()
	ctx, cancel := context.WithCancel(context.Background())
	req := s.newRequest("key-a", "GET", "/v1/threads/"+thread+"/files/"+name+"?inline=true", nil).WithContext(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	eventually(t, time.Minute, "the read in the thread's queue", func() bool { return queued() == before+1 })
	return func() {
		cancel()
		<-done
	}
}

// A read whose client went away before its turn is canceled: it leaves the thread's
// queue and the tenant's active work, and no copy of the file is made for nobody.
// Its record is kept briefly (records.Config.OpTTL), not as long as executions'.
func TestAbuseThreadOpsAbandonedGet(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ctx := context.Background()
	blocker := idOf(t, s.post(t, "key-a", map[string]any{"thread_id": "busy", "timeout_ms": 60000,
		"code": "open('f.txt', 'w').write('x' * 100000)\n" + sleepCode}))
	s.cancelAtEnd(t, "key-a", blocker)
	s.waitStatus(t, blocker, "running")
	abandon := s.queueGet(t, "busy", "f.txt")
	if n := s.usage(t, "key-a").Current.ActiveExecutions; n != 2 {
		t.Fatalf("%d active, want the run and the queued read", n)
	}
	tk := jobs.NewThreadKey("acme", "busy")
	st, err := s.threads.State(ctx, tk)
	if err != nil || len(st.Queued) != 1 {
		t.Fatalf("the thread's queue: %+v %v; want the read alone", st, err)
	}
	op := st.Queued[0]
	ttl, err := s.rdb.TTL(ctx, "ci:ex:"+op).Result()
	if err != nil || ttl <= 0 || ttl > s.records.OpTTL() || s.records.OpTTL() >= s.records.TTL() {
		t.Fatalf("the read's record lives %v (%v); want at most %v, under the records' %v", ttl, err, s.records.OpTTL(), s.records.TTL())
	}

	abandon()
	eventually(t, time.Minute, "the abandoned read leaves the queue and the active work", func() bool {
		st, err := s.threads.State(ctx, tk)
		return err == nil && len(st.Queued) == 0 && s.usage(t, "key-a").Current.ActiveExecutions == 1
	})
	wantStatus(t, "cancel the blocker", s.request(t, "key-a", "POST", "/v1/executions/"+blocker+"/cancel", nil), http.StatusAccepted)
	// The thread's next run comes after where the read was: had the read stayed, its
	// copy would be stored by now.
	if ex := s.run(t, map[string]any{"thread_id": "busy", "code": "print(1)"}); ex.Status != "succeeded" {
		t.Fatalf("the run after: %s %+v", ex.Status, ex.Error)
	}
	if keys := s.objects(t, "acme/busy/"+op+"/"); len(keys) != 0 {
		t.Fatalf("copies of the abandoned read: %q", keys)
	}
	rec, err := s.records.Get(ctx, "acme", op)
	if err != nil || rec.Status != jobs.Canceled {
		t.Fatalf("the abandoned read's record: %+v %v; want canceled", rec, err)
	}
}

// A copy of a thread's file made for a reader lives as long as its download link
// (and a margin), not the retention: a loop of reads of a large file cannot fill the
// bucket. The execution's own outputs stay.
func TestAbuseThreadOpsGetCopiesExpire(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{env: map[string]string{"CODEINTERP_URL_TTL": "1m"}})
	ex := s.run(t, map[string]any{"thread_id": "t", "code": "open('f.txt', 'w').write('x' * 1000)\nopen('outputs/keep.txt', 'w').write('k')"})
	if ex.Status != "succeeded" {
		t.Fatalf("making the thread: %s %+v", ex.Status, ex.Error)
	}
	before := s.objects(t, "acme/t/")
	wantStatus(t, "GET the file", s.request(t, "key-a", "GET", "/v1/threads/t/files/f.txt?inline=true", nil), http.StatusOK)
	var copies []string
	for _, k := range s.objects(t, "acme/t/") {
		if !slices.Contains(before, k) {
			copies = append(copies, k)
		}
	}
	if len(copies) != 1 || !strings.Contains(copies[0], "/op_") {
		t.Fatalf("objects made by the read: %q, want its one copy", copies)
	}

	// A janitor whose clock is past the link's minute and the margin.
	later := func() time.Time { return time.Now().Add(7 * time.Minute) }
	j := janitor.New(janitor.Config{Records: s.records, Threads: s.threads, Sandboxes: s.runtime, Store: s.store,
		ID: s.prefix + "-janitor-copies", Logger: discardLogger, Now: later})
	if rep := j.Sweep(context.Background()); rep.CopiesDeleted != 1 {
		t.Fatalf("copies deleted: %d, want 1", rep.CopiesDeleted)
	}
	after := s.objects(t, "acme/t/")
	if slices.Contains(after, copies[0]) {
		t.Fatalf("the copy %s outlived its link", copies[0])
	}
	// The same sweep, its clock minutes ahead, may also have the idle thread reaped
	// (a snapshot appears): only what was there before must still be.
	for _, k := range before {
		if !slices.Contains(after, k) {
			t.Fatalf("%s was deleted with the expired copy: objects now %q", k, after)
		}
	}
}
