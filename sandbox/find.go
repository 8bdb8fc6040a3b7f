package sandbox

import (
	"context"
	"fmt"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
)

// Find adopts the running sandbox of spec's tenant and thread, if there is one: a
// sandbox whose kernel belonged to another process (a worker that died or let go of
// the thread). Whatever that kernel left running is killed and a fresh kernel started,
// so the workspace survives and the first run reports KernelRestarted. It returns
// nil, nil when the thread has no sandbox. Stopped sandboxes it finds are removed:
// their workspace died with them.
func (d *Docker) Find(ctx context.Context, spec Spec) (*Sandbox, error) {
	list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", LabelInstall+"="+d.cfg.Prefix),
		filters.Arg("label", LabelTenant+"="+spec.Tenant),
		filters.Arg("label", LabelThread+"="+spec.Thread),
	)})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes of thread %s: %w", spec.Thread, err)
	}
	var found *Sandbox
	for _, c := range list {
		info, err := d.cli.ContainerInspect(ctx, c.ID)
		if err != nil {
			continue // removed meanwhile
		}
		// Re-check the labels exactly: a loose filter must never hand one tenant's
		// sandbox to another.
		l := info.Config.Labels
		if l[LabelInstall] != d.cfg.Prefix || l[LabelTenant] != spec.Tenant || l[LabelThread] != spec.Thread {
			continue
		}
		s := &Sandbox{d: d, id: info.ID, name: trimSlash(info.Name), volume: workspaceVolume(info.Mounts), spec: spec, limits: spec.Limits.WithDefaults()}
		if found != nil || !info.State.Running {
			_ = s.Remove(ctx)
			continue
		}
		if info.State.Paused {
			if err := d.cli.ContainerUnpause(ctx, info.ID); err != nil {
				return nil, fmt.Errorf("unpause sandbox %s: %w", s.name, err)
			}
		}
		found = s
	}
	if found == nil {
		return nil, nil
	}
	found.resetKernel(ctx, nil)
	if found.kernel, err = d.startKernel(ctx, found.id, spec.Preload); err != nil {
		return nil, fmt.Errorf("start kernel in adopted sandbox %s: %w", found.name, err)
	}
	found.restartPending = true
	return found, nil
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
