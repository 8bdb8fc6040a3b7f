package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Hostile workspaces, through the HTTP API against the real stack: a linked parent
// directory leaks no file of the sandbox's image (/etc/passwd, root-only /etc/shadow)
// by GET of a thread file or by output collection, and nothing is written through it
// by PUT; a thread survives a hostile tree, and bash code past 128 KiB runs.

// notedExecution is an execution with the notes the service adds.
type notedExecution struct {
	execution
	Notes []string `json:"notes"`
}

func (s *stack) runNoted(t *testing.T, req map[string]any) notedExecution {
	t.Helper()
	id := s.submit(t, "key-a", req)
	s.wait(t, id)
	var ex notedExecution
	if code := s.call(t, "GET", "/v1/executions/"+id, nil, &ex); code != http.StatusOK {
		t.Fatalf("GET %s: %d", id, code)
	}
	return ex
}

// threadFile GETs a thread's file inline: the status and the body.
func (s *stack) threadFileInline(t *testing.T, thread, name string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/v1/threads/"+thread+"/files/"+name+"?inline=1", nil)
	req.Header.Set("Authorization", "Bearer key-a")
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (s *stack) putThreadFile(t *testing.T, thread, name, body string) {
	t.Helper()
	req, _ := http.NewRequest("PUT", s.url+"/v1/threads/"+thread+"/files/"+name, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer key-a")
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT %s: %d", name, resp.StatusCode)
	}
}

func TestHostileFilesLinkedParent(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ex := s.run(t, map[string]any{"thread_id": "links", "code": `import os
os.makedirs("outputs", exist_ok=True)
os.symlink("/etc", "outputs/etc")
os.symlink("/etc", "etc")
os.symlink("/tmp", "tmplink")
open("/tmp/target.txt", "w").write("untouched")
os.symlink("/tmp/target.txt", "outputs/target.txt")`})
	if ex.Status != "succeeded" || len(ex.Files) != 0 {
		t.Fatalf("setup: %s %+v %+v", ex.Status, ex.Error, ex.Files)
	}

	// GET through a link: no such file, whatever it points at.
	for _, name := range []string{"outputs/etc/passwd", "outputs/etc/shadow", "etc/shadow", "etc/passwd", "tmplink/target.txt", "outputs/target.txt"} {
		if code, body := s.threadFileInline(t, "links", name); code != http.StatusNotFound || strings.Contains(body, "root:") {
			t.Fatalf("GET %s: %d %q", name, code, body)
		}
	}

	// Output collection: the code forges the end of its own run, naming files through
	// the link. It keeps running meanwhile, so that the run's end (which ends every
	// other process of the user) does not cut the collection short.
	noted := s.runNoted(t, map[string]any{"thread_id": "links", "code": `import sys, time
open("outputs/real.txt", "w").write("real")
drv = sys.modules["__main__"]
drv.emit(ev="done", id=drv.State.current, status="ok", exit_code=0, error=None, cpu_ms=1, workspace=[],
         outputs=["outputs/etc/passwd", "outputs/etc/shadow", "outputs/target.txt", "outputs/real.txt", "etc/shadow"])
time.sleep(3)`})
	if noted.Status != "succeeded" || len(noted.Files) != 1 || noted.Files[0].Name != "outputs/real.txt" {
		t.Fatalf("forged outputs: %s %+v %+v", noted.Status, noted.Error, noted.Files)
	}
	if body := string(download(t, noted.Files[0].URL)); body != "real" {
		t.Fatalf("real.txt = %q", body)
	}

	// PUT under a link writes nothing outside the workspace; PUT over a link replaces
	// the link, not what it points at.
	s.putThreadFile(t, "links", "tmplink/pwned.txt", "pwned")
	s.putThreadFile(t, "links", "etc/pwned", "pwned")
	s.putThreadFile(t, "links", "outputs/target.txt", "replaced")
	ex = s.run(t, map[string]any{"thread_id": "links", "code": `import os
print(os.path.exists("/tmp/pwned.txt"), os.path.exists("/etc/pwned"), open("/tmp/target.txt").read(),
      os.path.islink("tmplink"), os.path.islink("outputs/target.txt"), open("outputs/target.txt").read())`})
	if ex.Stdout != "False False untouched True False replaced\n" {
		t.Fatalf("after PUT through links: %q %+v", ex.Stdout, ex.Error)
	}
}

// A directory 1,200 levels deep, a FIFO, names with a newline or not UTF-8, and
// 100,000 files: the run and the next ones succeed and say what was skipped, files are
// still read, and the workspace comes back after a reap.
func TestHostileFilesTreeSurvives(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ex := s.runNoted(t, map[string]any{"thread_id": "tree", "timeout_ms": 300000, "code": `import os
os.makedirs("outputs", exist_ok=True)
fd = os.open("outputs", os.O_RDONLY)
for _ in range(1200):
    os.mkdir("d", dir_fd=fd)
    nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = nfd
os.close(fd)
os.mkfifo("outputs/fifo")
open("outputs/new\nline.txt", "w").write("x")
open(b"outputs/bad\xff.txt", "w").write("x")
open("outputs/fine.txt", "w").write("fine")
os.makedirs("many")
for i in range(100000):
    os.close(os.open("many/%d" % i, os.O_WRONLY | os.O_CREAT))`})
	if ex.Status != "succeeded" || len(ex.Files) != 1 || ex.Files[0].Name != "outputs/fine.txt" {
		t.Fatalf("hostile tree: %s %+v %+v", ex.Status, ex.Error, ex.Files)
	}
	notes := strings.Join(ex.Notes, "\n")
	for _, want := range []string{"their names hold control characters", "FIFOs", "their paths pass 1024 bytes"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	start := time.Now()
	if ex := s.run(t, map[string]any{"thread_id": "tree", "code": "print('next')"}); ex.Stdout != "next\n" || ex.Sandbox.KernelRestarted {
		t.Fatalf("next run: %q %+v %+v", ex.Stdout, ex.Error, ex.Sandbox)
	}
	t.Logf("a run in the hostile workspace took %v end to end", time.Since(start))
	if th := s.thread(t, "tree"); len(th.Files) == 0 || len(th.Files) > 1000 {
		t.Fatalf("thread lists %d files", len(th.Files))
	}
	if code, body := s.threadFileInline(t, "tree", "outputs/fine.txt"); code != http.StatusOK || body != "fine" {
		t.Fatalf("GET fine.txt: %d %q", code, body)
	}
	if code, _ := s.threadFileInline(t, "tree", "outputs/fifo"); code != http.StatusNotFound {
		t.Fatalf("GET fifo: %d", code)
	}

	j := s.newJanitor(200*time.Millisecond, 700*time.Millisecond)
	name := s.runtime.ThreadName("acme", "tree")
	sweepUntil(t, j, "sandbox reaped", func() bool {
		_, exists := s.containers(t, s.prefix)[name]
		return s.thread(t, "tree").Sandbox == "none" && !exists
	})
	back := s.run(t, map[string]any{"thread_id": "tree", "code": "import os\nprint(len(os.listdir('many')), open('outputs/fine.txt').read(), os.path.isdir('outputs/d'))"})
	if back.Stdout != "100000 fine True\n" || !back.Sandbox.KernelRestarted {
		t.Fatalf("after reap and restore: %q %+v %+v", back.Stdout, back.Error, back.Sandbox)
	}
}

// Bash code past what one argument may hold (128 KiB) runs, with stdin /dev/null.
func TestHostileFilesBigBash(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	code := "read -r x; echo \"stdin $?\"\n" + strings.Repeat("y=1 # "+strings.Repeat("pad ", 30)+"\n", 3000) + "echo \"end $y\"\n"
	if len(code) < 300<<10 {
		t.Fatalf("code of %d bytes", len(code))
	}
	// Bash parses it slowly under gVisor on a busy machine (past the 30 s default).
	ex := s.run(t, map[string]any{"thread_id": "bash", "language": "bash", "code": code, "timeout_ms": 240000})
	if ex.Status != "succeeded" || ex.Stdout != "stdin 1\nend 1\n" {
		t.Fatalf("big bash: %s %q %+v", ex.Status, ex.Stdout, ex.Error)
	}
}
