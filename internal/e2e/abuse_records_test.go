package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// Listings and the stuck sweep under abuse (issue: no tenant can starve the others).

// listPage is one GET /v1/executions answer, with its size.
type listPage struct {
	Items      []execution `json:"items"`
	NextCursor string      `json:"next_cursor"`
	bytes      int
}

// list GETs one page of executions as tenant acme; query is the query string.
func (s *stack) list(t *testing.T, query url.Values) listPage {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/v1/executions?"+query.Encode(), nil)
	req.Header.Set("Authorization", "Bearer key-a")
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/executions?%s: %d %s", query.Encode(), resp.StatusCode, body)
	}
	var p listPage
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	p.bytes = len(body)
	return p
}

// listAll pages through a listing with query, checking each page with check, and
// returns the ids listed in order.
func (s *stack) listAll(t *testing.T, query url.Values, check func(listPage)) []string {
	t.Helper()
	var ids []string
	for range 1000 {
		p := s.list(t, query)
		if check != nil {
			check(p)
		}
		for _, ex := range p.Items {
			ids = append(ids, ex.ID)
		}
		if p.NextCursor == "" {
			return ids
		}
		query.Set("cursor", p.NextCursor)
	}
	t.Fatal("listing does not end")
	return nil
}

// TestAbuseListSummariesBounded: executions that printed 1 MiB to stdout and to
// stderr, returned a large result and made many files list as bounded summaries; the
// execution itself still shows everything.
func TestAbuseListSummariesBounded(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	code := "import sys\nsys.stdout.write('o' * (1 << 20))\nsys.stderr.write('e' * (1 << 20))\n" +
		"for i in range(25):\n    open(f'outputs/f{i:02d}.txt', 'w').write('x')\n'r' * 100000"
	var ids []string
	for range 3 {
		ex := s.run(t, map[string]any{"thread_id": "flood", "code": code})
		if ex.Status != "succeeded" || len(ex.Stdout) < 1<<19 || len(ex.Files) != 25 || len(ex.Results) == 0 {
			t.Fatalf("run: %s, stdout %d bytes, %d files, %d results, %+v", ex.Status, len(ex.Stdout), len(ex.Files), len(ex.Results), ex.Error)
		}
		ids = append([]string{ex.ID}, ids...)
	}
	for _, q := range []url.Values{{"limit": {"100"}}, {"limit": {"100"}, "thread_id": {"flood"}}, {"limit": {"100"}, "status": {"succeeded"}}} {
		p := s.list(t, q)
		if len(p.Items) != 3 || p.NextCursor != "" {
			t.Fatalf("%v: %d items, next %q", q, len(p.Items), p.NextCursor)
		}
		if p.bytes > 3*32<<10 {
			t.Errorf("%v: a page of 3 executions is %d bytes, want at most 32 KiB each", q, p.bytes)
		}
		for i, ex := range p.Items {
			if ex.ID != ids[i] || len(ex.Stdout) > 1024 || len(ex.Stderr) > 1024 || !ex.StdoutTruncated || len(ex.Results) != 0 || len(ex.Files) != 20 {
				t.Errorf("%v: item %d: %s stdout %d bytes (truncated %v), stderr %d, %d results, %d files; want %s cut to 1 KiB, no results, 20 files",
					q, i, ex.ID, len(ex.Stdout), ex.StdoutTruncated, len(ex.Stderr), len(ex.Results), len(ex.Files), ids[i])
			}
		}
	}
	var full execution
	if code := s.call(t, "GET", "/v1/executions/"+ids[0], nil, &full); code != 200 || len(full.Stdout) < 1<<19 || len(full.Files) != 25 || len(full.Results) == 0 {
		t.Errorf("GET after listing: %d, stdout %d bytes, %d files, %d results; want it whole", code, len(full.Stdout), len(full.Files), len(full.Results))
	}
}

// TestAbuseListSkipsThreadOperations: thread operations interleaved with executions,
// and the operation ids an older version put in the listing indexes (more than a
// listing used to read per call), never appear in listings, and every cursor pages on.
func TestAbuseListSkipsThreadOperations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, stackOptions{})
	var want []string
	for i := range 3 {
		ex := s.run(t, map[string]any{"thread_id": "ops", "code": fmt.Sprintf("print(%d)", i)})
		want = append([]string{ex.ID}, want...)
		req, _ := http.NewRequest("PUT", s.url+fmt.Sprintf("/v1/threads/ops/files/in%d.txt", i), strings.NewReader("data"))
		req.Header.Set("Authorization", "Bearer key-a")
		resp, err := s.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT: %d", resp.StatusCode)
		}
		if code := s.call(t, "GET", fmt.Sprintf("/v1/threads/ops/files/in%d.txt?inline=1", i), nil, nil); code != http.StatusOK {
			t.Fatalf("GET file: %d", code)
		}
	}
	// What an older version left: every operation in the tenant's and the thread's
	// indexes, and many more ids of operations long gone.
	var ops []string
	iter := s.rdb.Scan(ctx, 0, "ci:ex:op_*", 100).Iterator()
	for iter.Next(ctx) {
		ops = append(ops, strings.TrimPrefix(iter.Val(), "ci:ex:"))
	}
	if iter.Err() != nil || len(ops) < 6 {
		t.Fatalf("found %d operation records (%v), want the puts and gets", len(ops), iter.Err())
	}
	for _, id := range ops {
		s.rdb.ZAdd(ctx, "ci:ten:acme:ex", redis.Z{Member: id})
		s.rdb.ZAdd(ctx, "ci:t:acme/ops:ex", redis.Z{Member: id})
	}
	pipe := s.rdb.Pipeline()
	for i := range 2500 {
		pipe.ZAdd(ctx, "ci:ten:acme:ex", redis.Z{Member: fmt.Sprintf("op_old%05d", i)})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	for _, q := range []url.Values{
		{"limit": {"1"}}, {"limit": {"2"}, "thread_id": {"ops"}}, {"limit": {"100"}}, {"limit": {"1"}, "status": {"succeeded"}},
	} {
		got := s.listAll(t, q, func(p listPage) {
			if p.NextCursor != "" && !strings.HasPrefix(p.NextCursor, "ex_") {
				t.Errorf("%v: cursor %q is not an execution's", q, p.NextCursor)
			}
		})
		if !slices.Equal(got, want) {
			t.Errorf("%v: listed %q, want the executions %q", q, got, want)
		}
	}
}

// TestAbuseListStatusFilter: a status filter over many records finds the few that
// match in one call, and pages through the many that match with bounded pages.
func TestAbuseListStatusFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, stackOptions{noWorkers: true})
	store := func(status jobs.Status, stdout string) string {
		t.Helper()
		ex := &jobs.Execution{ID: jobs.NewID(), Tenant: "acme", Language: sandbox.Python, Code: "1", Status: jobs.Queued, TimeoutMS: 1000, CreatedAt: time.Now()}
		if _, err := s.records.Create(ctx, ex, "", ""); err != nil {
			t.Fatal(err)
		}
		ex.Status, ex.Stdout = status, stdout
		now := time.Now()
		ex.FinishedAt = &now
		if ok, _, err := s.records.Transition(ctx, ex, jobs.Queued); !ok || err != nil {
			t.Fatalf("store %s: %v %v", status, ok, err)
		}
		return ex.ID
	}
	var failed, succeeded []string
	for range 3 {
		failed = append([]string{store(jobs.Failed, "boom")}, failed...)
	}
	big := strings.Repeat("s", 8<<10)
	for range 1200 {
		succeeded = append([]string{store(jobs.Succeeded, big)}, succeeded...)
	}

	p := s.list(t, url.Values{"status": {"failed"}, "limit": {"100"}})
	var got []string
	for _, ex := range p.Items {
		got = append(got, ex.ID)
	}
	if !slices.Equal(got, failed) || p.NextCursor != "" {
		t.Errorf("failed: listed %q, next %q; want %q in one call past 1200 others", got, p.NextCursor, failed)
	}
	got = s.listAll(t, url.Values{"status": {"succeeded"}, "limit": {"100"}}, func(p listPage) {
		if p.bytes > 100*4<<10 {
			t.Errorf("a page of %d succeeded executions is %d bytes, want at most 4 KiB each", len(p.Items), p.bytes)
		}
		for _, ex := range p.Items {
			if ex.Status != "succeeded" {
				t.Errorf("%s listed as succeeded is %s", ex.ID, ex.Status)
			}
		}
	})
	if !slices.Equal(got, succeeded) {
		t.Errorf("succeeded: listed %d, want %d in order", len(got), len(succeeded))
	}
}

// TestAbuseStuckExecutionsSettled: what an API that died between storing and
// queueing, a worker that died, or a lost thread item leaves queued or running is
// settled by one janitor sweep: queued one-offs are queued again and run, the rest
// end failed with WorkerLost; what may still run is left alone.
func TestAbuseStuckExecutionsSettled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, stackOptions{noWorkers: true})
	long := time.Now().Add(-time.Hour) // longer ago than CODEINTERP_STUCK_AFTER
	create := func(thread, code string) *jobs.Execution {
		t.Helper()
		ex := &jobs.Execution{ID: jobs.NewID(), Tenant: "acme", ThreadID: thread, Language: sandbox.Python, Code: code,
			Status: jobs.Queued, TimeoutMS: 10000, CreatedAt: long}
		if _, err := s.records.Create(ctx, ex, "", ""); err != nil {
			t.Fatal(err)
		}
		return ex
	}
	enqueue := jobs.NewEnqueuer(s.app.Tasks)

	// The API died before queueing it.
	orphan := create("", "print('revived')")
	// Queued properly, waiting for a worker: left alone.
	waiting := create("", "print('waited')")
	if err := enqueue.Enqueue(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	// asynq gave up on its task while the record stayed queued: queued again.
	archived := create("", "print('again')")
	if err := enqueue.Enqueue(ctx, archived); err != nil {
		t.Fatal(err)
	}
	if err := asynq.NewInspectorFromRedisClient(s.rdb).ArchiveTask(jobs.QueueTasks, archived.ID); err != nil {
		t.Fatal(err)
	}
	// Started by a worker that is gone, its task gone too.
	running := create("", "print('never')")
	now := time.Now()
	running.Status, running.StartedAt, running.Worker = jobs.Running, &now, "gone-worker"
	if ok, _, err := s.records.Transition(ctx, running, jobs.Queued); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// A thread item its dead owner took and dropped.
	lost := create("lost", "print('lost')")
	tk := jobs.NewThreadKey("acme", "lost")
	lease, _, err := s.threads.Claim(ctx, tk, "gone-worker")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{lost.ID, ""} {
		if got, err := s.threads.Next(ctx, lease); err != nil || got != want {
			t.Fatalf("next = %q, %v; want %q", got, err, want)
		}
	}
	// A thread item waiting in its queue for an owner: left alone.
	queued := create("later", "print('later')")
	// An execution that ended but stayed in the active index.
	done := create("", "1")
	done.Status = jobs.Succeeded
	if ok, _, err := s.records.Transition(ctx, done, jobs.Queued); !ok || err != nil {
		t.Fatal(ok, err)
	}
	s.rdb.ZAdd(ctx, "ci:ten:acme:active", redis.Z{Score: float64(long.UnixMilli()), Member: done.ID})

	j := s.app.Janitor(s.runtime)
	rep := j.Sweep(ctx)
	if rep.StuckRequeued != 2 || rep.StuckEnded != 2 || rep.ActiveDropped != 1 {
		t.Errorf("requeued/ended/dropped = %d/%d/%d, want 2/2/1", rep.StuckRequeued, rep.StuckEnded, rep.ActiveDropped)
	}
	for id, want := range map[string]string{running.ID: "the worker running this execution", lost.ID: "lost from its thread's queue"} {
		var ex execution
		s.call(t, "GET", "/v1/executions/"+id, nil, &ex)
		if ex.Status != "failed" || ex.Error == nil || ex.Error.Name != string(jobs.ErrWorkerLost) || !strings.Contains(ex.Error.Value, want) {
			t.Errorf("%s: %s %+v, want failed WorkerLost (%q)", id, ex.Status, ex.Error, want)
		}
	}
	s.rdb.Del(ctx, "ci:lock:stuck") // the sweep runs once per StuckAfter/2: as if that passed
	if again := j.Sweep(ctx); again.StuckRequeued != 0 || again.StuckEnded != 0 || again.ActiveDropped != 0 {
		t.Errorf("second sweep: requeued/ended/dropped = %d/%d/%d, want none", again.StuckRequeued, again.StuckEnded, again.ActiveDropped)
	}

	// A worker comes: everything that was left to run runs, once.
	s.addWorker()
	for ex, stdout := range map[*jobs.Execution]string{orphan: "revived\n", waiting: "waited\n", archived: "again\n", queued: "later\n"} {
		if got := s.wait(t, ex.ID); got.Status != "succeeded" || got.Stdout != stdout {
			t.Errorf("%s: %s %q %+v, want succeeded %q", ex.ID, got.Status, got.Stdout, got.Error, stdout)
		}
	}
	eventually(t, 30*time.Second, "no active executions left", func() bool {
		u, err := s.records.Usage(ctx, "acme")
		return err == nil && u.Active == 0
	})
}
