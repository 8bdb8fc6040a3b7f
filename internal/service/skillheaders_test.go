package service

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingReaderAt counts the bytes read from an archive.
type countingReaderAt struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// tarWith makes a tar of headers written as given, each file's body its size in "x".
func tarWith(t *testing.T, hdrs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		if h.ModTime.IsZero() && h.Typeflag != tar.TypeXGlobalHeader {
			h.ModTime = time.Unix(1700000000, 0)
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			io.WriteString(tw, strings.Repeat("x", int(h.Size)))
		}
	}
	if err := tw.Flush(); err != nil { // no end blocks: members are concatenated
		t.Fatal(err)
	}
	return buf.Bytes()
}

// paxHeader is an extended header (typeflag 'x') of records "key=value".
func paxHeader(t *testing.T, records ...string) []byte {
	t.Helper()
	var body strings.Builder
	for _, r := range records {
		n := len(r) + 3 // " ", "\n", and one digit
		for len(fmt.Sprint(n))+len(r)+2 != n {
			n++
		}
		fmt.Fprintf(&body, "%d %s\n", n, r)
	}
	b := tarWith(t, &tar.Header{Typeflag: tar.TypeReg, Name: "PaxHeaders/x", Size: int64(body.Len()), Mode: 0o644, Format: tar.FormatUSTAR})
	copy(b[tarBlock:], body.String())
	b[156] = tar.TypeXHeader
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b[:tarBlock] {
		sum += int(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

func reg(name string, size int64) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644}
}

func global(comment int) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header", PAXRecords: map[string]string{"comment": strings.Repeat("a", comment)}}
}

func withComment(h *tar.Header, comment int) *tar.Header {
	h.PAXRecords = map[string]string{"comment": strings.Repeat("c", comment)}
	h.Format = tar.FormatPAX
	return h
}

func wantTooLarge(t *testing.T, err error, say string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeTooLarge || e.Field != "file" || !strings.Contains(e.Message, say) {
		t.Fatalf("err = %v, want payload_too_large on file saying %q", err, say)
	}
}

// A tar's extended headers (PAX records of an entry or global, GNU long names) count
// against the unpacked bytes, a global header as an entry, and an entry's are
// bounded while they are read; real archives with them pass.
func TestSkillArchiveExtendedHeaders(t *testing.T) {
	lim := SkillLimits{MaxBytes: 64 << 20, MaxUnpacked: 64 << 10, MaxFiles: 10}
	end := make([]byte, 2*tarBlock)
	t.Run("global headers are entries", func(t *testing.T) {
		hdrs := []*tar.Header{reg("a", 1)}
		for range 10 {
			hdrs = append(hdrs, global(10))
		}
		_, _, err := normalize(t, gz(append(tarWith(t, hdrs...), end...)), lim)
		wantTooLarge(t, err, "CODEINTERP_SKILL_MAX_FILES")
	})
	t.Run("global headers count as bytes", func(t *testing.T) {
		_, _, err := normalize(t, append(tarWith(t, global(40<<10), reg("a", 1), global(30<<10)), end...), lim)
		wantTooLarge(t, err, "CODEINTERP_SKILL_MAX_UNPACKED_BYTES")
	})
	t.Run("an entry's records count as bytes", func(t *testing.T) {
		_, _, err := normalize(t, gz(append(tarWith(t, withComment(reg("a", 30<<10), 20<<10), withComment(reg("b", 1), 20<<10)), end...)), lim)
		wantTooLarge(t, err, "CODEINTERP_SKILL_MAX_UNPACKED_BYTES")
	})
	t.Run("an entry's records are bounded", func(t *testing.T) {
		big := lim
		big.MaxUnpacked = 1 << 30
		_, _, err := normalize(t, gz(append(tarWith(t, reg("a", 1), withComment(reg("b", 1), 100<<10)), end...)), big)
		wantTooLarge(t, err, `an entry after "a" with more than 65536 bytes of extended headers`)
	})
	t.Run("real extended headers pass", func(t *testing.T) {
		long := strings.Repeat("d", 200) + "/" + strings.Repeat("f", 200) // past ustar's 100 and 155
		archive := append(tarWith(t,
			&tar.Header{Typeflag: tar.TypeReg, Name: long, Size: 2, Mode: 0o644, Format: tar.FormatGNU},
			&tar.Header{Typeflag: tar.TypeReg, Name: "pax/" + long, Size: 3, Mode: 0o644, Format: tar.FormatPAX,
				ModTime: time.Unix(1700000000, 123456789), PAXRecords: map[string]string{"SCHILY.xattr.user.note": "hello"}},
			global(100)), end...)
		files, _, err := normalize(t, gz(archive), lim)
		if err != nil || files[long] != "xx" || files["pax/"+long] != "xxx" {
			t.Fatalf("%v %q", err, files)
		}
	})
	t.Run("sparse files are refused", func(t *testing.T) {
		// archive/tar writes no sparse file: its PAX header is made by hand.
		x := paxHeader(t, "GNU.sparse.numblocks=1", "GNU.sparse.map=0,1", "GNU.sparse.size=1")
		_, _, err := normalize(t, append(append(x, tarWith(t, reg("s", 1))...), end...), lim)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalid || !strings.Contains(e.Message, "sparse") {
			t.Fatalf("err = %v", err)
		}
	})
}

// A gzip of 2 MiB that inflates to 2 GiB of global PAX headers (each under the
// 1 MiB archive/tar reads of one) is refused at its first header: almost none of it
// is read, let alone inflated.
func TestSkillArchivePAXBomb(t *testing.T) {
	member := gz(tarWith(t, global(1_000_000)))
	var archive bytes.Buffer
	for range 2048 {
		archive.Write(member) // gzip members concatenated are one stream
	}
	archive.Write(gz(append(tarWith(t, reg("a", 1)), make([]byte, 2*tarBlock)...)))
	r := &countingReaderAt{r: bytes.NewReader(archive.Bytes())}
	lim := SkillLimits{MaxBytes: 64 << 20, MaxUnpacked: 64 << 20, MaxFiles: 2000}
	_, err := checkSkillArchive(r, int64(archive.Len()), lim)
	wantTooLarge(t, err, "extended headers")
	if read := r.n.Load(); read > int64(archive.Len())/16 {
		t.Fatalf("read %d of the archive's %d bytes before refusing it", read, archive.Len())
	}
}

// A zip's central directory is read within a budget: one of 20,000 records is
// refused without reading it all.
func TestSkillArchiveZipDirectory(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range 20000 {
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprint(i), Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	zw.Close()
	r := &countingReaderAt{r: bytes.NewReader(buf.Bytes())}
	lim := SkillLimits{MaxBytes: 64 << 20, MaxUnpacked: 64 << 20, MaxFiles: 10}
	_, err := checkSkillArchive(r, int64(buf.Len()), lim)
	wantTooLarge(t, err, "CODEINTERP_SKILL_MAX_FILES")
	if read, budget := r.n.Load(), int64(zipEndBytes+10*zipDirBytesPerFile); read > budget {
		t.Fatalf("read %d bytes of a %d-byte zip; the budget is %d", read, buf.Len(), budget)
	}
	// A zip within the budget reads as before.
	if files, _, err := normalize(t, makeZip(t, zipEntry{name: "a", body: "x"}), lim); err != nil || files["a"] != "x" {
		t.Fatalf("%v %q", err, files)
	}
}
