package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cli runs the codeinterp command against the stack and returns its stdout, stderr
// and exit code.
func (s *stack) cli(t *testing.T, bin, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CODEINTERP_URL="+s.url, "CODEINTERP_API_KEY=key-a")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), 0
}

func TestCLI(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	dir := t.TempDir()
	bin := filepath.Join(dir, "codeinterp")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/codeinterp/codeinterp/cmd/codeinterp").CombinedOutput(); err != nil {
		t.Fatalf("build cli: %v\n%s", err, out)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("data.csv", "x,y\n1,2\n2,4\n3,9\n")
	write("chart.py", `import pandas as pd, matplotlib.pyplot as plt
df = pd.read_csv("data.csv")
print("rows", len(df), flush=True)
df.plot(x="x", y="y")
plt.savefig("outputs/chart.png")
plt.close()
print("saved")
`)
	stdout, stderr, code := s.cli(t, bin, dir, "run", "chart.py", "--thread", "t1", "--file", "data.csv", "--out", "results")
	if code != 0 || stdout != "rows 3\nsaved\n" || !strings.Contains(stderr, "succeeded") {
		t.Fatalf("run: exit %d\nstdout: %q\nstderr: %s", code, stdout, stderr)
	}
	png, err := os.ReadFile(filepath.Join(dir, "results", "outputs", "chart.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("chart not downloaded: %v", err)
	}

	// The thread keeps its state and files; a failure exits non-zero with the traceback.
	write("fail.py", "print(len(df))\nraise ValueError('nope')\n")
	stdout, stderr, code = s.cli(t, bin, dir, "run", "fail.py", "--thread", "t1")
	if code != 1 || stdout != "3\n" || !strings.Contains(stderr, "ValueError: nope") {
		t.Fatalf("failing run: exit %d\nstdout: %q\nstderr: %s", code, stdout, stderr)
	}
	write("slow.sh", "sleep 5")
	if _, _, code = s.cli(t, bin, dir, "run", "slow.sh", "--thread", "t1", "--timeout", "300ms"); code != 124 {
		t.Fatalf("timed out run: exit %d", code)
	}

	if stdout, _, code = s.cli(t, bin, dir, "threads", "ls"); code != 0 || !strings.Contains(stdout, "t1") {
		t.Fatalf("threads ls: %d %q", code, stdout)
	}
	write("note.txt", "hello")
	if _, stderr, code = s.cli(t, bin, dir, "files", "put", "t1", "note.txt", "docs/note.txt"); code != 0 {
		t.Fatalf("files put: %d %s", code, stderr)
	}
	if stdout, stderr, code = s.cli(t, bin, dir, "files", "get", "t1", "docs/note.txt", "-"); code != 0 || stdout != "hello" {
		t.Fatalf("files get: %d %q %s", code, stdout, stderr)
	}
	if _, stderr, code = s.cli(t, bin, dir, "threads", "rm", "t1"); code != 0 {
		t.Fatalf("threads rm: %d %s", code, stderr)
	}
	if _, _, code = s.cli(t, bin, dir, "run"); code != 2 {
		t.Fatalf("usage error: exit %d", code)
	}
}
