package records_test

import (
	"context"
	"errors"
	"testing"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
)

// A thread keeps the profile its first record named, atomically with the record's
// creation; operations naming none join it; a deleted thread forgets it.
func TestThreadProfile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRecords(t)
	tk := jobs.NewThreadKey("acme", "t1")
	create := func(id, profile string, kind jobs.Kind) error {
		_, err := r.Create(ctx, &jobs.Execution{ID: id, Kind: kind, Tenant: "acme", ThreadID: "t1", Profile: profile, Status: jobs.Queued}, "", "")
		return err
	}
	if p, err := r.ThreadProfile(ctx, tk); err != nil || p != "" {
		t.Fatalf("new thread: %q %v", p, err)
	}
	if err := create("ex_1", "big", jobs.KindExecution); err != nil {
		t.Fatal(err)
	}
	if p, _ := r.ThreadProfile(ctx, tk); p != "big" {
		t.Fatalf("profile %q, want big", p)
	}
	var pm *records.ProfileMismatch
	if err := create("ex_2", "default", jobs.KindExecution); !errors.As(err, &pm) || pm.Profile != "big" || pm.Thread != "t1" {
		t.Fatalf("another profile: %v", err)
	}
	if _, err := r.Get(ctx, "acme", "ex_2"); !errors.Is(err, records.ErrNotFound) {
		t.Fatalf("a refused record must not be stored: %v", err)
	}
	if err := create("ex_3", "big", jobs.KindExecution); err != nil {
		t.Fatal(err)
	}
	if err := create("op_1", "", jobs.KindPause); err != nil {
		t.Fatalf("an operation naming no profile: %v", err)
	}
	if err := r.ForgetThread(ctx, tk); err != nil {
		t.Fatal(err)
	}
	if p, _ := r.ThreadProfile(ctx, tk); p != "" {
		t.Fatalf("deleted thread still has profile %q", p)
	}
	if err := create("ex_4", "default", jobs.KindExecution); err != nil {
		t.Fatalf("a new thread of the same name: %v", err)
	}
}
