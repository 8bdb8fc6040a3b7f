package worker

import (
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/sandboxtest"
)

func fakeBoxes(t *testing.T, n int) []sandbox.Sandbox {
	t.Helper()
	f := sandboxtest.NewFake()
	var out []sandbox.Sandbox
	for range n {
		sb, err := f.Create(t.Context(), sandbox.Spec{Recyclable: true})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sb)
	}
	return out
}

// Idle sandboxes go back only to their own tenant, newest first, within the bounds
// per tenant and in all, and leave once idle too long.
func TestRecycledBounds(t *testing.T) {
	t.Parallel()
	sb := fakeBoxes(t, 6)
	c := &recycled{perTenant: 2, max: 3}
	t0 := time.Unix(1000, 0)
	if ev := c.put("acme", "default", sb[0], t0); len(ev) != 0 {
		t.Fatalf("evicted %v", ev)
	}
	c.put("acme", "default", sb[1], t0.Add(time.Second))
	if ev := c.put("acme", "default", sb[2], t0.Add(2*time.Second)); len(ev) != 1 || ev[0] != sb[0] {
		t.Fatalf("past the tenant's bound: evicted %v, want its oldest", ev)
	}
	if got := c.take("globex", "default"); got != nil {
		t.Fatalf("globex got acme's sandbox %s", got.ID())
	}
	c.put("globex", "default", sb[3], t0.Add(3*time.Second))
	if ev := c.put("globex", "default", sb[4], t0.Add(4*time.Second)); len(ev) != 1 || ev[0] != sb[1] {
		t.Fatalf("past the total bound: evicted %v, want the oldest of all", ev)
	}
	if got := c.take("acme", "default"); got != sb[2] {
		t.Fatalf("acme took %v, want its newest", got)
	}
	if got := c.take("acme", "default"); got != nil {
		t.Fatalf("acme took %v, want none left", got.ID())
	}
	if ex := c.expired(t0.Add(4 * time.Second)); len(ex) != 1 || ex[0] != sb[3] || c.count() != 1 {
		t.Fatalf("expired %v, count %d; want globex's older one, one left", ex, c.count())
	}
	if d := c.drain(); len(d) != 1 || d[0] != sb[4] || c.count() != 0 {
		t.Fatalf("drain %v, count %d", d, c.count())
	}
}

// An idle sandbox goes back only to its tenant's one-offs in its own profile (another
// profile's has another image and other limits); the tenant's bound counts every
// profile's.
func TestRecycledByProfile(t *testing.T) {
	t.Parallel()
	sb := fakeBoxes(t, 3)
	c := &recycled{perTenant: 2, max: 8}
	t0 := time.Unix(1000, 0)
	c.put("acme", "default", sb[0], t0)
	c.put("acme", "small", sb[1], t0.Add(time.Second))
	if got := c.take("globex", "small"); got != nil {
		t.Fatalf("globex got acme's small sandbox %s", got.ID())
	}
	if got := c.take("acme", "big"); got != nil {
		t.Fatalf("acme's one-off in big got %s, of another profile", got.ID())
	}
	if got := c.take("acme", "default"); got != sb[0] {
		t.Fatalf("acme's default one-off took %v, want its default sandbox, not the newer small one", got)
	}
	c.put("acme", "default", sb[0], t0.Add(2*time.Second))
	if ev := c.put("acme", "big", sb[2], t0.Add(3*time.Second)); len(ev) != 1 || ev[0] != sb[1] {
		t.Fatalf("past the tenant's bound, across profiles: evicted %v, want its oldest (small)", ev)
	}
	if got := c.take("acme", "small"); got != nil {
		t.Fatalf("acme's small one-off took evicted %s", got.ID())
	}
}
