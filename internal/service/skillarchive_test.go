package service

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"
)

type tarEntry struct {
	name string
	typ  byte
	body string
	link string
	mode int64
}

func makeTar(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: max(e.mode, 0o644), ModTime: time.Unix(1700000000, 0)}
		if e.typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, e.body)
	}
	tw.Close()
	return buf.Bytes()
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

type zipEntry struct {
	name string
	body string
	mode fs.FileMode
}

func makeZip(t *testing.T, entries ...zipEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		h.SetMode(e.mode | 0o644)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, e.body)
	}
	zw.Close()
	return buf.Bytes()
}

var testSkillLimits = SkillLimits{MaxBytes: 1 << 20, MaxUnpacked: 1000, MaxFiles: 10, PerExecution: 8}

// normalize checks and normalises an archive, returning its files (name → content,
// "/" suffix for directories) and modes.
func normalize(t *testing.T, archive []byte, lim SkillLimits) (map[string]string, map[string]int64, error) {
	t.Helper()
	r := bytes.NewReader(archive)
	m, err := checkSkillArchive(r, int64(len(archive)), lim)
	if err != nil {
		return nil, nil, err
	}
	var out bytes.Buffer
	if err := writeSkillTar(r, int64(len(archive)), m, &out); err != nil {
		return nil, nil, err
	}
	files, modes := map[string]string{}, map[string]int64{}
	tr := tar.NewReader(&out)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, modes, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[hdr.Name] = string(b)
		modes[hdr.Name] = hdr.Mode
		if hdr.Uid != 0 || (hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeDir) {
			t.Fatalf("normalised entry %+v", hdr)
		}
	}
}

func TestSkillArchiveFormats(t *testing.T) {
	plain := makeTar(t, tarEntry{name: "README.md", typ: tar.TypeReg, body: "hi"}, tarEntry{name: "./bin/run.sh", typ: tar.TypeReg, body: "echo", mode: 0o755})
	for name, archive := range map[string][]byte{
		"tar":    plain,
		"tar.gz": gz(plain),
		"zip":    makeZip(t, zipEntry{name: "README.md", body: "hi"}, zipEntry{name: "bin/run.sh", body: "echo", mode: 0o755}),
		// One top-level directory (zip -r s.zip skill/) is dropped.
		"zip of a directory": makeZip(t, zipEntry{name: "skill/", mode: fs.ModeDir}, zipEntry{name: "skill/README.md", body: "hi"},
			zipEntry{name: "skill/bin/run.sh", body: "echo", mode: 0o755}),
		"tar.gz of a directory": gz(makeTar(t, tarEntry{name: "./", typ: tar.TypeDir}, tarEntry{name: "skill/", typ: tar.TypeDir},
			tarEntry{name: "skill/README.md", typ: tar.TypeReg, body: "hi"}, tarEntry{name: "skill/bin/run.sh", typ: tar.TypeReg, body: "echo", mode: 0o755})),
	} {
		t.Run(name, func(t *testing.T) {
			files, modes, err := normalize(t, archive, testSkillLimits)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != 3 || files["README.md"] != "hi" || files["bin/run.sh"] != "echo" || files["bin/"] != "" {
				t.Fatalf("files %q", files)
			}
			if modes["README.md"] != 0o644 || modes["bin/run.sh"] != 0o755 || modes["bin/"] != 0o755 {
				t.Fatalf("modes %v", modes)
			}
		})
	}
}

func TestSkillArchiveRefusals(t *testing.T) {
	many := make([]tarEntry, 11)
	for i := range many {
		many[i] = tarEntry{name: strings.Repeat("f", i+1), typ: tar.TypeReg, body: "x"}
	}
	for name, c := range map[string]struct {
		archive []byte
		code    Code
		want    string
	}{
		"traversal":         {makeTar(t, tarEntry{name: "../evil", typ: tar.TypeReg, body: "x"}), CodeInvalid, "leaves the workspace"},
		"traversal inside":  {makeTar(t, tarEntry{name: "a/../../evil", typ: tar.TypeReg, body: "x"}), CodeInvalid, "leaves the workspace"},
		"absolute":          {makeTar(t, tarEntry{name: "/etc/passwd", typ: tar.TypeReg, body: "x"}), CodeInvalid, "absolute"},
		"symlink":           {makeTar(t, tarEntry{name: "a", typ: tar.TypeReg, body: "x"}, tarEntry{name: "etc", typ: tar.TypeSymlink, link: "/etc"}), CodeInvalid, "is a link"},
		"hard link":         {makeTar(t, tarEntry{name: "a", typ: tar.TypeReg, body: "x"}, tarEntry{name: "b", typ: tar.TypeLink, link: "a"}), CodeInvalid, "is a link"},
		"device":            {makeTar(t, tarEntry{name: "null", typ: tar.TypeChar}), CodeInvalid, "device"},
		"fifo":              {makeTar(t, tarEntry{name: "p", typ: tar.TypeFifo}), CodeInvalid, "FIFO"},
		"zip symlink":       {makeZip(t, zipEntry{name: "a", body: "x"}, zipEntry{name: "etc", body: "/etc", mode: fs.ModeSymlink}), CodeInvalid, "is a link"},
		"zip traversal":     {makeZip(t, zipEntry{name: "../../x", body: "x"}), CodeInvalid, "leaves the workspace"},
		"control character": {makeTar(t, tarEntry{name: "a\nb", typ: tar.TypeReg, body: "x"}), CodeInvalid, "control character"},
		"long segment":      {makeTar(t, tarEntry{name: strings.Repeat("s", 251), typ: tar.TypeReg, body: "x"}), CodeInvalid, "segments are at most 250"},
		"duplicate":         {makeTar(t, tarEntry{name: "a", typ: tar.TypeReg, body: "x"}, tarEntry{name: "./a", typ: tar.TypeReg, body: "y"}), CodeInvalid, "twice"},
		"file and dir":      {makeTar(t, tarEntry{name: "a", typ: tar.TypeReg, body: "x"}, tarEntry{name: "a/b", typ: tar.TypeReg, body: "y"}), CodeInvalid, "both a file and a directory"},
		"too many files":    {makeTar(t, many...), CodeTooLarge, "CODEINTERP_SKILL_MAX_FILES"},
		"too large":         {makeTar(t, tarEntry{name: "big", typ: tar.TypeReg, body: strings.Repeat("x", 1001)}), CodeTooLarge, "CODEINTERP_SKILL_MAX_UNPACKED_BYTES"},
		"no files":          {makeTar(t, tarEntry{name: "d/", typ: tar.TypeDir}), CodeInvalid, "no files"},
		"not an archive":    {[]byte("hello, this is not an archive at all"), CodeInvalid, "not a tar, tar.gz or zip"},
		"empty":             {nil, CodeInvalid, "not a tar, tar.gz or zip"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := normalize(t, c.archive, testSkillLimits)
			var e *Error
			if !errors.As(err, &e) || e.Code != c.code || e.Field != "file" || !strings.Contains(e.Message, c.want) {
				t.Fatalf("err = %v, want %s on file saying %q", err, c.code, c.want)
			}
		})
	}
}

// A gzip bomb is refused by its headers, before its content is inflated; an
// archive over the upload cap is refused while it is read.
func TestSkillArchiveBounds(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "bomb", Typeflag: tar.TypeReg, Size: 1 << 40})
	_, _, err := normalize(t, gz(buf.Bytes()), testSkillLimits)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeTooLarge {
		t.Fatalf("bomb: %v", err)
	}
	_, _, err = spoolSkill(bytes.NewReader(make([]byte, 2000)), 1000)
	if !errors.As(err, &e) || e.Code != CodeTooLarge || !strings.Contains(e.Message, "CODEINTERP_SKILL_MAX_BYTES") {
		t.Fatalf("over the upload cap: %v", err)
	}
}

func TestParseSkillRef(t *testing.T) {
	for ref, want := range map[string]struct {
		name string
		v    int
		ok   bool
	}{
		"report": {"report", 0, true}, "report@3": {"report", 3, true}, "q.r-2_x@12": {"q.r-2_x", 12, true},
		"report@": {}, "report@0": {}, "report@x": {}, "../x": {}, ".hidden": {}, "": {}, "a/b": {}, "report@-1": {},
		strings.Repeat("a", 65): {},
	} {
		name, v, err := parseSkillRef("skills[0]", ref)
		if (err == nil) != want.ok || (want.ok && (name != want.name || v != want.v)) {
			t.Errorf("%q: %s %d %v", ref, name, v, err)
		}
	}
}
