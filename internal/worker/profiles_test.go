package worker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/internal/worker"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// specSpy records the specs sandboxes are created with.
type specSpy struct {
	sandbox.Runtime
	mu    sync.Mutex
	specs []sandbox.Spec
}

func (s *specSpy) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	s.mu.Lock()
	s.specs = append(s.specs, spec)
	s.mu.Unlock()
	return s.Runtime.Create(ctx, spec)
}

func (s *specSpy) created() []sandbox.Spec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sandbox.Spec(nil), s.specs...)
}

var small = jobs.Profile{Name: "small", Image: "img-small", Limits: sandbox.Limits{Memory: 200 << 20, CPUs: 0.5}, DefaultTimeoutMS: 3000, MaxTimeoutMS: 5000}

// A one-off in another profile than the default gets a sandbox of the profile's
// image and limits, cold (the pools hold default sandboxes), never recycled; a
// thread in the profile gets one too, and never a pooled blank.
func TestProfileSandboxes(t *testing.T) {
	t.Parallel()
	var spy *specSpy
	e := newEnv(t, func(c *worker.Config) {
		spy = &specSpy{Runtime: c.Runtime}
		c.Runtime, c.OneOffPool, c.WarmPool, c.Recycle = spy, 1, 1, true
		c.Profiles = jobs.NewProfiles(jobs.Profile{}, []jobs.Profile{small}, nil)
	})
	r := e.start()
	e.eventually(waitFor, "the pools fill", func() bool { return len(e.fake.Sandboxes()) == 2 })
	pooled := len(spy.created())

	ex := &jobs.Execution{ID: jobs.NewID(), Tenant: "acme", Profile: "small", Language: sandbox.Python, Code: "1",
		Status: jobs.Queued, TimeoutMS: 3000, CreatedAt: time.Now()}
	if _, err := e.recs.Create(t.Context(), ex, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := r.ProcessOneOff(t.Context(), asynq.NewTask(jobs.TypeRun, jobs.Payload{ID: ex.ID}.Encode())); err != nil {
		t.Fatal(err)
	}
	if got := e.wait(ex.ID); got.Status != jobs.Succeeded {
		t.Fatalf("one-off: %s %+v", got.Status, got.Error)
	}
	specs := spy.created()[pooled:]
	if len(specs) != 1 || specs[0].Image != "img-small" || specs[0].Limits != small.Limits || specs[0].Recyclable {
		t.Fatalf("one-off sandbox specs: %+v", specs)
	}
	e.eventually(waitFor, "the small one-off's sandbox is removed, not recycled", func() bool { return len(e.fake.Sandboxes()) == 2 })

	// A thread created in the profile (the API records it with the first item).
	th := &jobs.Execution{ID: jobs.NewID(), Tenant: "acme", ThreadID: "t", Profile: "small", Language: sandbox.Python, Code: "1",
		Status: jobs.Queued, TimeoutMS: 3000, CreatedAt: time.Now()}
	if _, err := e.recs.Create(t.Context(), th, "", ""); err != nil {
		t.Fatal(err)
	}
	if got := e.wait(th.ID); got.Status != jobs.Succeeded {
		t.Fatalf("thread: %s %+v", got.Status, got.Error)
	}
	specs = spy.created()[pooled+1:]
	if len(specs) != 1 || specs[0].Thread != "t" || specs[0].Image != "img-small" || specs[0].Limits != small.Limits {
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
