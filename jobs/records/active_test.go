package records_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
)

// TestStaleActive pins that StaleActive finds every tenant's executions queued or
// running since before the cutoff, however many newer ones there are, that f may drop
// what it is given, and that DropActive frees the tenant's active slot.
func TestStaleActive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRecords(t)
	now := time.Now()
	create := func(tenant, thread string, created time.Time, kind jobs.Kind) string {
		t.Helper()
		id := jobs.NewID()
		if kind != jobs.KindExecution {
			id = jobs.NewOpID()
		}
		ex := &jobs.Execution{ID: id, Kind: kind, Tenant: tenant, ThreadID: thread, Status: jobs.Queued, CreatedAt: created}
		if _, err := r.Create(ctx, ex, "", ""); err != nil {
			t.Fatal(err)
		}
		return id
	}
	for range 450 {
		create("acme", "", now, jobs.KindExecution)
	}
	want := map[string]string{} // id → tenant
	for i := range 5 {
		want[create("acme", "", now.Add(-time.Hour-time.Duration(i)*time.Minute), jobs.KindExecution)] = "acme"
	}
	want[create("acme", "t1", now.Add(-time.Hour), jobs.KindExecution)] = "acme"
	want[create("globex", "", now.Add(-2*time.Hour), jobs.KindExecution)] = "globex"
	// A tenant's operations are active work too; the service's own, and deletes, are not.
	want[create("acme", "t1", now.Add(-time.Hour), jobs.KindPutFile)] = "acme"
	create("acme", "t1", now.Add(-time.Hour), jobs.KindPause)
	create("acme", "t1", now.Add(-time.Hour), jobs.KindDeleteThread)
	// One that ended is no longer active.
	endedID := create("globex", "", now.Add(-time.Hour), jobs.KindExecution)
	ex, _ := r.Get(ctx, "", endedID)
	ex.Status = jobs.Succeeded
	if ok, _, err := r.Transition(ctx, ex, jobs.Queued); !ok || err != nil {
		t.Fatal(ok, err)
	}

	got := map[string]string{}
	err := r.StaleActive(ctx, now.Add(-10*time.Minute), func(st records.Stale) error {
		if _, dup := got[st.ID]; dup {
			t.Errorf("%s given twice", st.ID)
		}
		got[st.ID] = st.Tenant
		if st.Created.After(now.Add(-time.Hour)) {
			t.Errorf("%s: created %v, not before the cutoff", st.ID, st.Created)
		}
		return r.DropActive(ctx, st.Tenant, st.ID)
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stale = %v, want %v", got, want)
	}
	for tenant, n := range map[string]int64{"acme": 450, "globex": 0} {
		if u, err := r.Usage(ctx, tenant); err != nil || u.Active != n {
			t.Errorf("%s: %d active after dropping the stale ones, want %d (%v)", tenant, u.Active, n, err)
		}
	}
}

// TestReapedThreadLeavesActivity pins that a thread whose sandbox is gone leaves the
// janitor's activity set (nothing to pause or reap) while a paused one stays, and
// that its next use brings it back.
func TestReapedThreadLeavesActivity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRecords(t)
	tk := jobs.NewThreadKey("acme", "t1")
	now := time.Now()
	active := func() bool {
		t.Helper()
		tks, err := r.ActiveThreads(ctx)
		if err != nil {
			t.Fatal(err)
		}
		idle, err := r.ActiveSince(ctx, now.Add(time.Hour), 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(tks, tk) && len(idle) == 1
	}
	if err := r.MarkActive(ctx, tk, now); err != nil || !active() {
		t.Fatalf("after MarkActive: active %v, %v", active(), err)
	}
	if err := r.SetThreadSandbox(ctx, tk, jobs.SandboxPaused, true); err != nil || !active() {
		t.Fatalf("paused: active %v, %v; want kept", active(), err)
	}
	if err := r.SetThreadSandbox(ctx, tk, jobs.SandboxNone, true); err != nil || active() {
		t.Fatalf("reaped: active %v, %v; want gone", active(), err)
	}
	if st, err := r.ThreadState(ctx, tk); err != nil || st == nil || st.Sandbox != jobs.SandboxNone || !st.Snapshot {
		t.Fatalf("reaped thread's state %+v, %v; want kept", st, err)
	}
	if err := r.MarkActive(ctx, tk, now); err != nil || !active() {
		t.Fatalf("used again: active %v, %v; want back", active(), err)
	}
}

// TestActiveSincePages pins that ActiveSince pages through every thread idle before
// the cutoff, oldest first.
func TestActiveSincePages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRecords(t)
	now := time.Now().Truncate(time.Millisecond)
	var want []jobs.ThreadKey
	for i := range 1200 {
		tk := jobs.NewThreadKey("acme", fmt.Sprintf("t%04d", i))
		if err := r.MarkActive(ctx, tk, now.Add(-time.Hour+time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		want = append(want, tk)
	}
	if err := r.MarkActive(ctx, jobs.NewThreadKey("acme", "fresh"), now); err != nil {
		t.Fatal(err)
	}
	var got []jobs.ThreadKey
	for offset := int64(0); ; offset += 500 {
		page, err := r.ActiveSince(ctx, now.Add(-time.Minute), offset, 500)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range page {
			got = append(got, a.Thread)
		}
		if len(page) < 500 {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged %d threads (first %v), want the %d idle ones in order", len(got), got[:min(3, len(got))], len(want))
	}
}
