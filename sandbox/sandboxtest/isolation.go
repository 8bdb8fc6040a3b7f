package sandboxtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

func testNoNetwork(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	out := run(t, sb, py(`import socket
for host in ("1.1.1.1", "deb.debian.org"):
    try:
        socket.create_connection((host, 80), timeout=3)
        print("reached", host)
    except OSError as e:
        print("blocked", host)
print(sorted(n for _, n in socket.if_nameindex()))`))
	if !strings.Contains(out.Stdout, "blocked 1.1.1.1") || !strings.Contains(out.Stdout, "blocked deb.debian.org") || !strings.Contains(out.Stdout, "['lo']") {
		t.Fatalf("network reachable: %q", out.Stdout)
	}
}

func testNonRoot(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	out := run(t, sb, py(`import os
print(os.getuid(), os.geteuid(), os.getgid())
try:
    os.setuid(0)
    print("became root")
except PermissionError:
    print("denied")
print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])`))
	if out.Stdout != "1000 1000 1000\ndenied\n0000000000000000\n" {
		t.Fatalf("stdout=%q", out.Stdout)
	}
}

func testReadOnlyRoot(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	out := run(t, sb, py(`import errno
for p in ("/usr/evil", "/etc/evil", "/opt/codeinterp/evil"):
    try:
        open(p, "w")
        print("wrote", p)
    except OSError as e:
        print(errno.errorcode[e.errno])
open("/tmp/ok", "w").write("tmp is writable")`))
	wantStatus(t, out, sandbox.Succeeded)
	for _, line := range strings.Split(strings.TrimSpace(out.Stdout), "\n") {
		if line != "EROFS" && line != "EACCES" {
			t.Fatalf("root filesystem writable: %q", out.Stdout)
		}
	}
}

func testFiles(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	data := "a,b\n1,2\n"
	if err := sb.PutFiles(context.Background(), []sandbox.File{{Name: "./data/in.csv", Size: int64(len(data)), Body: strings.NewReader(data)}}); err != nil {
		t.Fatal(err)
	}
	out := run(t, sb, py(`import pandas as pd, os
df = pd.read_csv("data/in.csv")
os.makedirs("outputs/sub", exist_ok=True)
df.assign(c=df.a + df.b).to_csv("outputs/sub/out.csv", index=False)
open("data/in.csv", "a").write("3,4\n")  # inputs are the code's to change
open("scratch.txt", "w").write("not an output")`))
	wantStatus(t, out, sandbox.Succeeded)
	if len(out.Outputs) != 1 || out.Outputs[0] != "outputs/sub/out.csv" {
		t.Fatalf("outputs = %v", out.Outputs)
	}
	if got := readAll(t, sb, "outputs/sub/out.csv"); got != "a,b,c\n1,2,3\n" {
		t.Fatalf("out.csv = %q", got)
	}
	// A later run reports only what it changed.
	out = run(t, sb, py(`open("outputs/second.txt", "w").write("2")`))
	if len(out.Outputs) != 1 || out.Outputs[0] != "outputs/second.txt" {
		t.Fatalf("second run outputs = %v", out.Outputs)
	}
}

// Files put in are 0644, and putting them leaves the code's umask alone: a file the
// code makes afterwards has the usual mode too.
func testFileModes(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	if err := sb.PutFiles(context.Background(), []sandbox.File{{Name: "in/data.txt", Size: 1, Body: strings.NewReader("x")}}); err != nil {
		t.Fatal(err)
	}
	out := run(t, sb, py(`import os
open("mine.txt", "w").close()
os.mkdir("mydir")
print(oct(os.stat("in/data.txt").st_mode & 0o777), oct(os.stat("mine.txt").st_mode & 0o777), oct(os.stat("mydir").st_mode & 0o777))`))
	if out.Stdout != "0o644 0o644 0o755\n" {
		t.Fatalf("modes (input, code's file, code's dir): %q %+v", out.Stdout, out.Error)
	}
}

func testSymlink(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	out := run(t, sb, py(`import os
os.makedirs("outputs", exist_ok=True)
os.symlink("/etc/passwd", "outputs/passwd")
os.symlink("/etc", "outputs/etc")
open("outputs/real.txt", "w").write("real")`))
	wantStatus(t, out, sandbox.Succeeded)
	if len(out.Outputs) != 1 || out.Outputs[0] != "outputs/real.txt" {
		t.Fatalf("outputs = %v: symlinks must not be collected", out.Outputs)
	}
	for _, name := range []string{"outputs/passwd", "outputs/etc"} {
		if _, _, err := sb.OpenFile(context.Background(), name); !errors.Is(err, sandbox.ErrNotRegular) {
			t.Fatalf("OpenFile(%s) = %v, want ErrNotRegular", name, err)
		}
	}
}

func testTraversal(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	for _, name := range []string{"../escape.txt", "a/../../escape.txt", "/etc/passwd", "a\x00b", "line\nbreak", ".."} {
		err := sb.PutFiles(context.Background(), []sandbox.File{{Name: name, Size: 1, Body: strings.NewReader("x")}})
		if !errors.Is(err, sandbox.ErrBadPath) {
			t.Errorf("PutFiles(%q) = %v, want ErrBadPath", name, err)
		}
		if _, _, err := sb.OpenFile(context.Background(), name); !errors.Is(err, sandbox.ErrBadPath) {
			t.Errorf("OpenFile(%q) = %v, want ErrBadPath", name, err)
		}
	}
}

func testWorkspaceFull(t *testing.T, b bundle) {
	sb := b.sandbox(t, func(s *sandbox.Spec) { s.Limits.Workspace = 4 << 20 })
	out := run(t, sb, py("open('big.bin', 'wb').write(b'x' * (8 << 20))"))
	wantStatus(t, out, sandbox.Failed)
	if out.Error == nil || !strings.Contains(out.Error.Value, "No space left") || !strings.Contains(out.Error.Value, "workspace is full") {
		t.Fatalf("error = %+v", out.Error)
	}
}

func testForkBomb(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	run(t, sb, py("x = 5"))
	// A bash run's background jobs end with it.
	run(t, sb, sandbox.Request{Language: "bash", Code: "b() { b | b & }; b", Timeout: 5 * time.Second})
	wantFewProcesses(t, sb)
	// A Python fork bomb is stopped by the timeout. Starved of CPU by its children, the
	// kernel may miss the grace period and be restarted; then the next run says so.
	out := run(t, sb, sandbox.Request{Code: "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass", Timeout: 2 * time.Second})
	wantStatus(t, out, sandbox.TimedOut)
	out = run(t, sb, py("print(x)"))
	if out.Stdout != "5\n" && !out.KernelRestarted {
		t.Fatalf("state lost without a restart: %+v %+v", out, out.Error)
	}
	wantFewProcesses(t, sb)
}

// wantFewProcesses checks that only the kernel and the checking command run as the
// code's user.
func wantFewProcesses(t *testing.T, sb sandbox.Sandbox) {
	t.Helper()
	out := run(t, sb, sandbox.Request{Language: "bash", Code: "ps -e -o user=,pid=,ppid=,args= | grep ^sandbox"})
	if n := strings.Count(out.Stdout, "\n"); n > 4 {
		t.Fatalf("%d processes of the sandbox user survive:\n%s", n, out.Stdout)
	}
}
