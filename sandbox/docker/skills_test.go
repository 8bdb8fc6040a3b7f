package docker_test

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

// skillArchive makes a tar of files (name → content; a name ending in "*" is
// executable) and, for every "dir/" key, a directory.
func skillArchive(t *testing.T, files map[string]string) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(body)), Mode: 0o644, ModTime: time.Now()}
		switch {
		case strings.HasSuffix(name, "/"):
			hdr = &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: time.Now()}
		case strings.HasSuffix(name, "*"):
			hdr.Name, hdr.Mode = strings.TrimSuffix(name, "*"), 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			tw.Write([]byte(body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// A skill's files are at skills/<name>/, readable and unchangeable by the code, in
// no listing and no snapshot; putting it again replaces it; a wipe removes it.
func TestDockerSkills(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDocker(t, "citest-skills")
	spec := sandbox.Spec{Tenant: "acme", Thread: "skills-" + time.Now().Format("150405.000"), Owner: "test", Fence: 7}
	sb, err := d.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Remove(context.Background()) })

	start := time.Now()
	if err := sb.PutSkill(ctx, "report", skillArchive(t, map[string]string{
		"README.md": "how to report\n", "data/": "", "data/q.csv": "a,b\n1,2\n", "bin/run.sh*": "echo ran\n",
	})); err != nil {
		t.Fatal(err)
	}
	t.Logf("first PutSkill (with the link): %v", time.Since(start))
	if err := sb.PutFiles(ctx, []sandbox.File{{Name: "mine.txt", Size: 2, Body: strings.NewReader("hi")}}); err != nil {
		t.Fatal(err)
	}
	out := bash(t, sb, `cd /workspace
cat skills/report/README.md skills/report/data/q.csv
test -x skills/report/bin/run.sh && echo exec-ok
for try in 'echo x > skills/report/README.md' 'touch skills/report/new' 'rm -f skills/report/README.md' \
  'chmod 666 skills/report/README.md' 'mv skills/report skills/other' 'mkdir skills/mine' 'rm -rf skills/report/data'; do
  if bash -c "$try" 2>/dev/null; then echo "ALLOWED: $try"; fi
done
python3 -c "open('skills/report/README.md', 'a')" 2>&1 | tail -1
find -L skills/ -writable -printf 'WRITABLE %p\n'`)
	for _, want := range []string{"how to report", "a,b", "exec-ok", "PermissionError"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output %q lacks %q", out, want)
		}
	}
	if strings.Contains(out, "ALLOWED") || strings.Contains(out, "WRITABLE") {
		t.Fatalf("the code changed a skill:\n%s", out)
	}
	files, err := sb.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Name != "mine.txt" {
		t.Fatalf("listing %+v, want mine.txt alone", files)
	}
	snap, err := sb.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(snap)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(hdr.Name, "skills") {
			t.Fatalf("snapshot holds %q", hdr.Name)
		}
	}
	snap.Close()

	// Another version replaces the first: nothing of it is left.
	start = time.Now()
	if err := sb.PutSkill(ctx, "report", skillArchive(t, map[string]string{"README.md": "v2\n"})); err != nil {
		t.Fatal(err)
	}
	t.Logf("PutSkill replacing a version: %v", time.Since(start))
	if out := bash(t, sb, `cd /workspace/skills/report && find . | sort && cat README.md`); out != ".\n./README.md\nv2\n" {
		t.Fatalf("after replacing: %q", out)
	}
	// Only files and directories.
	var link bytes.Buffer
	tw := tar.NewWriter(&link)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "etc", Linkname: "/etc"})
	tw.Close()
	if err := sb.PutSkill(ctx, "bad", &link); !errors.Is(err, sandbox.ErrBadPath) {
		t.Fatalf("a link in a skill: %v, want ErrBadPath", err)
	}
	if err := sb.PutSkill(ctx, "../x", skillArchive(t, map[string]string{"a": "a"})); !errors.Is(err, sandbox.ErrBadPath) {
		t.Fatalf("a bad skill name: %v, want ErrBadPath", err)
	}

	// A newer owner adopts the sandbox: the stale handle can no longer put skills.
	spec.Fence = 9
	adopted, err := d.Find(ctx, spec)
	if err != nil || adopted == nil {
		t.Fatalf("adopt: %v", err)
	}
	defer adopted.Release()
	if err := sb.PutSkill(ctx, "report", skillArchive(t, map[string]string{"README.md": "stale\n"})); err == nil {
		t.Fatal("a stale owner put a skill")
	}
	if out := bash(t, adopted, "cat /workspace/skills/report/README.md"); out != "v2\n" {
		t.Fatalf("after the stale owner's attempt: %q", out)
	}
}

// The code's own skills/ is never replaced: attaching says so.
func TestDockerSkillsInUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDocker(t, "citest-skills")
	sb, err := d.Create(ctx, sandbox.Spec{Tenant: "acme", Owner: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Remove(context.Background()) })
	bash(t, sb, "mkdir -p /workspace/skills/x && echo mine > /workspace/skills/x/f")
	if err := sb.PutSkill(ctx, "report", skillArchive(t, map[string]string{"a": "a"})); !errors.Is(err, sandbox.ErrSkillsInUse) {
		t.Fatalf("PutSkill over the code's skills/: %v, want ErrSkillsInUse", err)
	}
	if out := bash(t, sb, "cat /workspace/skills/x/f"); out != "mine\n" {
		t.Fatalf("the code's file: %q", out)
	}
}

// A recyclable sandbox's wipe removes its skills.
func TestDockerWipeRemovesSkills(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDocker(t, "citest-skills")
	sb, err := d.Create(ctx, sandbox.Spec{Owner: "test", Recyclable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Remove(context.Background()) })
	if err := sb.PutSkill(ctx, "report", skillArchive(t, map[string]string{"a.txt": "a"})); err != nil {
		t.Fatal(err)
	}
	if out := bash(t, sb, "cat /workspace/skills/report/a.txt"); out != "a" {
		t.Fatalf("before the wipe: %q", out)
	}
	if err := sb.Wipe(ctx); err != nil {
		t.Fatal(err)
	}
	if out := bash(t, sb, "ls -A /run/codeinterp-skills; test -e /workspace/skills || test -L /workspace/skills || echo gone"); out != "gone\n" {
		t.Fatalf("after the wipe: %q", out)
	}
	// And it takes skills again.
	if err := sb.PutSkill(ctx, "report", skillArchive(t, map[string]string{"b.txt": "b"})); err != nil {
		t.Fatal(err)
	}
	// Not ls: under gVisor its statx(AT_NO_AUTOMOUNT) fails with EINVAL.
	if out := bash(t, sb, "cd /workspace/skills/report && echo *"); out != "b.txt\n" {
		t.Fatalf("after the wipe and a new put: %q", out)
	}
}

// BenchmarkDockerPutSkill measures attaching a small skill (a new version: one run of
// the file helper) to a warm sandbox that has skills already.
func BenchmarkDockerPutSkill(b *testing.B) {
	ctx := context.Background()
	d := newDocker(&testing.T{}, "citest-skills")
	sb, err := d.Create(ctx, sandbox.Spec{Tenant: "acme", Thread: "bench-" + time.Now().Format("150405.000"), Owner: "test", Fence: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Remove(context.Background())
	archive := func() io.Reader {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		body := strings.Repeat("x", 10<<10)
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "template.txt", Size: int64(len(body)), Mode: 0o644})
		tw.Write([]byte(body))
		tw.Close()
		return &buf
	}
	if err := sb.PutSkill(ctx, "report", archive()); err != nil { // links skills/ once
		b.Fatal(err)
	}
	for b.Loop() {
		if err := sb.PutSkill(ctx, "report", archive()); err != nil {
			b.Fatal(err)
		}
	}
}
