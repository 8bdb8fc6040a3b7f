package worker

import (
	"context"
	"sync"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// pool keeps blank sandboxes ready, so a new thread's first execution, or a one-off,
// pays neither the container start nor the library imports. It is refilled in the
// background. A worker has two, both of the default profile's sandboxes alone: blank
// sandboxes for threads, recyclable ones for one-offs.
type pool struct {
	size  int
	mu    sync.Mutex
	ready []sandbox.Sandbox
	need  chan struct{} // signaled when a sandbox was taken
}

func newPool(size int) *pool { return &pool{size: size, need: make(chan struct{}, 1)} }

// take returns a blank sandbox, or nil if none is ready.
func (p *pool) take() sandbox.Sandbox {
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

// fillLoop keeps p full with what create makes until ctx ends, then removes what it
// holds.
func (r *Runner) fillLoop(ctx context.Context, p *pool, create func(context.Context) (sandbox.Sandbox, error)) {
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
			sb, err := create(ctx)
			if err != nil {
				if ctx.Err() == nil {
					r.cfg.Logger.Warn("fill warm pool", "err", err)
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
