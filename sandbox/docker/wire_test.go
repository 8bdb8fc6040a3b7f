package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

// A workspace archive with entries no workspace path can name (a tree 1,200 deep, a
// newline, bytes that are not UTF-8), entries under a link, FIFOs and hard links is
// copied without them, never failed whole.
func TestRewriteTarSkipsHostileEntries(t *testing.T) {
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	add := func(typ byte, name, link, body string) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: typ, Name: name, Linkname: link, Size: int64(len(body)), Mode: 0o644, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(body))
	}
	add(tar.TypeDir, "./", "", "")
	add(tar.TypeReg, "./a.txt", "", "a")
	add(tar.TypeReg, "./"+strings.Repeat("d/", 1200)+"deep.txt", "", "deep")
	add(tar.TypeReg, "./new\nline.txt", "", "nl")
	add(tar.TypeReg, "./bad\xff.txt", "", "bad")
	add(tar.TypeSymlink, "./etc", "/etc", "")
	add(tar.TypeReg, "./etc/passwd", "", "pwned")
	add(tar.TypeDir, "./etc/sub/", "", "")
	add(tar.TypeFifo, "./fifo", "", "")
	add(tar.TypeLink, "./hard", "a.txt", "")
	add(tar.TypeChar, "./null", "", "")
	add(tar.TypeReg, "./z.txt", "", "z")
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rename := func(name string) string { return strings.TrimPrefix(strings.TrimPrefix(name, "."), "/") }
	if err := rewriteTar(&in, &out, rename, tarBudget{}); err != nil {
		t.Fatalf("rewriteTar: %v", err)
	}
	var got []string
	tr := tar.NewReader(&out)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		got = append(got, hdr.Name+"="+string(body))
	}
	if want := "a.txt=a|etc=|z.txt=z"; strings.Join(got, "|") != want {
		t.Fatalf("kept %q, want %q", strings.Join(got, "|"), want)
	}
}

// One odd field does not lose a kernel event: it is left zero (or clamped), and the
// rest of the event stands.
func TestWireEventLenient(t *testing.T) {
	k := newKernel("", nil, func() {})
	defer k.listen(maxRunLine)()
	lines := strings.Join([]string{
		`{"ev": "done", "id": "a", "exit_code": 1180591620717411303424, "cpu_ms": 1e400, "outputs": "x", "workspace": [["ok.txt", -1, "t"], 7, ["big", 1e300, 1e300]], "skipped": {"special": "x", "bad_name": 3}}`,
		`{"ev": "done", "id": "b", "exit_code": "seven", "error": "not an object"}`,
		`not json`,
		`{"ev": "done", "id": "c", "exit_code": -3}`,
	}, "\n") + "\n"
	go k.decode(io.NopCloser(strings.NewReader(lines)))
	var evs []wireEvent
	for ev := range k.events {
		evs = append(evs, ev)
	}
	if len(evs) != 3 || evs[0].ID != "a" || evs[1].ID != "b" || evs[2].ID != "c" {
		t.Fatalf("events %+v", evs)
	}
	a := evs[0]
	if a.ExitCode != math.MaxInt32 || a.Outputs != nil || a.Skipped["special"] != 0 || a.Skipped["bad_name"] != 3 {
		t.Errorf("event a: %+v", a)
	}
	if len(a.Workspace) != 3 || a.Workspace[0].Name != "ok.txt" || a.Workspace[0].Size != 0 || a.Workspace[1].Name != "" || a.Workspace[2].Size <= 0 {
		t.Errorf("listing %+v", a.Workspace)
	}
	if evs[1].ExitCode != 0 || evs[2].ExitCode != -3 {
		t.Errorf("events b, c: %+v %+v", evs[1], evs[2])
	}
}

// demux reads an exec's standard output out of its multiplexed stream and keeps the
// first 16 KiB of its standard error aside.
func TestDemux(t *testing.T) {
	var stream bytes.Buffer
	frame := func(kind byte, data string) {
		hdr := [8]byte{kind}
		binary.BigEndian.PutUint32(hdr[4:], uint32(len(data)))
		stream.Write(hdr[:])
		stream.WriteString(data)
	}
	frame(1, "hello ")
	frame(2, strings.Repeat("e", 20<<10))
	frame(1, "world")
	frame(2, "more")
	d := demux{r: bufio.NewReader(&stream)}
	out, err := io.ReadAll(&d)
	if err != nil || string(out) != "hello world" || len(d.stderr) != 16<<10 {
		t.Fatalf("stdout %q, %v; %d bytes of stderr", out, err, len(d.stderr))
	}
	frame(1, "cut")
	stream.Truncate(stream.Len() - 1)
	d = demux{r: bufio.NewReader(&stream)}
	if _, err := io.ReadAll(&d); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a cut frame: %v", err)
	}
}
