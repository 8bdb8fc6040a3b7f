// Package sandboxtest pins the behaviour callers rely on from a sandbox runtime, in one
// conformance suite that every implementation (Docker today; gVisor or Kubernetes
// later) must pass, like testing/fstest does for file systems.
package sandboxtest

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Sandbox is what the suite needs of a sandbox.
type Sandbox interface {
	Run(ctx context.Context, req sandbox.Request, onEvent func(sandbox.Event)) (sandbox.Outcome, error)
	PutFiles(ctx context.Context, files []sandbox.File) error
	OpenFile(ctx context.Context, name string) (io.ReadCloser, sandbox.FileInfo, error)
	Pause(ctx context.Context) error
	Resume(ctx context.Context) (bool, error)
	Snapshot(ctx context.Context) (io.ReadCloser, error)
	Restore(ctx context.Context, archive io.Reader) error
}

// NewFunc creates a sandbox for one subtest and removes it when the test ends.
type NewFunc func(t *testing.T, spec sandbox.Spec) Sandbox

// Exercise runs the conformance suite. Subtests run in parallel, each in its own sandbox.
func Exercise(t *testing.T, newSandbox NewFunc) {
	b := bundle{newSandbox: newSandbox}
	for _, tc := range []struct {
		name string
		run  func(*testing.T, bundle)
	}{
		{"Stdout", testStdout},
		{"ExceptionIsAResult", testException},
		{"ExitCodes", testExitCodes},
		{"StateKeptBetweenRuns", testState},
		{"RichResults", testRichResults},
		{"Timeout", testTimeout},
		{"TimeoutIgnoringInterrupt", testTimeoutIgnored},
		{"Cancel", testCancel},
		{"OutOfMemory", testOOM},
		{"OutputCap", testOutputCap},
		{"NoNetwork", testNoNetwork},
		{"NonRoot", testNonRoot},
		{"ReadOnlyRoot", testReadOnlyRoot},
		{"InputAndOutputFiles", testFiles},
		{"SymlinkNotFollowed", testSymlink},
		{"PathTraversalRejected", testTraversal},
		{"WorkspaceFull", testWorkspaceFull},
		{"ForkBomb", testForkBomb},
		{"PauseResume", testPauseResume},
		{"SnapshotRestore", testSnapshotRestore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, b)
		})
	}
}

type bundle struct{ newSandbox NewFunc }

func (b bundle) sandbox(t *testing.T, mods ...func(*sandbox.Spec)) Sandbox {
	spec := sandbox.Spec{Tenant: "conformance", Thread: strings.ReplaceAll(t.Name(), "/", "-")}
	for _, m := range mods {
		m(&spec)
	}
	return b.newSandbox(t, spec)
}

// run runs code and fails the test on a service error.
func run(t *testing.T, sb Sandbox, req sandbox.Request) sandbox.Outcome {
	t.Helper()
	if req.ID == "" {
		req.ID = "run-" + time.Now().Format("150405.000000000")
	}
	if req.Timeout == 0 {
		req.Timeout = 30 * time.Second
	}
	out, err := sb.Run(context.Background(), req, nil)
	if err != nil {
		t.Fatalf("Run(%q): %v", req.Code, err)
	}
	return out
}

func py(code string) sandbox.Request { return sandbox.Request{Language: "python", Code: code} }

func wantStatus(t *testing.T, out sandbox.Outcome, want sandbox.Status) {
	t.Helper()
	if out.Status != want {
		t.Fatalf("status = %s, want %s; error=%+v stdout=%q stderr=%q", out.Status, want, out.Error, out.Stdout, out.Stderr)
	}
}

func readAll(t *testing.T, sb Sandbox, name string) string {
	t.Helper()
	rc, _, err := sb.OpenFile(context.Background(), name)
	if err != nil {
		t.Fatalf("OpenFile(%s): %v", name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func testStdout(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	var streamed strings.Builder
	out, err := sb.Run(context.Background(), sandbox.Request{ID: "r1", Code: "import sys\nprint('hello')\nprint('oops', file=sys.stderr)", Timeout: 30 * time.Second},
		func(ev sandbox.Event) {
			if ev.Kind == sandbox.Stdout {
				streamed.WriteString(ev.Text)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, out, sandbox.Succeeded)
	if out.Stdout != "hello\n" || out.Stderr != "oops\n" || streamed.String() != "hello\n" {
		t.Fatalf("stdout=%q stderr=%q streamed=%q", out.Stdout, out.Stderr, streamed.String())
	}
}

func testException(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	out := run(t, sb, py("def f():\n    return 1 / 0\n\nf()"))
	wantStatus(t, out, sandbox.Failed)
	if out.Error == nil || out.Error.Name != "ZeroDivisionError" || out.Error.Value != "division by zero" {
		t.Fatalf("error = %+v", out.Error)
	}
	tb := out.Error.Traceback
	if !strings.Contains(tb, "line 2, in f") || !strings.Contains(tb, "return 1 / 0") || strings.Contains(tb, "driver") {
		t.Fatalf("traceback should point at the user's lines only:\n%s", tb)
	}
	// The kernel survives a user's exception.
	wantStatus(t, run(t, sb, py("print(1)")), sandbox.Succeeded)
}

func testExitCodes(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	out := run(t, sb, sandbox.Request{Language: "bash", Code: "echo hi; exit 3"})
	wantStatus(t, out, sandbox.Failed)
	if out.ExitCode != 3 || out.Stdout != "hi\n" {
		t.Fatalf("bash: exit=%d stdout=%q", out.ExitCode, out.Stdout)
	}
	out = run(t, sb, py("import sys; sys.exit(4)"))
	if out.Status != sandbox.Failed || out.ExitCode != 4 {
		t.Fatalf("sys.exit(4): status=%s exit=%d", out.Status, out.ExitCode)
	}
	wantStatus(t, run(t, sb, py("import sys; sys.exit(0)")), sandbox.Succeeded)
	out = run(t, sb, py("x = (1,"))
	if out.Status != sandbox.Failed || out.Error == nil || out.Error.Name != "SyntaxError" {
		t.Fatalf("syntax error: %+v %+v", out.Status, out.Error)
	}
}

func testState(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	wantStatus(t, run(t, sb, py("x = 41")), sandbox.Succeeded)
	out := run(t, sb, py("print(x + 1)"))
	if out.Stdout != "42\n" || out.KernelRestarted {
		t.Fatalf("stdout=%q restarted=%v", out.Stdout, out.KernelRestarted)
	}
	// bash runs in the same workspace.
	run(t, sb, py("open('note.txt', 'w').write('from python')"))
	if out := run(t, sb, sandbox.Request{Language: "bash", Code: "cat note.txt"}); out.Stdout != "from python" {
		t.Fatalf("bash saw %q", out.Stdout)
	}
}

func testRichResults(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	out := run(t, sb, py("import matplotlib.pyplot as plt\nimport pandas as pd\nplt.plot([1, 2, 3])\npd.DataFrame({'a': [1, 2]})"))
	wantStatus(t, out, sandbox.Succeeded)
	types := map[string]sandbox.Rich{}
	for _, r := range out.Results {
		types[r.Type] = r
	}
	if !strings.Contains(types["text/plain"].Text, "a") || !strings.Contains(types["text/html"].Text, "<table") {
		t.Fatalf("DataFrame results missing: %+v", out.Results)
	}
	png := types["image/png"]
	if png.File == "" || !strings.HasPrefix(png.File, "outputs/") {
		t.Fatalf("figure not captured: %+v", out.Results)
	}
	if data := readAll(t, sb, png.File); !strings.HasPrefix(data, "\x89PNG") {
		t.Fatalf("%s is not a PNG", png.File)
	}
	if !contains(out.Outputs, png.File) {
		t.Fatalf("outputs %v lack %s", out.Outputs, png.File)
	}
	if out := run(t, sb, py("6 * 7")); len(out.Results) != 1 || out.Results[0].Text != "42" {
		t.Fatalf("last expression: %+v", out.Results)
	}
}

func testTimeout(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	run(t, sb, py("x = 1"))
	out := run(t, sb, sandbox.Request{Code: "while True:\n    pass", Timeout: 500 * time.Millisecond})
	wantStatus(t, out, sandbox.TimedOut)
	// The interrupt stopped the loop; state survives.
	out = run(t, sb, py("print(x)"))
	if out.Stdout != "1\n" || out.KernelRestarted {
		t.Fatalf("after timeout: stdout=%q restarted=%v", out.Stdout, out.KernelRestarted)
	}
}

func testTimeoutIgnored(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	out := run(t, sb, sandbox.Request{Code: "import time\nwhile True:\n    try:\n        time.sleep(60)\n    except KeyboardInterrupt:\n        pass", Timeout: 300 * time.Millisecond})
	wantStatus(t, out, sandbox.TimedOut)
	out = run(t, sb, py("print('alive')"))
	if out.Stdout != "alive\n" || !out.KernelRestarted {
		t.Fatalf("after kill: stdout=%q restarted=%v", out.Stdout, out.KernelRestarted)
	}
}

func testCancel(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := sb.Run(ctx, sandbox.Request{ID: "c", Code: "import time\nprint('started', flush=True)\ntime.sleep(60)"}, func(ev sandbox.Event) {
		if ev.Kind == sandbox.Stdout && strings.Contains(ev.Text, "started") {
			cancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, out, sandbox.Canceled)
	wantStatus(t, run(t, sb, py("x = 2")), sandbox.Succeeded)

	// Canceled before the code even started: it must not run on, and the kernel
	// (with its state) survives.
	done, stop := context.WithCancel(context.Background())
	stop()
	out, err = sb.Run(done, sandbox.Request{ID: "early", Code: "import time\ntime.sleep(60)"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, out, sandbox.Canceled)
	if out := run(t, sb, py("print(x)")); out.Stdout != "2\n" || out.KernelRestarted {
		t.Fatalf("after an early cancel: %q restarted=%v", out.Stdout, out.KernelRestarted)
	}
}

func testOOM(t *testing.T, b bundle) {
	sb := b.sandbox(t, func(s *sandbox.Spec) { s.Limits.Memory = 128 << 20 })
	out := run(t, sb, py("blocks = []\nwhile True:\n    blocks.append(b'x' * (16 << 20))"))
	wantStatus(t, out, sandbox.Failed)
	if out.Error == nil || !strings.Contains(strings.ToLower(out.Error.Value), "memory") {
		t.Fatalf("error should say memory: %+v", out.Error)
	}
	if out := run(t, sb, py("print('after')")); out.Stdout != "after\n" || !out.KernelRestarted {
		t.Fatalf("after OOM: stdout=%q restarted=%v", out.Stdout, out.KernelRestarted)
	}
}

func testOutputCap(t *testing.T, b bundle) {
	sb := b.sandbox(t, func(s *sandbox.Spec) { s.Limits.Output = 1000 })
	var total int
	out, err := sb.Run(context.Background(), sandbox.Request{ID: "flood", Code: "import sys\nfor i in range(1000):\n    print('é' * 99)\nsys.stderr.write('small')", Timeout: 30 * time.Second},
		func(ev sandbox.Event) {
			if ev.Kind == sandbox.Stdout {
				total += len(ev.Text)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, out, sandbox.Succeeded)
	if len(out.Stdout) > 1000 || !out.StdoutTruncated || !strings.HasPrefix(out.Stdout, "éé") {
		t.Fatalf("stdout kept %d bytes, truncated=%v", len(out.Stdout), out.StdoutTruncated)
	}
	if out.Stderr != "small" || out.StderrTruncated {
		t.Fatalf("stderr=%q truncated=%v", out.Stderr, out.StderrTruncated)
	}
	if want := 1000 * (99*2 + 1); total != want {
		t.Fatalf("events carried %d bytes, want the whole stream, %d", total, want)
	}
}

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
func wantFewProcesses(t *testing.T, sb Sandbox) {
	t.Helper()
	out := run(t, sb, sandbox.Request{Language: "bash", Code: "ps -e -o user=,pid=,ppid=,args= | grep ^sandbox"})
	if n := strings.Count(out.Stdout, "\n"); n > 4 {
		t.Fatalf("%d processes of the sandbox user survive:\n%s", n, out.Stdout)
	}
}

func testPauseResume(t *testing.T, b bundle) {
	ctx := context.Background()
	sb := b.sandbox(t)
	run(t, sb, py("x = 'kept'"))
	if err := sb.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if resumed, err := sb.Resume(ctx); err != nil || !resumed {
		t.Fatalf("Resume = %v, %v; want true", resumed, err)
	}
	if err := sb.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	// A run resumes a paused sandbox by itself; state survives the pause.
	if out := run(t, sb, py("print(x)")); out.Stdout != "kept\n" || out.KernelRestarted {
		t.Fatalf("after pause: %q restarted=%v", out.Stdout, out.KernelRestarted)
	}
	if resumed, err := sb.Resume(ctx); err != nil || resumed {
		t.Fatalf("Resume of a running sandbox = %v, %v; want false", resumed, err)
	}
}

func testSnapshotRestore(t *testing.T, b bundle) {
	ctx := context.Background()
	src := b.sandbox(t)
	run(t, src, py(`import os
os.makedirs("data/deep", exist_ok=True)
open("data/deep/a.txt", "w").write("alpha")
open("b.bin", "wb").write(bytes(range(256)) * 100)
os.symlink("data/deep/a.txt", "link")`))
	rc, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	dst := b.sandbox(t, func(s *sandbox.Spec) { s.Thread += "-restored" })
	if err := dst.Restore(ctx, rc); err != nil {
		t.Fatal(err)
	}
	out := run(t, dst, py(`import os
print(open("data/deep/a.txt").read(), len(open("b.bin", "rb").read()), os.readlink("link"))
open("data/deep/a.txt", "a").write("+")  # restored files belong to the code's user
print(sorted(os.listdir(".")))`))
	if out.Stdout != "alpha 25600 data/deep/a.txt\n['b.bin', 'data', 'link', 'outputs']\n" {
		t.Fatalf("restored workspace: %q %+v", out.Stdout, out.Error)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
