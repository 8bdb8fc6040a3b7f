package docker

import (
	"slices"
	"testing"

	"github.com/codeinterp/codeinterp/sandbox"
)

// The whole security posture, checked in one place.
func TestHostConfigHardening(t *testing.T) {
	l := sandbox.Limits{}.WithDefaults()
	hc := hostConfig(l, "ws")
	if hc.NetworkMode != "none" {
		t.Errorf("network %q, want none", hc.NetworkMode)
	}
	if !hc.ReadonlyRootfs || hc.Privileged {
		t.Errorf("readonly=%v privileged=%v", hc.ReadonlyRootfs, hc.Privileged)
	}
	if !slices.Equal(hc.CapDrop, []string{"ALL"}) || len(hc.CapAdd) != 0 {
		t.Errorf("caps drop=%v add=%v", hc.CapDrop, hc.CapAdd)
	}
	if !slices.Contains(hc.SecurityOpt, "no-new-privileges") {
		t.Errorf("security opts %v", hc.SecurityOpt)
	}
	r := hc.Resources
	if r.Memory != 512<<20 || r.MemorySwap != r.Memory || r.NanoCPUs != 1e9 || r.PidsLimit == nil || *r.PidsLimit != 128 {
		t.Errorf("resources %+v", r)
	}
	if len(hc.Binds) != 0 || len(hc.Mounts) != 1 || hc.Mounts[0].Target != "/workspace" || hc.Mounts[0].Source != "ws" {
		t.Errorf("mounts %+v binds %v: only the workspace volume may be mounted", hc.Mounts, hc.Binds)
	}
	if hc.Init == nil || !*hc.Init {
		t.Error("no init process to reap zombies")
	}
	if got := volumeOptions(l)["o"]; got != "size=104857600,uid=1000,gid=1000,mode=0700" {
		t.Errorf("workspace volume options %q", got)
	}
	if keeperUser == codeUser {
		t.Error("the keeper must run as another user than the code, or the code could kill it")
	}
}

// No file may be much larger than the workspace, sparse ones included: tmpfs bounds
// the pages a file holds, not its size, and snapshots and output collection read
// files whole.
func TestHostConfigFileSizeLimit(t *testing.T) {
	for _, ws := range []int64{8 << 20, sandbox.DefaultWorkspace, 1 << 30} {
		l := sandbox.Limits{Workspace: ws}.WithDefaults()
		var fsize []int64
		for _, u := range hostConfig(l, "ws").Ulimits {
			if u.Name == "fsize" {
				fsize = append(fsize, u.Soft, u.Hard)
			}
		}
		// A little over the workspace, so filling the workspace still fails with
		// ENOSPC ("the workspace is full"), not EFBIG.
		if len(fsize) != 2 || fsize[0] != fsize[1] || fsize[0] <= ws || fsize[0] > ws+1<<20 {
			t.Errorf("workspace %d: fsize ulimit (soft, hard) %v, want one just over the workspace", ws, fsize)
		}
	}
}
