package e2e

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
)

type skillView struct {
	Name          string `json:"name"`
	Version       int    `json:"version"`
	Ref           string `json:"ref"`
	Digest        string `json:"digest"`
	Size          int64  `json:"size"`
	Files         int    `json:"files"`
	UnpackedBytes int64  `json:"unpacked_bytes"`
}

type skillList struct {
	Items []struct {
		Name     string      `json:"name"`
		Latest   int         `json:"latest"`
		Versions []skillView `json:"versions"`
	} `json:"items"`
}

type apiError struct {
	Error struct{ Code, Message, Field string } `json:"error"`
}

// skillExecution is what the skill tests read of an execution.
type skillExecution struct {
	execution
	Skills []string `json:"skills"`
	Notes  []string `json:"notes"`
}

// tarOf makes a tar: name → content; a "name -> target" key is a symbolic link.
func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		body := files[name]
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(body)), Mode: 0o644, ModTime: time.Now()}
		if n, target, ok := strings.Cut(name, " -> "); ok {
			hdr = &tar.Header{Typeflag: tar.TypeSymlink, Name: n, Linkname: target, Mode: 0o777, ModTime: time.Now()}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			io.WriteString(tw, body)
		}
	}
	tw.Close()
	return buf.Bytes()
}

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
	}
	zw.Close()
	return buf.Bytes()
}

// uploadSkill posts an archive as the raw body (?name=&version=), or as a multipart
// form when multipart is set, as the tenant of key; it decodes the answer into out.
func (s *stack) uploadSkill(t *testing.T, key, name, version string, archive []byte, multipartForm bool, out any) int {
	t.Helper()
	var body io.Reader = bytes.NewReader(archive)
	ct, path := "application/octet-stream", "/v1/skills?name="+name
	if version != "" {
		path += "&version=" + version
	}
	if multipartForm {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		mw.WriteField("name", name)
		if version != "" {
			mw.WriteField("version", version)
		}
		fw, _ := mw.CreateFormFile("file", name+".zip")
		fw.Write(archive)
		mw.Close()
		body, ct, path = &buf, mw.FormDataContentType(), "/v1/skills"
	}
	req, _ := http.NewRequest("POST", s.url+path, body)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", ct)
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("POST %s: decode: %v", path, err)
		}
	}
	return resp.StatusCode
}

func (s *stack) runSkill(t *testing.T, key string, req map[string]any) skillExecution {
	t.Helper()
	var ex skillExecution
	if code := s.callAs(t, key, "POST", "/v1/executions", req, &ex); code != http.StatusAccepted {
		t.Fatalf("POST: %d", code)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for !slices.Contains([]string{"succeeded", "failed", "timed_out", "canceled"}, ex.Status) {
		if time.Now().After(deadline) {
			t.Fatalf("execution %s still %s", ex.ID, ex.Status)
		}
		if code := s.callAs(t, key, "GET", "/v1/executions/"+ex.ID+"?wait=30s", nil, &ex); code != http.StatusOK {
			t.Fatalf("GET: %d", code)
		}
	}
	return ex
}

func (s *stack) skillBytes(t *testing.T, key string) (held, quota int64) {
	t.Helper()
	var u struct {
		Current struct {
			SkillBytes int64 `json:"skill_bytes"`
		} `json:"current"`
		Quotas struct {
			SkillBytes int64 `json:"skill_bytes"`
		} `json:"quotas"`
	}
	if code := s.callAs(t, key, "GET", "/v1/usage", nil, &u); code != http.StatusOK {
		t.Fatalf("GET /v1/usage: %d", code)
	}
	return u.Current.SkillBytes, u.Quotas.SkillBytes
}

// Skills uploaded as a tar and a zip are versions of one skill; a one-off reads the
// version it names (or the latest), never in its outputs; another tenant can neither
// see, delete nor attach them; listing, usage and deletion follow.
func TestSkillsUploadOneOffListDelete(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	var v1, v2 skillView
	if code := s.uploadSkill(t, "key-a", "report", "", tarOf(t, map[string]string{"README.md": "version one\n", "data/q.csv": "a,b\n"}), false, &v1); code != http.StatusCreated {
		t.Fatalf("upload a tar: %d %+v", code, v1)
	}
	if code := s.uploadSkill(t, "key-a", "report", "", zipOf(t, map[string]string{"report/README.md": "version two\n", "report/bin/tool.py": "print('tool')\n"}), true, &v2); code != http.StatusCreated {
		t.Fatalf("upload a zip: %d %+v", code, v2)
	}
	if v1.Version != 1 || v2.Version != 2 || v1.Files != 2 || v2.Files != 2 || v2.Ref != "report@2" || len(v2.Digest) != 64 {
		t.Fatalf("versions %+v %+v", v1, v2)
	}
	var e apiError
	if code := s.uploadSkill(t, "key-a", "report", "2", tarOf(t, map[string]string{"a": "a"}), false, &e); code != http.StatusConflict || e.Error.Field != "version" {
		t.Fatalf("an existing version again: %d %+v", code, e)
	}

	ex := s.runSkill(t, "key-a", map[string]any{"skills": []string{"report@1"}, "language": "bash",
		"code": "cat skills/report/README.md skills/report/data/q.csv; cp skills/report/README.md outputs/copy.md; (cd outputs && printf '%s\\n' *)"})
	if ex.Status != "succeeded" || ex.Stdout != "version one\na,b\ncopy.md\n" || !slices.Equal(ex.Skills, []string{"report@1"}) {
		t.Fatalf("one-off with report@1: %s %q %+v skills %q", ex.Status, ex.Stdout, ex.Error, ex.Skills)
	}
	for _, f := range ex.Files {
		if strings.Contains(f.Name, "skills") || f.Name != "outputs/copy.md" {
			t.Fatalf("outputs %+v: skills are never outputs", ex.Files)
		}
	}
	ex = s.runSkill(t, "key-a", map[string]any{"skills": []string{"report"},
		"code": "print(open('skills/report/README.md').read(), end='')\nimport subprocess\nprint(subprocess.run(['python3', 'skills/report/bin/tool.py'], capture_output=True, text=True).stdout, end='')"})
	if ex.Status != "succeeded" || ex.Stdout != "version two\ntool\n" || !slices.Equal(ex.Skills, []string{"report@2"}) {
		t.Fatalf("one-off with the latest: %s %q %+v skills %q", ex.Status, ex.Stdout, ex.Error, ex.Skills)
	}
	if code := s.callAs(t, "key-a", "POST", "/v1/executions", map[string]any{"code": "1", "skills": []string{"report", "nope"}}, &e); code != http.StatusBadRequest || e.Error.Field != "skills[1]" {
		t.Fatalf("an unknown skill: %d %+v", code, e)
	}

	var list skillList
	if code := s.call(t, "GET", "/v1/skills", nil, &list); code != http.StatusOK || len(list.Items) != 1 || list.Items[0].Latest != 2 || len(list.Items[0].Versions) != 2 {
		t.Fatalf("list: %d %+v", code, list)
	}
	held, quota := s.skillBytes(t, "key-a")
	if held != v1.Size+v2.Size || quota != 1<<30 {
		t.Fatalf("usage: %d of %d skill bytes, want %d", held, quota, v1.Size+v2.Size)
	}

	// Another tenant sees none of it.
	if code := s.callAs(t, "key-b", "GET", "/v1/skills", nil, &list); code != http.StatusOK || len(list.Items) != 0 {
		t.Fatalf("globex's list: %+v", list)
	}
	if code := s.callAs(t, "key-b", "DELETE", "/v1/skills/report", nil, &e); code != http.StatusNotFound {
		t.Fatalf("globex deletes acme's skill: %d", code)
	}
	if code := s.callAs(t, "key-b", "POST", "/v1/executions", map[string]any{"code": "1", "skills": []string{"report@1"}}, &e); code != http.StatusBadRequest || e.Error.Field != "skills[0]" {
		t.Fatalf("globex attaches acme's skill: %d %+v", code, e)
	}

	if code := s.call(t, "DELETE", "/v1/skills/report@1", nil, nil); code != http.StatusNoContent {
		t.Fatalf("delete report@1: %d", code)
	}
	if code := s.call(t, "GET", "/v1/skills", nil, &list); code != http.StatusOK || len(list.Items) != 1 || len(list.Items[0].Versions) != 1 || list.Items[0].Versions[0].Version != 2 {
		t.Fatalf("after deleting version 1: %+v", list)
	}
	if held, _ := s.skillBytes(t, "key-a"); held != v2.Size {
		t.Fatalf("after deleting version 1: %d skill bytes, want %d", held, v2.Size)
	}
	if code := s.call(t, "DELETE", "/v1/skills/report", nil, nil); code != http.StatusNoContent {
		t.Fatalf("delete report: %d", code)
	}
	if code := s.call(t, "DELETE", "/v1/skills/report", nil, &e); code != http.StatusNotFound {
		t.Fatalf("delete it again: %d", code)
	}
	if held, _ := s.skillBytes(t, "key-a"); held != 0 {
		t.Fatalf("after deleting all: %d skill bytes", held)
	}
	if _, _, err := s.app.SkillStore.Open(context.Background(), jobs.SkillKey("acme", "report", 2)); err == nil {
		t.Fatal("the archive of a deleted skill is still stored")
	}
}

// A thread's skills stay attached; the code can read them and change nothing; they
// are in neither the workspace listing nor the snapshot, and come back after a
// restore; naming the skill again attaches its latest version.
func TestSkillsThread(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	var v skillView
	if code := s.uploadSkill(t, "key-a", "tools", "", tarOf(t, map[string]string{"README.md": "tools v1\n"}), false, &v); code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	ex := s.runSkill(t, "key-a", map[string]any{"thread_id": "skt", "skills": []string{"tools"}, "code": `
import os
print(open('skills/tools/README.md').read(), end='')
for attempt in (lambda: open('skills/tools/README.md', 'a'), lambda: open('skills/tools/new.txt', 'w'),
                lambda: os.remove('skills/tools/README.md'), lambda: os.chmod('skills/tools/README.md', 0o666)):
    try:
        attempt()
        print('ALLOWED')
    except PermissionError:
        print('refused')
open('notes.txt', 'w').write('mine')`})
	if ex.Status != "succeeded" || ex.Stdout != "tools v1\nrefused\nrefused\nrefused\nrefused\n" {
		t.Fatalf("thread with tools: %s %q %+v", ex.Status, ex.Stdout, ex.Error)
	}
	// Later executions keep the thread's skills without naming them.
	ex = s.runSkill(t, "key-a", map[string]any{"thread_id": "skt", "language": "bash", "code": "cat skills/tools/README.md"})
	if ex.Status != "succeeded" || ex.Stdout != "tools v1\n" || !slices.Equal(ex.Skills, []string{"tools@1"}) || !ex.Sandbox.Reused {
		t.Fatalf("thread, second run: %s %q %+v skills %q", ex.Status, ex.Stdout, ex.Error, ex.Skills)
	}
	th := s.thread(t, "skt")
	if len(th.Files) != 1 || th.Files[0].Name != "notes.txt" {
		t.Fatalf("thread listing %+v: skills are not workspace files", th.Files)
	}

	// A new version is attached when an execution names the skill again.
	if code := s.uploadSkill(t, "key-a", "tools", "", tarOf(t, map[string]string{"README.md": "tools v2\n"}), false, &v); code != http.StatusCreated {
		t.Fatalf("upload v2: %d", code)
	}
	ex = s.runSkill(t, "key-a", map[string]any{"thread_id": "skt", "language": "bash", "code": "cat skills/tools/README.md"})
	if ex.Stdout != "tools v1\n" {
		t.Fatalf("not named again: %q, want the version the thread resolved", ex.Stdout)
	}
	ex = s.runSkill(t, "key-a", map[string]any{"thread_id": "skt", "skills": []string{"tools"}, "language": "bash", "code": "cat skills/tools/README.md; (cd skills/tools && printf '%s\\n' *)"})
	if ex.Status != "succeeded" || ex.Stdout != "tools v2\nREADME.md\n" || !slices.Equal(ex.Skills, []string{"tools@2"}) {
		t.Fatalf("named again: %s %q skills %q", ex.Status, ex.Stdout, ex.Skills)
	}

	// Reaped: the snapshot holds the workspace but not the skill; restored, the
	// skill is there again.
	j := s.newJanitor(100*time.Millisecond, 300*time.Millisecond)
	sweepUntil(t, j, "sandbox reaped", func() bool { return s.thread(t, "skt").Sandbox == "none" })
	rc, _, err := s.store.Open(context.Background(), jobs.SnapshotKey(jobs.NewThreadKey("acme", "skt")))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
	}
	rc.Close()
	if !slices.Contains(names, "notes.txt") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "skills") }) {
		t.Fatalf("snapshot entries %q: want notes.txt and no skills", names)
	}
	ex = s.runSkill(t, "key-a", map[string]any{"thread_id": "skt", "language": "bash", "code": "cat notes.txt skills/tools/README.md"})
	if ex.Status != "succeeded" || ex.Stdout != "minetools v2\n" || !ex.Sandbox.KernelRestarted {
		t.Fatalf("after the restore: %s %q %+v %+v", ex.Status, ex.Stdout, ex.Error, ex.Sandbox)
	}

	// Attaching to a warm thread: the same version costs nothing; measure a new one.
	for i, req := range []map[string]any{
		{"thread_id": "skt", "code": "1"},
		{"thread_id": "skt", "code": "1", "skills": []string{"tools@2"}},
		{"thread_id": "skt", "code": "1", "skills": []string{"tools@1"}},
	} {
		ex := s.runSkill(t, "key-a", req)
		if ex.Status != "succeeded" || ex.StartedAt == nil || ex.FinishedAt == nil {
			t.Fatalf("run %d: %s %+v", i, ex.Status, ex.Error)
		}
		t.Logf("warm thread run %d (skills %q): started → finished %v", i, ex.Skills, ex.FinishedAt.Sub(*ex.StartedAt))
	}

	// Deleting the thread detaches its skills.
	if code := s.call(t, "DELETE", "/v1/threads/skt", nil, nil); code != http.StatusNoContent {
		t.Fatalf("delete thread: %d", code)
	}
	ex = s.runSkill(t, "key-a", map[string]any{"thread_id": "skt", "language": "bash", "code": "test -e skills || echo none"})
	if ex.Stdout != "none\n" || len(ex.Skills) != 0 {
		t.Fatalf("a deleted thread used again: %q skills %q", ex.Stdout, ex.Skills)
	}
}

// Bad archives and names are 4xx naming the field and the limit; the skill bytes
// quota counts the stored skills and is credited when they are deleted.
func TestSkillsRefusedAndQuota(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{env: map[string]string{
		"CODEINTERP_SKILL_MAX_BYTES": "16384", "CODEINTERP_SKILL_MAX_FILES": "5", "CODEINTERP_QUOTA_SKILL_BYTES": "6000",
	}})
	for name, c := range map[string]struct {
		name    string
		archive []byte
		status  int
		field   string
		want    string
	}{
		"path traversal":  {"a", tarOf(t, map[string]string{"../../etc/cron.d/x": "x"}), 400, "file", "leaves the workspace"},
		"absolute path":   {"a", tarOf(t, map[string]string{"/etc/passwd": "x"}), 400, "file", "absolute"},
		"symbolic link":   {"a", tarOf(t, map[string]string{"ok.txt": "x", "etc -> /etc": ""}), 400, "file", "is a link"},
		"zip traversal":   {"a", zipOf(t, map[string]string{"../x": "x"}), 400, "file", "leaves the workspace"},
		"too many files":  {"a", tarOf(t, map[string]string{"1": "", "2": "", "3": "", "4": "", "5": "", "6": ""}), 413, "file", "CODEINTERP_SKILL_MAX_FILES"},
		"too large":       {"a", bytes.Repeat([]byte("x"), 20000), 413, "file", "CODEINTERP_SKILL_MAX_BYTES"},
		"not an archive":  {"a", []byte("just some text, not an archive"), 400, "file", "not a tar, tar.gz or zip"},
		"bad name":        {"../a", tarOf(t, map[string]string{"a": "a"}), 400, "name", "skill name"},
		"name with an at": {"a@2", tarOf(t, map[string]string{"a": "a"}), 400, "name", "skill name"},
	} {
		t.Run(name, func(t *testing.T) {
			var e apiError
			if code := s.uploadSkill(t, "key-a", c.name, "", c.archive, false, &e); code != c.status || e.Error.Field != c.field || !strings.Contains(e.Error.Message, c.want) {
				t.Fatalf("%d %+v, want %d on %s saying %q", code, e, c.status, c.field, c.want)
			}
		})
	}
	var e apiError
	if code := s.uploadSkill(t, "key-a", "a", "0", tarOf(t, map[string]string{"a": "a"}), false, &e); code != 400 || e.Error.Field != "version" {
		t.Fatalf("version 0: %d %+v", code, e)
	}
	var list skillList
	if s.call(t, "GET", "/v1/skills", nil, &list); len(list.Items) != 0 {
		t.Fatalf("refused uploads left skills: %+v", list)
	}

	// The quota: 6000 bytes of skills held; each of these stores 2048 (a header, a block, the end).
	var first, second skillView
	if code := s.uploadSkill(t, "key-a", "one", "", tarOf(t, map[string]string{"a.txt": "a"}), false, &first); code != http.StatusCreated {
		t.Fatalf("first: %d", code)
	}
	if code := s.uploadSkill(t, "key-a", "two", "", tarOf(t, map[string]string{"b.txt": "b"}), false, &second); code != http.StatusCreated {
		t.Fatalf("second: %d", code)
	}
	if code := s.uploadSkill(t, "key-a", "three", "", tarOf(t, map[string]string{"c.txt": "c"}), false, &e); code != http.StatusTooManyRequests || e.Error.Code != "quota_exceeded" || e.Error.Field != "file" || !strings.Contains(e.Error.Message, "bytes of skills held") {
		t.Fatalf("past the quota (%d + %d held): %d %+v", first.Size, second.Size, code, e)
	}
	if held, quota := s.skillBytes(t, "key-a"); held != first.Size+second.Size || quota != 6000 {
		t.Fatalf("usage: %d of %d", held, quota)
	}
	if code := s.call(t, "DELETE", "/v1/skills/one", nil, nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if code := s.uploadSkill(t, "key-a", "three", "", tarOf(t, map[string]string{"c.txt": "c"}), false, nil); code != http.StatusCreated {
		t.Fatalf("after deleting one: %d", code)
	}
	// Another tenant's quota is its own.
	if code := s.uploadSkill(t, "key-b", "one", "", tarOf(t, map[string]string{"a.txt": "a"}), false, nil); code != http.StatusCreated {
		t.Fatalf("globex: %d", code)
	}
}
