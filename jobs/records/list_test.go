package records_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/sandbox"
)

// ended stores an execution of tenant acme that ended with status, after out changed
// it, and returns its id. Ids are made in order, so later ones list first.
func ended(t *testing.T, r *records.Store, thread string, status jobs.Status, out func(*jobs.Execution)) string {
	t.Helper()
	ctx := context.Background()
	ex := &jobs.Execution{ID: jobs.NewID(), Tenant: "acme", ThreadID: thread, Status: jobs.Queued, Code: "print(1)", CreatedAt: time.Now()}
	if _, err := r.Create(ctx, ex, "", ""); err != nil {
		t.Fatal(err)
	}
	if status == jobs.Queued {
		return ex.ID
	}
	ex.Status = status
	if out != nil {
		out(ex)
	}
	if ok, found, err := r.Transition(ctx, ex, jobs.Queued); !ok || err != nil {
		t.Fatalf("store %s as %s: %v %s %v", ex.ID, status, ok, found, err)
	}
	return ex.ID
}

// listAll pages through a listing, failing on a cursor that is not an execution's.
func listAll(t *testing.T, r *records.Store, opt records.ListOptions) []string {
	t.Helper()
	var ids []string
	for page := 0; ; page++ {
		items, next, err := r.List(context.Background(), "acme", opt)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		for _, ex := range items {
			ids = append(ids, ex.ID)
		}
		if next == "" {
			return ids
		}
		if !jobs.ExecutionPrefix.Of(next) {
			t.Fatalf("page %d: cursor %q is not an execution id", page, next)
		}
		if page > 100 {
			t.Fatal("listing does not end")
		}
		opt.Cursor = next
	}
}

// TestListSummariesAreBounded pins that a listed execution is a summary whose size
// does not grow with what the code printed, returned or made, and that it says what
// it left out.
func TestListSummariesAreBounded(t *testing.T) {
	t.Parallel()
	r := newRecords(t)
	huge := func(ex *jobs.Execution) {
		ex.Stdout = strings.Repeat("o", 1<<20)
		ex.Stderr = strings.Repeat("é", 1<<19) // 1 MiB of two-byte characters
		for i := range 200 {
			ex.Results = append(ex.Results, sandbox.Rich{Type: "text/plain", Text: strings.Repeat("r", 10<<10)})
			ex.Files = append(ex.Files, jobs.File{Name: fmt.Sprintf("outputs/f%03d.txt", i), Key: "k", Size: 1})
		}
		ex.Error = &sandbox.Error{Name: "ValueError", Value: strings.Repeat("v", 1<<20), Traceback: strings.Repeat("t", 1<<20)}
	}
	for range 10 {
		ended(t, r, "", jobs.Failed, huge)
	}
	small := ended(t, r, "", jobs.Succeeded, func(ex *jobs.Execution) {
		ex.Stdout, ex.Results = "hi\n", []sandbox.Rich{{Type: "text/plain", Text: "2"}}
		ex.Files = []jobs.File{{Name: "outputs/a.txt", Key: "k"}}
	})

	// A huge record is some 6 MiB: a page loads at most MaxPageBytes of them (one at
	// least), and goes on from a cursor.
	var items []*jobs.Execution
	for cursor, pages := "", 0; ; pages++ {
		got, next, err := r.List(context.Background(), "acme", records.ListOptions{Limit: 100, Cursor: cursor})
		if err != nil || len(got) == 0 || len(got) > 2 || pages > 11 {
			t.Fatalf("page %d: %d items, next %q, %v; want 1 or 2 records of ~6 MiB within %d bytes", pages, len(got), next, err, records.MaxPageBytes)
		}
		items = append(items, got...)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(items) != 11 {
		t.Fatalf("listed %d executions in all, want 11", len(items))
	}
	page, _ := json.Marshal(items)
	if len(page) > 11*32<<10 {
		t.Errorf("a page of 11 executions is %d bytes; want at most 32 KiB each", len(page))
	}
	for _, ex := range items[1:] {
		if len(ex.Stdout) > records.SummaryOutputBytes || len(ex.Stderr) > records.SummaryOutputBytes || !ex.StdoutTruncated || !ex.StderrTruncated {
			t.Errorf("%s: stdout/stderr %d/%d bytes, truncated %v/%v; want at most %d each, flagged",
				ex.ID, len(ex.Stdout), len(ex.Stderr), ex.StdoutTruncated, ex.StderrTruncated, records.SummaryOutputBytes)
		}
		if !utf8.ValidString(ex.Stderr) || len(ex.Stderr) < records.SummaryOutputBytes-1 {
			t.Errorf("%s: stderr cut to %d bytes inside a character (valid UTF-8: %v)", ex.ID, len(ex.Stderr), utf8.ValidString(ex.Stderr))
		}
		if len(ex.Results) != 0 || !ex.ResultsTruncated || len(ex.Files) != records.SummaryFiles || ex.Files[0].Name != "outputs/f000.txt" {
			t.Errorf("%s: %d results, %d files (first %q); want none, the first %d", ex.ID, len(ex.Results), len(ex.Files), ex.Files[0].Name, records.SummaryFiles)
		}
		if ex.Error == nil || ex.Error.Name != "ValueError" || len(ex.Error.Value) > records.SummaryErrorBytes || len(ex.Error.Traceback) > records.SummaryErrorBytes {
			t.Errorf("%s: error %v not cut to its name and %d bytes", ex.ID, ex.Error != nil, records.SummaryErrorBytes)
		}
	}
	// Small output is shown whole and not flagged; results are always left out.
	if s := items[0]; s.ID != small || s.Stdout != "hi\n" || s.StdoutTruncated || s.StderrTruncated || len(s.Files) != 1 || len(s.Results) != 0 {
		t.Errorf("small execution listed as %+v", s)
	}
	// The record itself is whole.
	full, err := r.Get(context.Background(), "acme", items[1].ID)
	if err != nil || len(full.Stdout) != 1<<20 || len(full.Results) != 200 || len(full.Files) != 200 {
		t.Fatalf("stored record changed by listing: %v", err)
	}
}

// TestListSkipsOperationIDs pins that operation ids an older version left in the
// listing indexes (they sort above every execution) are neither shown nor handed out
// as cursors, however many there are, and that pages still reach every execution.
func TestListSkipsOperationIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, rdb := newStore(t)
	var want []string
	for range 5 {
		want = append(want, ended(t, r, "t1", jobs.Succeeded, nil))
		// A thread operation, and the index entries an older version gave it.
		op := &jobs.Execution{ID: jobs.NewOpID(), Kind: jobs.KindPutFile, Tenant: "acme", ThreadID: "t1", Status: jobs.Queued, CreatedAt: time.Now()}
		if _, err := r.Create(ctx, op, "", ""); err != nil {
			t.Fatal(err)
		}
		rdb.ZAdd(ctx, "t:ten:acme:ex", redis.Z{Member: op.ID})
		rdb.ZAdd(ctx, "t:t:acme/t1:ex", redis.Z{Member: op.ID})
	}
	slices.Reverse(want)
	// An execution whose record expired: skipped, and dropped from the index.
	gone := jobs.NewID()
	rdb.ZAdd(ctx, "t:ten:acme:ex", redis.Z{Member: gone})
	// More operation ids than a listing used to read in one call.
	for i := range 2500 {
		rdb.ZAdd(ctx, "t:ten:acme:ex", redis.Z{Member: fmt.Sprintf("op_old%05d", i)})
	}
	for _, opt := range []records.ListOptions{
		{Limit: 2}, {Limit: 100}, {Thread: "t1", Limit: 2}, {Status: jobs.Succeeded, Limit: 3}, {Status: jobs.Queued, Limit: 3},
	} {
		got := listAll(t, r, opt)
		if opt.Status == jobs.Queued {
			if len(got) != 0 {
				t.Errorf("%+v: listed %q; operations are not executions", opt, got)
			}
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("%+v: listed %q, want %q", opt, got, want)
		}
	}
	if _, err := rdb.ZScore(ctx, "t:ten:acme:ex", gone).Result(); err != redis.Nil {
		t.Errorf("expired id still indexed: %v", err)
	}
	// A cursor that is not an execution's has no executions after it.
	if items, next, err := r.List(ctx, "acme", records.ListOptions{Limit: 5, Cursor: "op_old00001"}); err != nil || len(items) != 0 || next != "" {
		t.Errorf("operation cursor: %d items, next %q, %v", len(items), next, err)
	}
}

// TestListStatusFilterReadsStatusesOnly pins that a status filter reads the status
// field of the records it passes over, never their JSON (a record of another status
// whose JSON does not even decode does not disturb the listing), and that one call
// reads a bounded number of entries: past the bound it returns what it found with a
// cursor to go on from.
func TestListStatusFilterReadsStatusesOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, rdb := newStore(t)
	failed := []string{ended(t, r, "", jobs.Failed, nil), ended(t, r, "", jobs.Failed, nil)}
	slices.Reverse(failed)
	// Newer records of another status, more than a listing used to load in one call.
	pipe := rdb.Pipeline()
	for range 1500 {
		id := jobs.NewID()
		pipe.HSet(ctx, "t:ex:"+id, "status", string(jobs.Succeeded), "json", "{not json")
		pipe.ZAdd(ctx, "t:ten:acme:ex", redis.Z{Member: id})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	items, next, err := r.List(ctx, "acme", records.ListOptions{Status: jobs.Failed, Limit: 10})
	if err != nil {
		t.Fatalf("list failed executions: %v", err)
	}
	var got []string
	for _, ex := range items {
		got = append(got, ex.ID)
	}
	if !slices.Equal(got, failed) || next != "" {
		t.Errorf("listed %q, next %q; want %q in one call", got, next, failed)
	}

	// Many more: one call stops at its bound, and paging still reaches every match.
	for range 5000 {
		id := jobs.NewID()
		pipe.HSet(ctx, "t:ex:"+id, "status", string(jobs.Succeeded), "json", "{not json")
		pipe.ZAdd(ctx, "t:ten:acme:ex", redis.Z{Member: id})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	items, next, err = r.List(ctx, "acme", records.ListOptions{Status: jobs.Failed, Limit: 10})
	if err != nil || len(items) != 0 || !jobs.ExecutionPrefix.Of(next) {
		t.Fatalf("past the bound: %d items, next %q, %v; want none yet and a cursor", len(items), next, err)
	}
	if got := listAll(t, r, records.ListOptions{Status: jobs.Failed, Limit: 10}); !slices.Equal(got, failed) {
		t.Errorf("paged to %q, want %q", got, failed)
	}
}
