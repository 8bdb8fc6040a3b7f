package journal

import (
	"context"
	"sync"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Runtime returns rt with every sandbox operation recorded.
func (j *Journal) Runtime(rt sandbox.Runtime) sandbox.Runtime { return &runtime{j: j, rt: rt} }

// Host returns h with every operation on the sandboxes it opens recorded.
func (j *Journal) Host(h sandbox.Host) sandbox.Host {
	return &host{j: j, h: h, names: map[string]threadOf{}, listed: map[string]sandbox.Info{}}
}

type runtime struct {
	j  *Journal
	rt sandbox.Runtime
}

func (r *runtime) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	p := r.j.begin(Entry{Op: OpCreate, Tenant: spec.Tenant, Thread: spec.Thread, Token: spec.Fence})
	sb, err := r.rt.Create(ctx, spec)
	return r.j.wrap(p, sb, err)
}

func (r *runtime) Find(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	p := r.j.begin(Entry{Op: OpFind, Tenant: spec.Tenant, Thread: spec.Thread, Token: spec.Fence})
	sb, err := r.rt.Find(ctx, spec)
	if sb == nil && err == nil {
		p.end(nil) // nothing found: an untyped nil, as callers compare it with nil
		return nil, nil
	}
	return r.j.wrap(p, sb, err)
}

func (r *runtime) CreateBlank(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	p := r.j.begin(Entry{Op: OpCreateBlank})
	sb, err := r.rt.CreateBlank(ctx, spec)
	return r.j.wrap(p, sb, err)
}

func (r *runtime) Count(ctx context.Context) (int, error) { return r.rt.Count(ctx) }
func (r *runtime) Ping(ctx context.Context) error         { return r.rt.Ping(ctx) }

// wrap ends p, the call that made or found sb, naming the sandbox, and returns sb
// journaled under p's thread and token.
func (j *Journal) wrap(p *pending, sb sandbox.Sandbox, err error) (sandbox.Sandbox, error) {
	if err != nil || sb == nil {
		p.end(err)
		return sb, err
	}
	p.e.Sandbox = sb.ID()
	p.end(nil)
	return &box{j: j, sb: sb, id: p.e.Sandbox, th: threadOf{p.e.Tenant, p.e.Thread}, token: p.e.Token}, nil
}

// threadOf names a thread; zero for a sandbox of none (yet).
type threadOf struct{ tenant, thread string }

// host journals a janitor's sandboxes. The thread a sandbox serves is found by name:
// the janitor asks ThreadName of every active thread before it opens their sandboxes,
// and a blank sandbox given to a thread carries no thread label, only the name.
type host struct {
	j *Journal
	h sandbox.Host

	mu     sync.Mutex
	names  map[string]threadOf     // sandbox name → thread, from ThreadName
	listed map[string]sandbox.Info // by id, from the last List
}

func (h *host) List(ctx context.Context) ([]sandbox.Info, error) {
	list, err := h.h.List(ctx)
	listed := make(map[string]sandbox.Info, len(list))
	for _, i := range list {
		listed[i.ID] = i
	}
	h.mu.Lock()
	// Each sweep lists, then names the active threads, then opens: names are kept
	// for one sweep.
	h.listed, h.names = listed, map[string]threadOf{}
	h.mu.Unlock()
	return list, err
}

func (h *host) ThreadName(tenant, thread string) string {
	name := h.h.ThreadName(tenant, thread)
	h.mu.Lock()
	h.names[name] = threadOf{tenant, thread}
	h.mu.Unlock()
	return name
}

func (h *host) Open(ctx context.Context, id string) (sandbox.Sandbox, error) {
	th := h.threadOfID(id)
	p := h.j.begin(Entry{Op: OpAttach, Sandbox: id, Tenant: th.tenant, Thread: th.thread})
	sb, err := h.h.Open(ctx, id)
	return h.j.wrap(p, sb, err)
}

func (h *host) threadOfID(id string) threadOf {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := h.listed[id]
	if th, ok := h.names[i.Name]; ok && i.Name != "" {
		return th
	}
	return threadOf{i.Tenant, i.Thread}
}
