package docker

import (
	"fmt"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Users inside the sandbox. The code runs as codeUser; the keeper that holds the
// container (and so the workspace volume) alive runs as keeperUser, which the code
// cannot signal.
const (
	codeUser   = "1000:1000"
	keeperUser = "65534:65534"
)

// hostConfig is the whole security posture of a sandbox in one place.
func hostConfig(l sandbox.Limits, workspaceVolume string) *container.HostConfig {
	init := true
	pids := l.Pids
	return &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		Init:           &init, // reaps zombies the code leaves behind
		Privileged:     false,
		IpcMode:        "private",
		Resources: container.Resources{
			Memory:     l.Memory,
			MemorySwap: l.Memory, // equal to Memory: no swap
			NanoCPUs:   int64(l.CPUs * 1e9),
			PidsLimit:  &pids,
		},
		Tmpfs: map[string]string{
			"/tmp": fmt.Sprintf("rw,nosuid,nodev,size=%d,mode=1777", l.Tmp),
		},
		Mounts: []mount.Mount{{
			Type:   mount.TypeVolume,
			Source: workspaceVolume,
			Target: "/workspace",
		}},
	}
}

// volumeOptions makes the workspace a tmpfs with a hard size: writes past it fail with
// ENOSPC. Runtime mounts it when the sandbox starts and drops it when the sandbox stops,
// so the keeper must never stop while the workspace is wanted.
func volumeOptions(l sandbox.Limits) map[string]string {
	return map[string]string{
		"type":   "tmpfs",
		"device": "tmpfs",
		"o":      fmt.Sprintf("size=%d,uid=1000,gid=1000,mode=0700", l.Workspace),
	}
}
