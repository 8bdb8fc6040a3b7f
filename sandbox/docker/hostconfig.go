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

// fsizeSlack is how far past the workspace size the file size limit lies: a file
// can never be much larger than the workspace (a sparse file of a terabyte would
// otherwise cost a terabyte to snapshot or collect), while code that fills the
// workspace is still told "No space left on device", the real cause, rather than
// "File too large".
const fsizeSlack = 1 << 20

// hostConfig is the whole security posture of a sandbox in one place.
func hostConfig(l sandbox.Limits, workspaceVolume string) *container.HostConfig {
	init := true
	pids := l.Pids
	fsize := l.Workspace + fsizeSlack
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
			// Bounds every file the code writes, /tmp's too (EFBIG past it).
			Ulimits: []*container.Ulimit{{Name: "fsize", Soft: fsize, Hard: fsize}},
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
