package worker_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/internal/worker"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// specSpy records what each sandbox was created as.
type specSpy struct {
	sandbox.Runtime
	mu   sync.Mutex
	made []made
}

// made is the creation of one sandbox: its spec, and whether it is a blank one made
// for a warm pool (CreateBlank).
type made struct {
	id    string
	spec  sandbox.Spec
	blank bool
}

func (s *specSpy) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	sb, err := s.Runtime.Create(ctx, spec)
	s.record(sb, err, spec, false)
	return sb, err
}

func (s *specSpy) CreateBlank(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	sb, err := s.Runtime.CreateBlank(ctx, spec)
	s.record(sb, err, spec, true)
	return sb, err
}

func (s *specSpy) record(sb sandbox.Sandbox, err error, spec sandbox.Spec, blank bool) {
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.made = append(s.made, made{id: sb.ID(), spec: spec, blank: blank})
}

// created returns every creation so far, in order.
func (s *specSpy) created() []made {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.made)
}

// of returns how the sandbox with id was created.
func (s *specSpy) of(t *testing.T, id string) made {
	t.Helper()
	for _, m := range s.created() {
		if m.id == id {
			return m
		}
	}
	t.Fatalf("sandbox %s was not created through the spy", id)
	return made{}
}

// spyOn makes the worker create its sandboxes through a spy; call from newEnv's mod.
func spyOn(c *worker.Config) *specSpy {
	spy := &specSpy{Runtime: c.Runtime}
	c.Runtime = spy
	return spy
}

var small = jobs.Profile{Name: "small", Image: "img-small", Limits: sandbox.Limits{Memory: 200 << 20, CPUs: 0.5}, DefaultTimeoutMS: 3000, MaxTimeoutMS: 5000}

// A one-off in a profile without pools gets a new sandbox of the profile's image and
// limits, never one of the default profile's pools; a thread in the profile gets one
// too, never a pooled blank.
func TestProfileSandboxes(t *testing.T) {
	t.Parallel()
	var spy *specSpy
	e := newEnv(t, func(c *worker.Config) {
		spy = spyOn(c)
		c.OneOffPool, c.WarmPool, c.Recycle = 1, 1, true
		c.Profiles = jobs.NewProfiles(jobs.Profile{}, []jobs.Profile{small}, nil)
	})
	r := e.start()
	e.eventually(waitFor, "the pools fill", func() bool { return len(e.fake.Sandboxes()) == 2 })
	pooled := len(spy.created())

	e.oneOffIn(r, "acme", "small")
	specs := spy.created()[pooled:]
	if len(specs) != 1 || specs[0].blank || specs[0].spec.Image != "img-small" || specs[0].spec.Limits != small.Limits ||
		!specs[0].spec.Recyclable || specs[0].spec.Tenant != "acme" {
		t.Fatalf("one-off sandbox specs: %+v", specs)
	}

	if got := e.wait(e.submitIn("acme", "t", "small", "1")); got.Status != jobs.Succeeded {
		t.Fatalf("thread: %s %+v", got.Status, got.Error)
	}
	specs = spy.created()[pooled+1:]
	if len(specs) != 1 || specs[0].blank || specs[0].spec.Thread != "t" || specs[0].spec.Image != "img-small" || specs[0].spec.Limits != small.Limits {
		t.Fatalf("thread sandbox specs: %+v", specs)
	}
	if n := len(e.blanks()); n != 2 { // the warm pool's and the one-off pool's
		t.Errorf("%d sandboxes given to no thread, want the two pooled ones untouched", n)
	}
}

// A record naming a profile the worker does not know fails at once, not retried.
func TestUnknownProfileFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.start()
	ex := &jobs.Execution{ID: jobs.NewID(), Tenant: "acme", Profile: "ghost", Language: sandbox.Python, Code: "1",
		Status: jobs.Queued, TimeoutMS: 3000, CreatedAt: time.Now()}
	if _, err := e.recs.Create(t.Context(), ex, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := r.ProcessOneOff(t.Context(), asynq.NewTask(jobs.TypeRun, jobs.Payload{ID: ex.ID}.Encode())); err != nil {
		t.Fatalf("returned %v: asynq would retry", err)
	}
	if got := e.wait(ex.ID); got.Status != jobs.Failed || got.Error == nil {
		t.Fatalf("one-off in an unknown profile: %s %+v", got.Status, got.Error)
	}
}
