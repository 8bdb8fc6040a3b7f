package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/codeinterp/codeinterp/sandbox"
)

// gvisor reports whether the tests run their sandboxes under gVisor.
func gvisor() bool {
	rt := os.Getenv("CODEINTERP_SANDBOX_RUNTIME")
	return rt == "runsc" || strings.HasPrefix(rt, "runsc-")
}

// run runs a request with a generous timeout and fails the test unless it succeeds.
func run(t *testing.T, sb sandbox.Sandbox, req sandbox.Request) string {
	t.Helper()
	req.ID = "edge-" + time.Now().Format("150405.000000000")
	req.Timeout = time.Minute
	out, err := sb.Run(context.Background(), req, nil)
	if err != nil || out.Status != sandbox.Succeeded {
		t.Fatalf("%s: %+v %+v %v", req.Code, out, out.Error, err)
	}
	return out.Stdout
}

func bash(t *testing.T, sb sandbox.Sandbox, script string) string {
	t.Helper()
	return run(t, sb, sandbox.Request{Language: "bash", Code: script})
}

// Each edge of the posture holds in a real sandbox, under the runtime the tests run
// with (hostConfig's unit test says what is asked; this says what the engine and
// the runtime made of it).
func TestDockerEdges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDocker(t, "citest")
	const workspace = 8 << 20
	sb, err := d.Create(ctx, sandbox.Spec{Tenant: "acme", Limits: sandbox.Limits{Workspace: workspace}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Remove(context.Background()) })

	t.Run("ulimits", func(t *testing.T) {
		nproc := "65536" // the pids cgroup bounds processes; RLIMIT_NPROC is host-wide
		if gvisor() {
			nproc = fmt.Sprint(sandbox.DefaultPids) // gVisor's kernel counts it per sandbox
		}
		want := fmt.Sprintf("core 0 0\nnofile 4096 4096\nnproc %s %s\nfsize %d %d\n", nproc, nproc, (workspace+1<<20)/1024, (workspace+1<<20)/1024)
		got := bash(t, sb, `for o in c n u f; do echo "$(ulimit -S -$o) $(ulimit -H -$o)"; done | paste -d' ' <(printf 'core\nnofile\nnproc\nfsize\n') -`)
		if got != want {
			t.Fatalf("ulimits (soft hard):\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("nofile and fsize bind", func(t *testing.T) {
		got := run(t, sb, sandbox.Request{Code: `import errno, os
fds = []
try:
    while len(fds) < 10000:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    print("open", errno.errorcode[e.errno], len(fds) < 4096)
for fd in fds:
    os.close(fd)
fd = os.open("sparse", os.O_WRONLY | os.O_CREAT)
try:
    os.pwrite(fd, b"x", 9 << 20)
except OSError as e:
    print("write", errno.errorcode[e.errno])
os.close(fd)
os.remove("sparse")`})
		if got != "open EMFILE True\nwrite EFBIG\n" {
			t.Fatalf("%q, want EMFILE before 4096 files and EFBIG past the workspace size", got)
		}
	})

	t.Run("workspace nosuid nodev", func(t *testing.T) {
		// gVisor mounts /workspace from its gofer (which serves it from the host's
		// nosuid,nodev tmpfs) and lists only its own options; the setuid check below
		// holds there too.
		if !gvisor() {
			opts := bash(t, sb, `awk '$2 == "/workspace" {print $4}' /proc/mounts`)
			for _, o := range []string{"nosuid", "nodev"} {
				if !strings.Contains(","+strings.TrimSpace(opts)+",", ","+o+",") {
					t.Errorf("/workspace mounted %q, want %s", opts, o)
				}
			}
		}
		// A set-user-ID-root copy of id(1), put there as the engine puts files (a
		// snapshot restore strips the bit; a raw copy keeps it), runs as the code's user.
		placeSetuidID(t, sb.ID())
		got := bash(t, sb, `python3 -c 'import os; s = os.stat("suid-id"); print(s.st_uid, oct(s.st_mode & 0o7777))'; ./suid-id -u`)
		if got != "0 0o4755\n1000\n" {
			t.Errorf("setuid root file in the workspace: %q, want owner 0, mode 4755, effective uid 1000", got)
		}
	})

	t.Run("seccomp", func(t *testing.T) {
		// Each call with arguments it would accept were the call allowed.
		stdout := run(t, sb, sandbox.Request{Code: `import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
calls = {"keyctl": (250, 0), "bpf": (321, 0, 0, 0), "userfaultfd": (323, 0), "perf_event_open": (298, 0, 0, -1, -1, 0),
         "mount": (165, 0, 0, 0, 0, 0), "ptrace": (101, 0, 0, 0, 0), "unshare": (272, 0x10000000),
         "io_uring_setup": (425, 1, 0), "personality": (135, ctypes.c_ulong(0x0040000))}
for name, (nr, *args) in calls.items():
    ctypes.set_errno(0)
    r = libc.syscall(nr, *args)
    print(name, errno.errorcode.get(ctypes.get_errno(), "OK") if r == -1 else "OK")`})
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			name, result, _ := strings.Cut(line, " ")
			got[name] = result
		}
		for _, name := range []string{"keyctl", "bpf", "userfaultfd", "perf_event_open", "mount"} {
			// What would reach the host kernel fails under either runtime.
			if got[name] == "OK" || (!gvisor() && got[name] != "EPERM") {
				t.Errorf("%s: %s", name, got[name])
			}
		}
		if !gvisor() {
			// Docker's default profile allows these; ours does not.
			for _, name := range []string{"ptrace", "unshare", "io_uring_setup", "personality"} {
				if got[name] != "EPERM" {
					t.Errorf("%s: %s, want EPERM from the pinned profile", name, got[name])
				}
			}
		}
		// Under gVisor the OCI profile is not applied (see docs/DESIGN.md): ptrace,
		// unshare and io_uring are served by gVisor's own kernel, never the host's.
		t.Logf("system calls: %v", got)
	})
}

// placeSetuidID copies the sandbox's id(1) into its workspace as suid-id, owned by
// root with the set-user-ID bit, through the engine's archive API.
func placeSetuidID(t *testing.T, containerID string) {
	t.Helper()
	ctx := context.Background()
	cli := newClient(t)
	rc, _, err := cli.CopyFromContainer(ctx, containerID, "/usr/bin/id")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		t.Fatal(err)
	}
	bin, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "suid-id", Mode: 0o4755, Size: int64(len(bin)), Uid: 0, Gid: 0, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write(bin)
	tw.Close()
	if err := cli.CopyToContainer(ctx, containerID, "/workspace", &buf, container.CopyToContainerOptions{}); err != nil {
		t.Fatal(err)
	}
}
