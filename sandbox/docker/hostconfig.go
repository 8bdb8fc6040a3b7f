package docker

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

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

// nofile bounds the open files of each process: plenty for a data stack (a pandas and
// matplotlib session holds a few dozen), while a leak fails in the code, with
// "Too many open files", long before it costs the host kernel memory.
const nofile = 4096

// hostNproc is RLIMIT_NPROC under runc, set so high that it does not bind: the pids
// cgroup (Limits.Pids) bounds each sandbox's processes instead. Without a user
// namespace the kernel counts RLIMIT_NPROC per host uid, across every container (and
// any host process of that uid), and every sandbox's code runs as uid 1000: a low
// value would let one tenant's processes make another tenant's forks fail. 65536
// binds only past 512 sandboxes of 128 pids each on one host (ten times the default
// CODEINTERP_MAX_SANDBOXES), more tasks than a host with the kernel's default pid_max
// (32768) can hold at all. It is not higher because raising a hard limit past the
// engine's own needs CAP_SYS_RESOURCE, which some engines lack (then no container
// starts): this machine kind's dockerd has 96362.
const hostNproc = 65536

// gVisor: runsc's own kernel counts RLIMIT_NPROC per sandbox, and fails a fork past
// it with EAGAIN, as the pids cgroup does under runc. The host's pids cgroup, on the
// other hand, counts gVisor's threads (under the ptrace platform several per process
// of the code, kept in a pool), and when they reach its limit the sandbox kernel
// itself dies and the workspace with it. So under runsc Limits.Pids is RLIMIT_NPROC
// and the pids cgroup is only a backstop: measured, 128 processes cost up to ~1400
// host tasks.
const (
	gvisorPidsBase   = 256
	gvisorPidsPerPid = 16
)

// processLimits returns the pids cgroup limit and RLIMIT_NPROC of a sandbox: which
// of them bounds the code's processes at Limits.Pids depends on the runtime.
func processLimits(l sandbox.Limits, runtime string) (pidsCgroup, nproc int64) {
	if isGVisor(runtime) {
		return gvisorPidsBase + gvisorPidsPerPid*l.Pids, l.Pids
	}
	return l.Pids, hostNproc
}

// isGVisor reports whether the named runtime is gVisor: runsc, or a variant
// registered as runsc-<something> (another platform or flags).
func isGVisor(runtime string) bool {
	return runtime == "runsc" || strings.HasPrefix(runtime, "runsc-")
}

// seccompProfile is the system call filter of every sandbox: Docker 20.10's
// default profile, tightened where a Python data stack needs no system call (see
// docs/DESIGN.md, "Sandbox edges and gVisor"):
//   - every rule that applies only with a capability is gone (sandboxes have none):
//     no bpf, perf_event_open, mount/umount, unshare, setns, clone with namespace
//     flags, kcmp, process_vm_*, syslog, quotactl, chroot, …;
//   - no ptrace (Docker allows it on kernels since 4.8), and personality only
//     queries or sets PER_LINUX/PER_LINUX32: ADDR_NO_RANDOMIZE cannot turn ASLR off;
//   - no io_uring (a large kernel surface nothing here uses);
//   - keyctl, add_key, request_key and userfaultfd were already denied by Docker's.
//
// Anything not listed fails with EPERM. Regenerate from Docker's profile with the
// jq program in docs/DESIGN.md. gVisor does not apply it inside its sandbox (its own
// kernel serves the calls, under its own filter on the host): see docs/DESIGN.md.
//
//go:embed seccomp.json
var seccompProfile []byte

// seccompOpt is the security option carrying the profile, compacted once.
var seccompOpt = func() string {
	var b bytes.Buffer
	if err := json.Compact(&b, seccompProfile); err != nil {
		panic("sandbox/docker: seccomp.json: " + err.Error())
	}
	return "seccomp=" + b.String()
}()

// hostConfig is the whole security posture of a sandbox in one place. runtime is
// the OCI runtime registered with the engine ("runc", "runsc"); cgroupParent the
// cgroup it goes under ("": the engine's default; see weights.go).
func hostConfig(l sandbox.Limits, workspaceVolume, runtime, cgroupParent string) *container.HostConfig {
	init := true
	pids, nproc := processLimits(l, runtime)
	fsize := l.Workspace + fsizeSlack
	return &container.HostConfig{
		Runtime:        runtime,
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges", seccompOpt},
		Init:           &init, // reaps zombies the code leaves behind
		Privileged:     false,
		IpcMode:        "private",
		Resources: container.Resources{
			CgroupParent: cgroupParent,
			CPUShares:    baseShares,
			Memory:       l.Memory,
			MemorySwap:   l.Memory, // equal to Memory: no swap
			NanoCPUs:     int64(l.CPUs * 1e9),
			PidsLimit:    &pids,
			Ulimits: []*container.Ulimit{
				// Bounds every file the code writes, /tmp's too (EFBIG past it).
				{Name: "fsize", Soft: fsize, Hard: fsize},
				// A crash dumps no core into the workspace (filling it with the
				// process's memory).
				{Name: "core", Soft: 0, Hard: 0},
				{Name: "nofile", Soft: nofile, Hard: nofile},
				{Name: "nproc", Soft: nproc, Hard: nproc},
			},
		},
		Tmpfs: map[string]string{
			"/tmp":      fmt.Sprintf("rw,nosuid,nodev,size=%d,mode=1777", l.Tmp),
			fenceDir:    fenceTmpfs,     // the thread lease's fencing token: see fence.go
			skillsMount: skillsTmpfs(l), // skills, read-only to the code: see skills.go
		},
		Mounts: []mount.Mount{{
			Type:   mount.TypeVolume,
			Source: workspaceVolume,
			Target: "/workspace",
		}},
	}
}

// volumeOptions makes the workspace a tmpfs with a hard size: writes past it fail with
// ENOSPC. nosuid: a set-user-ID file the code makes there (or restores from a
// snapshot) never elevates; nodev: no device node opens a host device. Runtime mounts
// it when the sandbox starts and drops it when the sandbox stops, so the keeper must
// never stop while the workspace is wanted.
func volumeOptions(l sandbox.Limits) map[string]string {
	return map[string]string{
		"type":   "tmpfs",
		"device": "tmpfs",
		"o":      fmt.Sprintf("size=%d,uid=1000,gid=1000,mode=0700,nosuid,nodev", l.Workspace),
	}
}
