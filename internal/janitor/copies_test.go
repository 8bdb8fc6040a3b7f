package janitor_test

import (
	"slices"
	"testing"
	"time"
)

// A copy made for a reader is deleted once its download link has expired (the URL
// TTL and a margin after it was noted), not before, and then forgotten: the next
// sweep deletes nothing again.
func TestSweepDeletesExpiredCopies(t *testing.T) {
	e := newEnv(t)
	now := e.clock.Now()
	for prefix, at := range map[string]time.Time{
		"acme/t1/op_old/":   now.Add(-urlTTL - 6*time.Minute),
		"globex/t2/op_old/": now.Add(-urlTTL - time.Hour),
		"acme/t1/op_new/":   now.Add(-urlTTL), // its link has expired, the margin not
	} {
		if err := e.recs.NoteCopy(e.ctx, prefix, at); err != nil {
			t.Fatal(err)
		}
	}
	j := e.janitor("j1")
	if rep := j.Sweep(e.ctx); rep.CopiesDeleted != 2 {
		t.Fatalf("copies deleted: %d, want 2", rep.CopiesDeleted)
	}
	got := e.store.prefixesDeleted()
	slices.Sort(got)
	if want := []string{"acme/t1/op_old/", "globex/t2/op_old/"}; !slices.Equal(got, want) {
		t.Fatalf("deleted %q, want %q", got, want)
	}
	if rep := j.Sweep(e.ctx); rep.CopiesDeleted != 0 {
		t.Fatalf("a second sweep deleted %d copies again", rep.CopiesDeleted)
	}
	e.clock.Advance(10 * time.Minute)
	if rep := j.Sweep(e.ctx); rep.CopiesDeleted != 1 || e.store.prefixesDeleted()[2] != "acme/t1/op_new/" {
		t.Fatalf("later: %d deleted, %q", rep.CopiesDeleted, e.store.prefixesDeleted())
	}
}
