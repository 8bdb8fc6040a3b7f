package worker_test

import (
	"fmt"
	"maps"
	"testing"

	"github.com/codeinterp/codeinterp/internal/worker"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// withPools returns p with pools of these sizes on each worker.
func withPools(p jobs.Profile, warm, oneOff int) jobs.Profile {
	p.WarmPool, p.OneOffPool = warm, oneOff
	return p
}

// Each profile has the pools its configuration sizes, of sandboxes of its image and
// limits: the default profile's sized by Config.WarmPool and OneOffPool (not by its
// Profile's sizes), the others' by their Profile; a profile of size 0 has none.
func TestProfilePoolSizes(t *testing.T) {
	t.Parallel()
	big := jobs.Profile{Name: "big", Image: "img-big", Limits: sandbox.Limits{Memory: 4 << 30, CPUs: 4}}
	var spy *specSpy
	e := newEnv(t, func(c *worker.Config) {
		spy = spyOn(c)
		c.WarmPool, c.OneOffPool = 1, 0
		c.Profiles = jobs.NewProfiles(withPools(jobs.Profile{}, 5, 5), []jobs.Profile{withPools(small, 2, 1), big}, nil)
	})
	e.start()
	e.eventually(waitFor, "the pools fill", func() bool { return len(spy.created()) >= 4 })

	got := map[string]int{}
	for _, m := range spy.created() {
		kind := "one-off"
		if m.blank {
			kind = "warm"
		}
		if m.spec.Tenant != "" || m.spec.Thread != "" || m.blank == m.spec.Recyclable {
			t.Errorf("pooled sandbox %s: %+v, blank %v", m.id, m.spec, m.blank)
		}
		if m.spec.Image == small.Image && m.spec.Limits != small.Limits {
			t.Errorf("small's pooled sandbox %s has limits %+v", m.id, m.spec.Limits)
		}
		got[fmt.Sprintf("%s pool, image %q", kind, m.spec.Image)]++
	}
	want := map[string]int{`warm pool, image ""`: 1, `warm pool, image "img-small"`: 2, `one-off pool, image "img-small"`: 1}
	if !maps.Equal(got, want) {
		t.Fatalf("pooled sandboxes %v, want %v", got, want)
	}
}

// A one-off in a profile takes a sandbox of the profile's one-off pool; wiped, it
// serves its tenant's next one-off in that profile alone: neither the tenant's
// one-offs in another profile nor another tenant's in the same profile.
func TestProfileOneOffPool(t *testing.T) {
	t.Parallel()
	var spy *specSpy
	e := newEnv(t, func(c *worker.Config) {
		spy = spyOn(c)
		c.OneOffPool, c.Recycle = 1, true
		c.Profiles = jobs.NewProfiles(jobs.Profile{}, []jobs.Profile{withPools(small, 0, 1)}, nil)
	})
	r := e.start()
	e.eventually(waitFor, "both one-off pools fill", func() bool { return len(e.fake.Sandboxes()) == 2 })

	e.oneOffIn(r, "acme", "small")
	first := e.lastRan(nil)
	if m := spy.of(t, first.ID()); m.spec.Image != small.Image || m.spec.Limits != small.Limits || m.spec.Tenant != "" || !m.spec.Recyclable {
		t.Fatalf("acme's small one-off ran in %s, made %+v: want a sandbox of small's one-off pool", first.ID(), m.spec)
	}
	if first.Wipes() != 1 {
		t.Fatalf("acme's small sandbox wiped %d times after its one-off, want 1", first.Wipes())
	}
	e.eventually(waitFor, "small's pool refills", func() bool { return len(e.fake.Sandboxes()) == 3 })

	for _, tc := range []struct{ tenant, profile, image string }{
		{"acme", "", ""},                 // the same tenant, the default profile
		{"globex", "small", small.Image}, // another tenant, the same profile
	} {
		before := e.runCounts()
		e.oneOffIn(r, tc.tenant, tc.profile)
		got := e.lastRan(before)
		if got == first {
			t.Fatalf("%s's one-off in %q ran in acme's recycled small sandbox", tc.tenant, tc.profile)
		}
		if m := spy.of(t, got.ID()); m.spec.Image != tc.image {
			t.Fatalf("%s's one-off in %q ran in a sandbox of image %q", tc.tenant, tc.profile, m.spec.Image)
		}
	}
	before := e.runCounts()
	e.oneOffIn(r, "acme", "small")
	if again := e.lastRan(before); again != first {
		t.Fatalf("acme's second small one-off ran in %s, want its recycled %s", again.ID(), first.ID())
	}
}

// A new thread in a profile takes a blank of the profile's warm pool, never another
// profile's.
func TestProfileWarmPool(t *testing.T) {
	t.Parallel()
	var spy *specSpy
	e := newEnv(t, func(c *worker.Config) {
		spy = spyOn(c)
		c.WarmPool = 1
		c.Profiles = jobs.NewProfiles(jobs.Profile{}, []jobs.Profile{withPools(small, 1, 0)}, nil)
	})
	e.start()
	e.eventually(waitFor, "both warm pools fill", func() bool { return len(e.blanks()) == 2 })

	if got := e.wait(e.submitIn("acme", "t", "small", "1")); got.Status != jobs.Succeeded {
		t.Fatalf("thread in small: %s %+v", got.Status, got.Error)
	}
	if m := spy.of(t, e.box("acme", "t").ID()); !m.blank || m.spec.Image != small.Image || m.spec.Limits != small.Limits {
		t.Fatalf("the thread in small got a sandbox made %+v (blank %v), want a blank of small's warm pool", m.spec, m.blank)
	}
	e.eventually(waitFor, "small's warm pool refills", func() bool { return len(e.blanks()) == 2 })
	e.run("acme", "u", "1")
	if m := spy.of(t, e.box("acme", "u").ID()); !m.blank || m.spec.Image != "" {
		t.Fatalf("the thread in the default profile got a sandbox made %+v (blank %v), want a blank of the default's warm pool", m.spec, m.blank)
	}
}
