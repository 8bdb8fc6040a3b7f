package quota_test

import (
	"context"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/jobs/quota"
)

// Stored bytes are checked, then counted: a tenant under its day's quota may store
// (and pass it), and is refused once at or past it, until the next UTC day.
func TestStoredBytesPerDay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clk := counters(t, quota.Table{Default: quota.Limits{StoredBytesDay: 1000}})
	if err := c.CheckStored(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if err := c.AddStored(ctx, "acme", 1500); err != nil {
		t.Fatal(err)
	}
	e := exceeded(t, c.CheckStored(ctx, "acme"), "stored_bytes_day")
	if e.RetryAfter < 1 || e.RetryAfter > 60 { // the clock is a minute before midnight
		t.Fatalf("retry after %d s, want until midnight", e.RetryAfter)
	}
	if err := c.CheckStored(ctx, "globex"); err != nil {
		t.Fatalf("another tenant: %v", err)
	}
	clk.Advance(2 * time.Minute)
	if err := c.CheckStored(ctx, "acme"); err != nil {
		t.Fatalf("the next day: %v", err)
	}
	if n, err := c.StoredToday(ctx, "acme"); err != nil || n != 0 {
		t.Fatalf("stored the next day: %d %v", n, err)
	}
}
