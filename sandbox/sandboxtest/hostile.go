package sandboxtest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Hostile workspaces: the code owns its workspace and may fill it with links, FIFOs,
// odd names and deep trees, and may write anything to the kernel's protocol channel.
// None of it may reach a file the code could not read itself, nor break the sandbox.

// links sets up the links the tests below try to go through: to a root-only file's
// directory, to a directory the code may write, and to a file the code may write.
const links = `import os
os.makedirs("outputs", exist_ok=True)
os.symlink("/etc", "outputs/etc")
os.symlink("/tmp", "tmplink")
open("/tmp/target.txt", "w").write("untouched")
os.symlink("/tmp/target.txt", "outputs/target.txt")`

// No link is followed in any component of a path read from the workspace: a linked
// parent serves neither /etc/passwd nor /etc/shadow, by OpenFile or by ReadFiles.
func testLinkedParentRead(t *testing.T, b bundle) {
	ctx := context.Background()
	sb := b.sandbox(t)
	wantStatus(t, run(t, sb, py(links)), sandbox.Succeeded)
	for _, name := range []string{"outputs/etc/passwd", "outputs/etc/shadow", "tmplink/target.txt", "outputs/target.txt"} {
		rc, info, err := sb.OpenFile(ctx, name)
		if err == nil {
			data, _ := io.ReadAll(rc)
			rc.Close()
			t.Fatalf("OpenFile(%s) read %d bytes through a link: %q", name, info.Size, data)
		}
		if !errors.Is(err, sandbox.ErrNotRegular) && !errors.Is(err, sandbox.ErrNoFile) {
			t.Fatalf("OpenFile(%s) = %v, want ErrNotRegular or ErrNoFile", name, err)
		}
	}
	putText(t, sb, "outputs/real.txt", "real")
	var got []string
	err := sb.ReadFiles(ctx, []string{"outputs/etc/passwd", "outputs/real.txt", "outputs/etc/shadow", "../etc/passwd", "outputs/target.txt"},
		sandbox.ReadLimits{Each: 1 << 20, Total: 1 << 20}, func(info sandbox.FileInfo, body io.Reader, err error) error {
			if err != nil {
				got = append(got, info.Name+": error")
				return nil
			}
			data, _ := io.ReadAll(body)
			got = append(got, info.Name+": "+string(data))
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	want := "outputs/etc/passwd: error|outputs/real.txt: real|outputs/etc/shadow: error|../etc/passwd: error|outputs/target.txt: error"
	if strings.Join(got, "|") != want {
		t.Fatalf("ReadFiles read %q, want %q", got, want)
	}
	// A snapshot archives links as links: nothing they point at is in it.
	rc, err := sb.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	links := map[string]string{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if data, _ := io.ReadAll(tr); strings.Contains(string(data), "root:") || strings.HasPrefix(hdr.Name, "outputs/etc/") {
			t.Fatalf("the snapshot holds %s through a link", hdr.Name)
		}
		if hdr.Typeflag == tar.TypeSymlink {
			links[hdr.Name] = hdr.Linkname
		}
	}
	if links["outputs/etc"] != "/etc" || links["tmplink"] != "/tmp" {
		t.Fatalf("links in the snapshot: %v", links)
	}
}

// PutFiles never writes through a link: a file under a linked parent is refused, and
// a link in the file's place is replaced, not followed.
func testLinkedParentWrite(t *testing.T, b bundle) {
	ctx := context.Background()
	sb := b.sandbox(t)
	wantStatus(t, run(t, sb, py(links)), sandbox.Succeeded)
	err := sb.PutFiles(ctx, []sandbox.File{{Name: "tmplink/escaped.txt", Size: 3, Body: strings.NewReader("bad")}})
	if !errors.Is(err, sandbox.ErrBadPath) {
		t.Fatalf("PutFiles through a linked parent: %v, want ErrBadPath", err)
	}
	putText(t, sb, "outputs/target.txt", "replaced")
	out := run(t, sb, py(`import os
print(os.path.exists("/tmp/escaped.txt"), open("/tmp/target.txt").read(), os.path.islink("tmplink"),
      os.path.islink("outputs/target.txt"), open("outputs/target.txt").read())`))
	if out.Stdout != "False untouched True False replaced\n" {
		t.Fatalf("after PutFiles through links: %q %+v", out.Stdout, out.Error)
	}
}

// A restore never writes through a link: not one the archive makes, nor one already
// in the workspace; the rest of the archive is restored.
func testLinkedParentRestore(t *testing.T, b bundle) {
	ctx := context.Background()
	sb := b.sandbox(t)
	wantStatus(t, run(t, sb, py(`import os
os.symlink("/tmp", "ondisk")`)), sandbox.Succeeded)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h tar.Header, body string) {
		h.Size, h.Mode = int64(len(body)), 0o644
		if h.Typeflag == tar.TypeDir {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(body))
	}
	add(tar.Header{Typeflag: tar.TypeSymlink, Name: "inarchive", Linkname: "/tmp"}, "")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "inarchive/evil1.txt"}, "evil")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "ondisk/evil2.txt"}, "evil")
	add(tar.Header{Typeflag: tar.TypeDir, Name: "sub/"}, "")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "sub/good.txt"}, "good")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "line\nbreak.txt"}, "skipped")
	add(tar.Header{Typeflag: tar.TypeReg, Name: strings.Repeat("d/", 600) + "deep.txt"}, "skipped")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "../escape.txt"}, "skipped")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "last.txt"}, "last")
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sb.Restore(ctx, &buf); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	out := run(t, sb, py(`import os
print(sorted(os.listdir("/tmp")), os.readlink("inarchive"), open("sub/good.txt").read(), open("last.txt").read(), os.path.exists("d"))`))
	if !strings.HasSuffix(out.Stdout, " /tmp good last False\n") || strings.Contains(out.Stdout, "evil") {
		t.Fatalf("after a restore through links: %q %+v", out.Stdout, out.Error)
	}
}

// hostileTree makes a directory 1,200 levels deep, a FIFO, names with a newline and
// with bytes that are not UTF-8, and 100,000 empty files.
const hostileTree = `import os
os.makedirs("outputs", exist_ok=True)
fd = os.open("outputs", os.O_RDONLY)
for _ in range(1200):
    os.mkdir("d", dir_fd=fd)
    nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = nfd
open(os.open("deep.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd), "w").write("deep")
os.close(fd)
os.mkfifo("outputs/fifo")
open("outputs/new\nline.txt", "w").write("x")
open(b"outputs/bad\xff.txt", "w").write("x")
open("outputs/fine.txt", "w").write("fine")
os.makedirs("many")
for i in range(100000):
    os.close(os.open("many/%d" % i, os.O_WRONLY | os.O_CREAT))
print("made")`

// Hostile trees do not break the sandbox: the run that makes them and the next ones
// succeed, their listings say what they skipped, the FIFO is never opened for good,
// and a snapshot of it all restores elsewhere.
func testHostileTree(t *testing.T, b bundle) {
	ctx := context.Background()
	sb := b.sandbox(t, func(s *sandbox.Spec) { s.Limits.Memory = 1 << 30 })
	out := run(t, sb, sandbox.Request{Code: hostileTree, Timeout: 5 * time.Minute})
	wantStatus(t, out, sandbox.Succeeded)
	if out.Stdout != "made\n" || !contains(out.Outputs, "outputs/fine.txt") || len(out.Outputs) != 1 {
		t.Fatalf("stdout %q, outputs %v", out.Stdout, out.Outputs)
	}
	wantNotes := func(out sandbox.Outcome, want ...string) {
		t.Helper()
		notes := strings.Join(out.Notes, "\n")
		for _, w := range want {
			if !strings.Contains(notes, w) {
				t.Errorf("notes lack %q:\n%s", w, notes)
			}
		}
	}
	wantNotes(out, "2 workspace entries neither listed nor collected: their names hold control characters",
		"1 workspace entries neither listed nor collected: FIFOs", "1 workspace entries neither listed nor collected: their paths pass 1024 bytes")
	if len(out.Workspace) != 1000 {
		t.Errorf("listing of %d files, want the first 1000", len(out.Workspace))
	}
	out = run(t, sb, py("print('next')"))
	if out.Stdout != "next\n" || out.KernelRestarted || len(out.Outputs) != 0 {
		t.Fatalf("the run after a hostile tree: %+v", out)
	}
	wantNotes(out, "FIFOs", "paths pass 1024 bytes")
	// A walk looks at so many entries and no more, and says so.
	// (Minutes allowed: under gVisor each directory made or removed is a round trip to
	// its file server, 25,000 of them take a while on a busy machine.)
	out = run(t, sb, sandbox.Request{Code: "import os\nfor i in range(25000):\n    os.makedirs('outputs/empty/%d' % i)", Timeout: 5 * time.Minute})
	wantStatus(t, out, sandbox.Succeeded)
	wantNotes(out, "the workspace walk stopped after 20000 entries")
	wantStatus(t, run(t, sb, sandbox.Request{Language: sandbox.Bash, Code: "rm -r outputs/empty", Timeout: 5 * time.Minute}), sandbox.Succeeded)

	if _, _, err := sb.OpenFile(ctx, "outputs/fifo"); !errors.Is(err, sandbox.ErrNotRegular) {
		t.Fatalf("OpenFile of a FIFO: %v, want ErrNotRegular", err)
	}
	files, err := sb.Files(ctx)
	if err != nil || len(files) == 0 || len(files) > 1000 {
		t.Fatalf("Files: %d files, %v", len(files), err)
	}
	if got := readAll(t, sb, "outputs/fine.txt"); got != "fine" {
		t.Fatalf("fine.txt = %q", got)
	}

	rc, err := sb.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	dst := b.sandbox(t, func(s *sandbox.Spec) { s.Thread += "-restored" })
	if err := dst.Restore(ctx, rc); err != nil {
		t.Fatalf("restore of a hostile tree: %v", err)
	}
	out = run(t, dst, py(`import os
print(open("outputs/fine.txt").read(), len(os.listdir("many")), os.path.exists("outputs/fifo"), os.path.exists("outputs/d"))`))
	if out.Stdout != "fine 100000 False True\n" {
		t.Fatalf("restored hostile tree: %q %+v", out.Stdout, out.Error)
	}
}

// A workspace the code locked itself out of, or whose outputs/ is a FIFO, stops
// neither the next run nor a new kernel, nor reading its files.
func testLockedWorkspace(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	putText(t, sb, "kept.txt", "kept")
	wantStatus(t, run(t, sb, py("import os\nos.chmod('/workspace', 0)")), sandbox.Succeeded)
	if out := run(t, sb, py("print(open('kept.txt').read())")); out.Stdout != "kept\n" {
		t.Fatalf("after chmod 0 /workspace: %+v", out)
	}
	out := run(t, sb, py("import os, shutil\nshutil.rmtree('outputs')\nos.mkfifo('outputs')\nos.chmod('/workspace', 0)\nos._exit(3)"))
	if out.Status != sandbox.Failed || out.Error == nil || out.Error.Name != "KernelDied" {
		t.Fatalf("the kernel's own exit: %+v", out)
	}
	if out := run(t, sb, py("print(open('kept.txt').read())")); out.Stdout != "kept\n" || !out.KernelRestarted {
		t.Fatalf("a new kernel in a locked workspace: %+v", out)
	}
	if got := readAll(t, sb, "kept.txt"); got != "kept" {
		t.Fatalf("kept.txt = %q", got)
	}
}

// Nothing a run starts outlives it: background jobs, processes in sessions of their
// own, double-forked daemons, from bash and from Python.
func testNoSurvivors(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	run(t, sb, sandbox.Request{Language: sandbox.Bash, Code: `sleep 1001 &
setsid sleep 1002 &
( setsid sleep 1003 & ) &
nohup sleep 1004 >/dev/null 2>&1 &
disown -a`})
	wantNoSleepers(t, sb)
	run(t, sb, py(`import os, subprocess
subprocess.Popen(["setsid", "sleep", "1005"])
subprocess.Popen(["sleep", "1006"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "1007"])
    os._exit(0)
os.wait()`))
	wantNoSleepers(t, sb)
}

func wantNoSleepers(t *testing.T, sb sandbox.Sandbox) {
	t.Helper()
	out := run(t, sb, sandbox.Request{Language: sandbox.Bash, Code: "ps -e -o user=,stat=,args= | grep '^sandbox' | grep -v ' Z' | grep '[s]leep 10' || true"})
	if out.Stdout != "" {
		t.Fatalf("processes outlived their run:\n%s", out.Stdout)
	}
}

// Bash code of any size the API accepts runs (not through argv, whose arguments stop
// at 128 KiB), and its standard input is still /dev/null.
func testBigBash(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	var code strings.Builder
	code.WriteString("read -r line; echo \"stdin: $? ${line}\"\n")
	for code.Len() < 1<<20-64 {
		code.WriteString("x=1 # " + strings.Repeat("padding ", 16) + "\n")
	}
	code.WriteString("echo \"done $x\"; nope\n")
	// Bash parses 1 MiB slowly under gVisor on a busy machine: minutes allowed.
	out := run(t, sb, sandbox.Request{Language: sandbox.Bash, Code: code.String(), Timeout: 5 * time.Minute})
	if out.Stdout != "stdin: 1 \ndone 1\n" || !strings.HasPrefix(out.Stderr, "/bin/bash: line ") || out.ExitCode != 127 {
		t.Fatalf("1 MiB of bash: exit %d stdout %q stderr %q", out.ExitCode, out.Stdout, out.Stderr)
	}
}

// What the code writes to the kernel's protocol channel is its own business: events
// for another execution are dropped, and a forged end is held to the contract.
func testForgedEvents(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	out := run(t, sb, sandbox.Request{ID: "forger", Code: `import sys
drv = sys.modules["__main__"]
drv.emit(ev="stream", id="someone-else", name="stdout", text="forged output")
drv.emit(ev="result", id="someone-else", type="text/plain", text="forged result")
drv.emit(ev="done", id="someone-else", status="ok", exit_code=0, error=None, outputs=["outputs/x"], workspace=[], cpu_ms=1)
drv._proto.write(b'{"ev": "done", "id": "someone-else", "exit_code": "not a number"}\n')
print("real")`})
	if out.Stdout != "real\n" || len(out.Results) != 0 || len(out.Outputs) != 0 {
		t.Fatalf("events of another execution were taken: %+v", out)
	}
	out = run(t, sb, sandbox.Request{ID: "own", Code: `import sys
drv = sys.modules["__main__"]
drv.emit(ev="done", id="own", status="error", exit_code=2**70, cpu_ms=1e300, skipped={"bad_name": "many"},
         error={"name": "N" * 100000, "value": "v" * (2 << 20), "traceback": "t" * (4 << 20)},
         outputs=["../../etc/passwd", "/etc/shadow", "outputs/ok.txt", "outputs/ok.txt", "outputs/a\nb"] + ["outputs/%d" % i for i in range(2000)],
         workspace=[["../x", 1, 1], ["ok.txt", -5, "x"], "junk", ["y.txt", 1e300, 1e300]])`})
	if out.Error == nil {
		t.Fatalf("forged end lost its error: %+v", out)
	}
	if out.Status != sandbox.Failed || out.ExitCode != 1<<31-1 || out.CPUSeconds > 60 ||
		len(out.Error.Name) > sandbox.MaxErrorName || len(out.Error.Value) > sandbox.MaxErrorValue || len(out.Error.Traceback) > sandbox.MaxTraceback {
		t.Fatalf("forged end not bounded: status %s exit %d cpu %v error %d/%d/%d bytes", out.Status, out.ExitCode, out.CPUSeconds,
			len(out.Error.Name), len(out.Error.Value), len(out.Error.Traceback))
	}
	if len(out.Outputs) != sandbox.MaxOutputs || out.Outputs[0] != "outputs/ok.txt" || contains(out.Outputs, "/etc/shadow") {
		t.Fatalf("forged outputs: %d, first %q", len(out.Outputs), out.Outputs[:min(3, len(out.Outputs))])
	}
	for _, f := range out.Workspace {
		if f.Name == "../x" || f.Size < 0 {
			t.Fatalf("forged listing kept %+v", f)
		}
	}
	// The code goes on after its forged end; the next run waits for it no longer.
	if out := run(t, sb, py("import sys; sys.exit(2**70)")); out.Status != sandbox.Failed || out.ExitCode != 1 {
		t.Fatalf("sys.exit(2**70): %+v", out)
	}
}
