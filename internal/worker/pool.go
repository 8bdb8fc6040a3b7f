package worker

import (
	"context"
	"sync"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// pool keeps sandboxes of one profile ready, so a new thread's first execution, or a
// one-off, pays neither the container start nor the library imports. It is refilled
// in the background (fillLoop). A worker has up to two per profile (see newPools):
// blank sandboxes for threads, recyclable ones for one-offs.
type pool struct {
	kind    string // "warm" or "one-off", for logs
	profile string
	size    int
	create  func(context.Context) (sandbox.Sandbox, error)
	mu      sync.Mutex
	ready   []sandbox.Sandbox
	need    chan struct{} // signaled when a sandbox was taken
}

// newPools returns the warm and one-off pools, by profile name, of every profile
// with a size > 0; each creates sandboxes of its profile's image and limits. The
// default profile's sizes are Config.WarmPool and OneOffPool, the others' their
// Profile's.
func (r *Runner) newPools() (warm, oneOff map[string]*pool) {
	warm, oneOff = map[string]*pool{}, map[string]*pool{}
	for _, p := range r.cfg.Profiles.All() {
		nWarm, nOneOff := p.WarmPool, p.OneOffPool
		if p.Name == jobs.DefaultProfile {
			nWarm, nOneOff = r.cfg.WarmPool, r.cfg.OneOffPool
		}
		if nWarm > 0 {
			warm[p.Name] = &pool{kind: "warm", profile: p.Name, size: nWarm, need: make(chan struct{}, 1),
				create: func(ctx context.Context) (sandbox.Sandbox, error) {
					return r.cfg.Runtime.CreateBlank(ctx, sandbox.Spec{Owner: r.cfg.Worker, Image: p.Image, Limits: p.Limits})
				}}
		}
		if nOneOff > 0 {
			oneOff[p.Name] = &pool{kind: "one-off", profile: p.Name, size: nOneOff, need: make(chan struct{}, 1),
				create: func(ctx context.Context) (sandbox.Sandbox, error) {
					// Recyclable even when recycling is off: its zygote kernel has
					// the libraries imported, so the one-off starts sooner.
					return r.cfg.Runtime.Create(ctx, r.oneOffSpec("", p, true))
				}}
		}
	}
	return warm, oneOff
}

// take returns a ready sandbox, or nil if none is. A nil pool (a profile without
// one) has none.
func (p *pool) take() sandbox.Sandbox {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ready) == 0 {
		return nil
	}
	sb := p.ready[len(p.ready)-1]
	p.ready = p.ready[:len(p.ready)-1]
	select {
	case p.need <- struct{}{}:
	default:
	}
	return sb
}

func (p *pool) missing() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.size - len(p.ready)
}

// fillLoop keeps p full until ctx ends, then removes what it holds.
func (r *Runner) fillLoop(ctx context.Context, p *pool) {
	defer func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, sb := range p.ready {
			_ = sb.Remove(context.WithoutCancel(ctx))
		}
		p.ready = nil
	}()
	for ctx.Err() == nil {
		for p.missing() > 0 && ctx.Err() == nil {
			sb, err := p.create(ctx)
			if err != nil {
				if ctx.Err() == nil {
					r.cfg.Logger.Warn("fill pool", "pool", p.kind, "profile", p.profile, "err", err)
					r.pause(ctx, 5*time.Second)
				}
				continue
			}
			p.mu.Lock()
			p.ready = append(p.ready, sb)
			p.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-p.need:
		}
	}
}

// PoolLevel is how full one of a worker's pools is.
type PoolLevel struct {
	Profile     string
	Kind        string // "warm" (blank sandboxes for new threads) or "one-off"
	Ready, Size int
}

// PoolLevels reports every pool's level, for an operator's tooling and for tests
// that must know a pool is full before they take from it.
func (r *Runner) PoolLevels() []PoolLevel {
	var levels []PoolLevel
	for _, pools := range []map[string]*pool{r.warmPools, r.oneOffPools} {
		for _, p := range pools {
			p.mu.Lock()
			levels = append(levels, PoolLevel{Profile: p.profile, Kind: p.kind, Ready: len(p.ready), Size: p.size})
			p.mu.Unlock()
		}
	}
	return levels
}
