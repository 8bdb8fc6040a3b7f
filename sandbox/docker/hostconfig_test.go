package docker

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/codeinterp/codeinterp/sandbox"
)

// The whole security posture, checked in one place.
func TestHostConfigHardening(t *testing.T) {
	l := sandbox.Limits{}.WithDefaults()
	hc := hostConfig(l, "ws", "runc", "")
	if hc.Runtime != "runc" || hostConfig(l, "ws", "runsc", "").Runtime != "runsc" {
		t.Errorf("runtime %q, want the configured one", hc.Runtime)
	}
	if hc.NetworkMode != "none" {
		t.Errorf("network %q, want none", hc.NetworkMode)
	}
	if !hc.ReadonlyRootfs || hc.Privileged {
		t.Errorf("readonly=%v privileged=%v", hc.ReadonlyRootfs, hc.Privileged)
	}
	if !slices.Equal(hc.CapDrop, []string{"ALL"}) || len(hc.CapAdd) != 0 {
		t.Errorf("caps drop=%v add=%v", hc.CapDrop, hc.CapAdd)
	}
	if !slices.Contains(hc.SecurityOpt, "no-new-privileges") || !slices.Contains(hc.SecurityOpt, seccompOpt) {
		t.Errorf("security opts %.200q: want no-new-privileges and the pinned seccomp profile", hc.SecurityOpt)
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
	if got := volumeOptions(l)["o"]; got != "size=104857600,uid=1000,gid=1000,mode=0700,nosuid,nodev" {
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
		for _, u := range hostConfig(l, "ws", "runc", "").Ulimits {
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

// The other resource limits: no core dumps, a bounded file table, and Limits.Pids
// enforced where it is counted per sandbox. Under runc that is the pids cgroup, and
// RLIMIT_NPROC must not bind before it even when every sandbox on the host counts
// against it (uid 1000 without a user namespace). Under gVisor it is RLIMIT_NPROC,
// counted by the sandbox's own kernel, and the pids cgroup, which counts gVisor's
// host threads, must leave room for them.
func TestHostConfigUlimits(t *testing.T) {
	l := sandbox.Limits{}.WithDefaults()
	for _, tc := range []struct {
		runtime string
		pids    func(cgroup, nproc int64) bool
	}{
		{"runc", func(cgroup, nproc int64) bool { return cgroup == l.Pids && nproc >= 512*l.Pids }},
		{"runsc", func(cgroup, nproc int64) bool { return nproc == l.Pids && cgroup >= 12*l.Pids }},
		{"runsc-kvm", func(cgroup, nproc int64) bool { return nproc == l.Pids && cgroup >= 12*l.Pids }},
	} {
		hc := hostConfig(l, "ws", tc.runtime, "")
		got := map[string][2]int64{}
		for _, u := range hc.Ulimits {
			if _, dup := got[u.Name]; dup {
				t.Errorf("%s: ulimit %s set twice", tc.runtime, u.Name)
			}
			if u.Soft != u.Hard {
				t.Errorf("%s: ulimit %s soft %d, hard %d: the code could raise it", tc.runtime, u.Name, u.Soft, u.Hard)
			}
			got[u.Name] = [2]int64{u.Soft, u.Hard}
		}
		if got["core"] != [2]int64{0, 0} {
			t.Errorf("%s: core %v, want 0", tc.runtime, got["core"])
		}
		if n := got["nofile"][0]; n < 1024 || n > 65536 {
			t.Errorf("%s: nofile %d, want a bounded value", tc.runtime, n)
		}
		if !tc.pids(*hc.PidsLimit, got["nproc"][0]) {
			t.Errorf("%s: pids cgroup %d, nproc %d", tc.runtime, *hc.PidsLimit, got["nproc"][0])
		}
		if len(got) != 4 {
			t.Errorf("%s: ulimits %v, want fsize, core, nofile and nproc", tc.runtime, got)
		}
	}
}

// seccompRule is the part of a Docker seccomp profile rule the tests read.
type seccompRule struct {
	Names  []string `json:"names"`
	Action string   `json:"action"`
	Args   []struct {
		Value uint64 `json:"value"`
	} `json:"args"`
	Includes struct {
		Caps   []string `json:"caps"`
		Arches []string `json:"arches"`
	} `json:"includes"`
	Excludes struct {
		Caps []string `json:"caps"`
	} `json:"excludes"`
}

// The pinned profile denies by default, grants nothing through capabilities (a
// sandbox has none, and a rule that depends on one hides what is allowed), and allows
// none of the system calls a Python data stack does not need.
func TestSeccompProfile(t *testing.T) {
	var p struct {
		DefaultAction string        `json:"defaultAction"`
		Syscalls      []seccompRule `json:"syscalls"`
	}
	if err := json.Unmarshal(seccompProfile, &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" {
		t.Errorf("default action %s, want SCMP_ACT_ERRNO (EPERM)", p.DefaultAction)
	}
	allowed := map[string][]seccompRule{}
	for _, r := range p.Syscalls {
		if len(r.Includes.Caps) > 0 || len(r.Excludes.Caps) > 0 {
			t.Errorf("rule %v depends on capabilities %v %v", r.Names, r.Includes.Caps, r.Excludes.Caps)
		}
		if r.Action != "SCMP_ACT_ALLOW" || (len(r.Includes.Arches) > 0 && !slices.Contains(r.Includes.Arches, "amd64")) {
			continue
		}
		for _, n := range r.Names {
			allowed[n] = append(allowed[n], r)
		}
	}
	for _, n := range []string{
		"keyctl", "add_key", "request_key", "bpf", "userfaultfd", "perf_event_open", "ptrace",
		"process_vm_readv", "process_vm_writev", "kcmp", "unshare", "setns", "mount", "umount2",
		"fsopen", "fsmount", "move_mount", "open_tree", "pivot_root", "chroot", "syslog",
		"io_uring_setup", "io_uring_enter", "io_uring_register", "init_module", "finit_module",
		"kexec_load", "reboot", "swapon", "acct", "quotactl", "name_to_handle_at", "open_by_handle_at",
		"lookup_dcookie", "fanotify_init", "clock_settime", "settimeofday", "iopl", "ioperm",
	} {
		if len(allowed[n]) > 0 {
			t.Errorf("%s is allowed", n)
		}
	}
	// personality: queries (0xffffffff) and the plain Linux personalities only; never
	// ADDR_NO_RANDOMIZE (0x0040000), which turns ASLR off for what the code executes.
	for _, r := range allowed["personality"] {
		if len(r.Args) != 1 || !slices.Contains([]uint64{0, 8, 0xffffffff}, r.Args[0].Value) {
			t.Errorf("personality allowed with %+v", r.Args)
		}
	}
	// clone only without namespace flags (the rule's argument mask).
	for _, r := range allowed["clone"] {
		if len(r.Args) != 1 {
			t.Errorf("clone allowed without an argument filter: %+v", r)
		}
	}
	// What Python, numpy's threads, subprocesses and bash need.
	for _, n := range []string{
		"read", "write", "openat", "mmap", "mprotect", "munmap", "brk", "futex", "clone", "execve",
		"wait4", "pipe2", "dup2", "epoll_wait", "poll", "rt_sigaction", "kill", "getrandom", "prlimit64",
		"sched_getaffinity", "statx", "newfstatat", "getdents64", "fcntl", "ioctl", "socketpair",
	} {
		if len(allowed[n]) == 0 {
			t.Errorf("%s is not allowed", n)
		}
	}
}
