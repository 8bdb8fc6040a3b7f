package docker

import (
	"context"
	"fmt"
	"math/bits"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// CPU weights. Every sandbox sits under one cgroup parent (Config.CgroupParent), so
// all of them together weigh what one service container does: the services stay
// ahead of any number of sandboxes. Within it each tenant weighs the same however
// many sandboxes it runs here: a running sandbox of a tenant with n of them gets
// baseShares/n (rounded down to a power of two, so shares change only when a tenant's
// count crosses one, and a tenant's total stays between half and all of baseShares).
// Paused sandboxes use no CPU and do not count.
//
// The count is this Runtime's: the sandboxes its handles hold and run (the worker's).
// Several workers on one engine weigh each their own. Pooled sandboxes get their
// tenant only when assigned, so weights are set on a running container
// (ContainerUpdate); gVisor's runsc of this machine kind has no update command, so
// under it every sandbox keeps baseShares (Config.Runtime: see weights.update).
const (
	baseShares int64 = 1024
	minShares  int64 = 2 // the kernel's floor for cpu.shares
)

// sharesFor returns the cpu.shares of each running sandbox of a tenant with n.
func sharesFor(n int) int64 {
	if n <= 1 {
		return baseShares
	}
	return max(minShares, baseShares>>bits.Len(uint(n-1)))
}

// weights keeps the tenants' running sandboxes and sets their shares, in the
// background: a sandbox starting, pausing or going never waits for the engine to
// re-weigh its tenant's others.
type weights struct {
	// update sets a container's shares; nil: weights are fixed (gVisor).
	update func(ctx context.Context, id string, shares int64) error

	mu      sync.Mutex
	live    map[string]map[string]int64 // tenant → container id → shares last set (0: unknown)
	busy    map[string]bool             // a goroutine applies this tenant's weights
	pending map[string]bool             // the tenant changed while it did
}

func newWeights(update func(ctx context.Context, id string, shares int64) error) *weights {
	return &weights{update: update, live: map[string]map[string]int64{}, busy: map[string]bool{}, pending: map[string]bool{}}
}

// dockerShares sets a container's cpu.shares through the engine; nil under gVisor.
func dockerShares(cli *client.Client, runtime string) func(context.Context, string, int64) error {
	if isGVisor(runtime) {
		return nil
	}
	return func(ctx context.Context, id string, shares int64) error {
		_, err := cli.ContainerUpdate(ctx, id, container.UpdateConfig{Resources: container.Resources{CPUShares: shares}})
		return err
	}
}

// join counts a running sandbox of tenant whose shares are known (baseShares for one
// just created) or 0 (unknown: a resumed or adopted one may carry an old weight).
func (w *weights) join(tenant, id string, shares int64) {
	if w.update == nil || tenant == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.live[tenant] == nil {
		w.live[tenant] = map[string]int64{}
	}
	if _, ok := w.live[tenant][id]; ok {
		return
	}
	w.live[tenant][id] = shares
	w.changedLocked(tenant)
}

// leave stops counting a sandbox: paused, released or removed.
func (w *weights) leave(tenant, id string) {
	if w.update == nil || tenant == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.live[tenant][id]; !ok {
		return
	}
	delete(w.live[tenant], id)
	if len(w.live[tenant]) == 0 {
		delete(w.live, tenant)
		return
	}
	w.changedLocked(tenant)
}

func (w *weights) changedLocked(tenant string) {
	if w.busy[tenant] {
		w.pending[tenant] = true
		return
	}
	w.busy[tenant] = true
	go w.apply(tenant)
}

// weightTimeout bounds one update: the engine may be slow, never stuck for good.
const weightTimeout = 10 * time.Second

// apply sets the shares of the tenant's sandboxes that do not have them yet, again
// while the tenant keeps changing. Weights are best effort: a failed update (a
// container removed meanwhile, an engine hiccup) leaves the shares it had, and is
// tried again at the tenant's next change.
func (w *weights) apply(tenant string) {
	for {
		w.mu.Lock()
		delete(w.pending, tenant)
		target := sharesFor(len(w.live[tenant]))
		var ids []string
		for id, shares := range w.live[tenant] {
			if shares != target {
				ids = append(ids, id)
				w.live[tenant][id] = target
			}
		}
		w.mu.Unlock()
		for _, id := range ids {
			ctx, cancel := context.WithTimeout(context.Background(), weightTimeout)
			err := w.update(ctx, id, target)
			cancel()
			if err != nil {
				w.mu.Lock()
				if _, ok := w.live[tenant][id]; ok {
					w.live[tenant][id] = 0
				}
				w.mu.Unlock()
			}
		}
		w.mu.Lock()
		if !w.pending[tenant] {
			delete(w.busy, tenant)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// cgroupParent resolves Config.CgroupParent, asking the engine's cgroup driver once.
func (d *Runtime) cgroupParent(ctx context.Context) (string, error) {
	d.parentMu.Lock()
	defer d.parentMu.Unlock()
	if d.parent != nil {
		return *d.parent, nil
	}
	parent := d.cfg.CgroupParent
	switch parent {
	case "none":
		parent = ""
	case "":
		info, err := d.cli.Info(ctx)
		if err != nil {
			return "", fmt.Errorf("docker info (the sandboxes' cgroup parent): %w", err)
		}
		parent = "/docker/codeinterp-sandboxes"
		if info.CgroupDriver == "systemd" {
			parent = "codeinterp-sandboxes.slice"
		}
	}
	d.parent = &parent
	return parent, nil
}
