package docker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/sandbox"
)

// List returns every sandbox of this installation on the engine, stopped ones too.
func (d *Runtime) List(ctx context.Context) ([]sandbox.Info, error) {
	list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", LabelInstall+"="+d.cfg.Prefix),
	)})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	out := make([]sandbox.Info, 0, len(list))
	for _, c := range list {
		i := sandbox.Info{
			ID: c.ID, Name: trimSlash(firstName(c.Names)), Tenant: c.Labels[LabelTenant], Thread: c.Labels[LabelThread],
			Owner: c.Labels[LabelOwner], Created: time.Unix(c.Created, 0), Running: c.State == "running" || c.State == "paused",
			Paused: c.State == "paused",
		}
		i.OfThread = strings.HasPrefix(i.Name, d.cfg.Prefix+"-t-")
		i.Blank = c.Labels[LabelPool] == "1" && !i.OfThread
		out = append(out, i)
	}
	return out, nil
}

// ThreadName returns the container name of a thread's sandbox, to match List results
// against threads.
func (d *Runtime) ThreadName(tenant, thread string) string {
	return threadName(d.cfg.Prefix, tenant, thread)
}

// Open returns a handle on a sandbox found with List, without touching its processes
// (a paused sandbox stays paused): enough to Snapshot and Remove it.
func (d *Runtime) Open(ctx context.Context, id string) (sandbox.Sandbox, error) {
	info, err := d.cli.ContainerInspect(ctx, id)
	if client.IsErrNotFound(err) {
		return nil, fmt.Errorf("%w: %s", sandbox.ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("inspect sandbox %s: %w", id, err)
	}
	if info.Config.Labels[LabelInstall] != d.cfg.Prefix {
		return nil, fmt.Errorf("container %s is not a sandbox of %s", id, d.cfg.Prefix)
	}
	return &Sandbox{d: d, id: info.ID, name: trimSlash(info.Name), volume: workspaceVolume(info.Mounts), egress: d.egressOf(info),
		paused: info.State.Paused, limits: sandbox.Limits{}.WithDefaults()}, nil
}
