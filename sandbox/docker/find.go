package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Find adopts the sandbox of spec's tenant and thread on this engine, if there is
// one: a sandbox whose kernel belonged to another process (a worker that died or let
// go of the thread). Whatever that kernel left running is killed and a fresh kernel
// started, so the workspace survives and the first run reports KernelRestarted. A
// paused sandbox is resumed. It returns nil, nil when the thread has no sandbox here;
// a stopped one is removed, since its workspace died with it.
//
// The sandbox is looked up by its name, which is derived from the exact tenant and
// thread, and its labels are checked again, so a loose match can never hand one
// tenant's sandbox to another.
func (d *Runtime) Find(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	sb, err := d.find(ctx, spec)
	if sb == nil {
		return nil, err // never a typed nil in the interface
	}
	return sb, err
}

func (d *Runtime) find(ctx context.Context, spec sandbox.Spec) (*Sandbox, error) {
	name := threadName(d.cfg.Prefix, spec.Tenant, spec.Thread)
	info, err := d.cli.ContainerInspect(ctx, name)
	if client.IsErrNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inspect sandbox of thread %s: %w", spec.Thread, err)
	}
	l := info.Config.Labels
	pooled := l[LabelPool] == "1" && l[LabelTenant] == "" && l[LabelThread] == ""
	if trimSlash(info.Name) != name || l[LabelInstall] != d.cfg.Prefix ||
		(!pooled && (l[LabelTenant] != spec.Tenant || l[LabelThread] != spec.Thread)) {
		return nil, fmt.Errorf("container %s does not belong to thread %s of %s: refusing it", name, spec.Thread, spec.Tenant)
	}
	s := &Sandbox{d: d, id: info.ID, name: name, volume: workspaceVolume(info.Mounts), egress: d.egressOf(info), spec: spec, limits: spec.Limits.WithDefaults()}
	if !info.State.Running {
		if err := s.Remove(ctx); err != nil {
			return nil, err
		}
		return nil, nil
	}
	if info.State.Paused {
		s.paused = true
		if _, err := s.Resume(ctx); err != nil {
			return nil, err
		}
	}
	if spec.Fence > 0 {
		// Before touching its processes: a newer owner may hold the thread.
		if err := s.Fence(ctx, spec.Fence); err != nil {
			return nil, fmt.Errorf("adopt sandbox %s: %w", name, err)
		}
	}
	// What the previous kernel left may still be dying (or a dead worker's last exec
	// may still land): clear it and start a kernel, a few times if need be.
	for attempt := 1; ; attempt++ {
		s.resetKernel(ctx, nil)
		if s.kernel, err = d.startKernel(ctx, s.id, kernelMode(spec), s.token); err == nil {
			break
		}
		if attempt == 3 || ctx.Err() != nil || isFencedStart(err) {
			if ferr := s.checkFence(ctx); errors.Is(ferr, sandbox.ErrFenced) {
				err = ferr // killed by the reset of a newer owner, who holds it now
			}
			return nil, fmt.Errorf("start kernel in adopted sandbox %s: %w", name, errFencedStart(name, err))
		}
	}
	s.restartPending = true
	d.weights.join(spec.Tenant, s.id, 0)
	return s, nil
}

// CreateBlank starts a sandbox that belongs to no thread yet, for a warm pool: its
// kernel is up with the libraries imported. Give it to a thread with Assign. Only
// spec's Owner, Image and Limits count.
func (d *Runtime) CreateBlank(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	sb, err := d.create(ctx, sandbox.Spec{Owner: spec.Owner, Image: spec.Image, Limits: spec.Limits, Preload: true}, true)
	if err != nil {
		return nil, err
	}
	return sb, nil
}

// Assign gives a blank sandbox to a thread: it takes the thread's name, so Find finds
// it from then on. It fails with ErrExists if the thread already has a sandbox.
func (s *Sandbox) Assign(ctx context.Context, tenant, thread string) error {
	if s.spec.Recyclable {
		return fmt.Errorf("assign sandbox %s: a recyclable one-off sandbox never serves a thread", s.name)
	}
	name := threadName(s.d.cfg.Prefix, tenant, thread)
	if err := s.d.cli.ContainerRename(ctx, s.id, name); err != nil {
		if errdefs.IsConflict(err) {
			return fmt.Errorf("%w: %s", sandbox.ErrExists, name)
		}
		return fmt.Errorf("assign sandbox %s to thread %s: %w", s.name, thread, err)
	}
	s.mu.Lock()
	s.name, s.spec.Tenant, s.spec.Thread = name, tenant, thread
	s.mu.Unlock()
	s.d.weights.join(tenant, s.id, baseShares) // a blank sandbox is created with them
	return nil
}

func workspaceVolume(mounts []container.MountPoint) string {
	for _, m := range mounts {
		if m.Destination == "/workspace" && m.Type == mount.TypeVolume {
			return m.Name
		}
	}
	return ""
}

func trimSlash(name string) string {
	if len(name) > 0 && name[0] == '/' {
		return name[1:]
	}
	return name
}

// Count returns how many thread and one-off sandboxes (not blank ones) this
// installation has on the engine, running or paused.
func (d *Runtime) Count(ctx context.Context) (int, error) {
	list, err := d.cli.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", LabelInstall+"="+d.cfg.Prefix),
	)})
	if err != nil {
		return 0, fmt.Errorf("count sandboxes: %w", err)
	}
	n := 0
	for _, c := range list {
		if c.Labels[LabelPool] != "1" || strings.HasPrefix(trimSlash(firstName(c.Names)), d.cfg.Prefix+"-t-") {
			n++
		}
	}
	return n, nil
}

func firstName(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}
