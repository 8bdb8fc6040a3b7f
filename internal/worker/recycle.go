package worker

import (
	"context"
	"sync"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// recycled holds the wiped one-off sandboxes a worker keeps idle, each for the one
// tenant whose one-offs it served, in the one profile it was made of: it is never
// handed to another tenant, nor to a one-off in another profile (another image,
// other limits). It is bounded per tenant and in all (the oldest idle goes first),
// counting every profile's alike, and entries idle past a time are removed by the
// worker's recycle loop. Pure bookkeeping: the caller removes what it returns.
type recycled struct {
	perTenant, max int
	mu             sync.Mutex
	idle           []idleBox // oldest first
}

type idleBox struct {
	sb              sandbox.Sandbox
	tenant, profile string
	since           time.Time
}

// take returns the tenant's most recently wiped sandbox of profile, or nil.
func (c *recycled) take(tenant, profile string) sandbox.Sandbox {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.idle) - 1; i >= 0; i-- {
		if c.idle[i].tenant == tenant && c.idle[i].profile == profile {
			sb := c.idle[i].sb
			c.idle = append(c.idle[:i], c.idle[i+1:]...)
			return sb
		}
	}
	return nil
}

// put keeps a wiped sandbox of tenant in profile idle since now, and returns what no
// longer fits the bounds.
func (c *recycled) put(tenant, profile string, sb sandbox.Sandbox, now time.Time) (evicted []sandbox.Sandbox) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle = append(c.idle, idleBox{sb: sb, tenant: tenant, profile: profile, since: now})
	n := 0 // the tenant's idle sandboxes of every profile: each holds the host alike
	for _, b := range c.idle {
		if b.tenant == tenant {
			n++
		}
	}
	kept := c.idle[:0]
	for _, b := range c.idle {
		if b.tenant == tenant && n > c.perTenant {
			evicted, n = append(evicted, b.sb), n-1
			continue
		}
		kept = append(kept, b)
	}
	c.idle = kept
	for len(c.idle) > c.max {
		evicted, c.idle = append(evicted, c.idle[0].sb), c.idle[1:]
	}
	return evicted
}

// expired removes and returns the sandboxes idle since before t.
func (c *recycled) expired(t time.Time) []sandbox.Sandbox {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []sandbox.Sandbox
	kept := c.idle[:0]
	for _, b := range c.idle {
		if b.since.Before(t) {
			out = append(out, b.sb)
		} else {
			kept = append(kept, b)
		}
	}
	c.idle = kept
	return out
}

// drain removes and returns every idle sandbox.
func (c *recycled) drain() []sandbox.Sandbox { return c.expired(time.Unix(1<<62, 0)) }

// count returns how many sandboxes are idle.
func (c *recycled) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.idle)
}

// recycleLoop removes recycled sandboxes idle longer than Config.RecycleIdle until
// ctx ends, then all of them.
func (r *Runner) recycleLoop(ctx context.Context) {
	defer func() { r.removeAll(context.WithoutCancel(ctx), r.recycled.drain()) }()
	t := time.NewTicker(min(max(r.cfg.RecycleIdle/4, 100*time.Millisecond), time.Second)) // in memory: cheap
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.removeAll(ctx, r.recycled.expired(r.cfg.Now().Add(-r.cfg.RecycleIdle)))
		}
	}
}

func (r *Runner) removeAll(ctx context.Context, sbs []sandbox.Sandbox) {
	for _, sb := range sbs {
		r.removeSandbox(ctx, sb)
	}
}

// removeSandbox removes a sandbox, even when the worker is shutting down.
func (r *Runner) removeSandbox(ctx context.Context, sb sandbox.Sandbox) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := sb.Remove(ctx); err != nil {
		r.cfg.Logger.Error("remove sandbox", "sandbox", sb.ID(), "err", err)
	}
}
