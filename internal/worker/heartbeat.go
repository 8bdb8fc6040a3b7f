// Package worker holds the worker binary's background services.
package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
)

// Heartbeat announces this worker in the registry every interval, as long as its
// sandbox runtime answers a ping.
type Heartbeat struct {
	Workers  *jobs.Workers
	ID       string
	Ping     func(ctx context.Context) error
	Interval time.Duration
	Logger   *slog.Logger

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start beats once right away, then in the background until Shutdown.
func (h *Heartbeat) Start(ctx context.Context) {
	ctx, h.cancel = context.WithCancel(ctx)
	h.beat(ctx)
	h.wg.Go(func() {
		t := time.NewTicker(h.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				h.beat(ctx)
			}
		}
	})
}

func (h *Heartbeat) beat(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, h.Interval)
	defer cancel()
	if err := h.Ping(ctx); err != nil {
		h.Logger.Warn("sandbox runtime not answering; not announcing this worker", "err", err)
		return
	}
	if err := h.Workers.Beat(ctx, h.ID, time.Now()); err != nil {
		h.Logger.Warn("heartbeat", "err", err)
	}
}

// Shutdown stops beating and leaves the registry.
func (h *Heartbeat) Shutdown(ctx context.Context) {
	if h.cancel != nil {
		h.cancel()
		h.wg.Wait()
	}
	_ = h.Workers.Leave(ctx, h.ID)
}
