package e2e

import (
	"archive/tar"
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// paxBomb is a tar.gz of 2 MiB that inflates to 2 GiB: 2048 global PAX headers of
// 1 MB each (gzip members concatenated, which read as one stream), then one file.
func paxBomb(t *testing.T) []byte {
	t.Helper()
	var g bytes.Buffer
	tw := tar.NewWriter(&g)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header",
		PAXRecords: map[string]string{"comment": strings.Repeat("a", 1_000_000)}}); err != nil {
		t.Fatal(err)
	}
	tw.Flush()
	member := gzipOf(t, g.Bytes())
	var out bytes.Buffer
	for range 2048 {
		out.Write(member)
	}
	out.Write(gzipOf(t, tarOf(t, map[string]string{"README.md": "hi"})))
	return out.Bytes()
}

// A skill archive inflating to gigabytes of PAX headers is refused (413 naming the
// limit) and its bytes stay counted against the tenant's uploads, so that a refusal
// is no free retry; a skill has at most CODEINTERP_SKILL_MAX_VERSIONS versions (409
// naming name), until one is deleted.
func TestSkillsArchiveBoundsAndVersions(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorkers: true, env: map[string]string{"CODEINTERP_SKILL_MAX_VERSIONS": "2"}})
	uploaded := func() int64 {
		var u struct {
			Current struct {
				Uploads int64 `json:"upload_bytes_today"`
			} `json:"current"`
		}
		if code := s.call(t, "GET", "/v1/usage", nil, &u); code != http.StatusOK {
			t.Fatalf("usage: %d", code)
		}
		return u.Current.Uploads
	}

	bomb := paxBomb(t)
	for try := range 2 {
		var e apiError
		if code := s.uploadSkill(t, "key-a", "bomb", "", bomb, false, &e); code != http.StatusRequestEntityTooLarge || e.Error.Field != "file" || !strings.Contains(e.Error.Message, "extended headers") {
			t.Fatalf("the PAX bomb: %d %+v", code, e)
		}
		if got, want := uploaded(), int64(try+1)*int64(len(bomb)); got != want {
			t.Fatalf("after %d refusals %d upload bytes counted, want %d", try+1, got, want)
		}
	}

	for v := 1; v <= 2; v++ {
		var sk skillView
		if code := s.uploadSkill(t, "key-a", "report", "", tarOf(t, map[string]string{"a.txt": "a"}), false, &sk); code != http.StatusCreated || sk.Version != v {
			t.Fatalf("version %d: %d %+v", v, code, sk)
		}
	}
	var e apiError
	if code := s.uploadSkill(t, "key-a", "report", "", tarOf(t, map[string]string{"a.txt": "a"}), false, &e); code != http.StatusConflict || e.Error.Field != "name" || !strings.Contains(e.Error.Message, "CODEINTERP_SKILL_MAX_VERSIONS") {
		t.Fatalf("a third version: %d %+v", code, e)
	}
	if code := s.call(t, "DELETE", "/v1/skills/report@1", nil, nil); code != http.StatusNoContent {
		t.Fatalf("delete report@1: %d", code)
	}
	var sk skillView
	if code := s.uploadSkill(t, "key-a", "report", "", tarOf(t, map[string]string{"a.txt": "a"}), false, &sk); code != http.StatusCreated || sk.Version != 3 {
		t.Fatalf("after deleting one: %d %+v", code, sk)
	}
}
