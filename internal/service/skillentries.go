package service

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"strings"
	"time"
)

// How much of an archive a skill upload reads besides the files' content: what is
// read is bounded before it is inflated or allocated.
const (
	// maxEntryHeaderBytes bounds the extended headers of one tar entry: PAX records
	// (of the entry, or global) and GNU long names, their own headers included. Real
	// ones hold a path, times and a few attributes; archive/tar would read up to
	// 1 MiB per record, and any number of records before one entry.
	maxEntryHeaderBytes = 64 << 10
	// zipDirBytesPerFile is what a zip's central directory may hold per file allowed
	// (CODEINTERP_SKILL_MAX_FILES), on average; a record is 46 bytes and a name
	// (names are at most MaxNameBytes), plus a few extra fields.
	zipDirBytesPerFile = 1 << 10
	// zipEndBytes is what archive/zip reads to find the central directory: the last
	// 65 KiB at most, a zip64 record, a header to check the offset, its buffer.
	zipEndBytes = 128 << 10
)

// rawEntry is one entry of an uploaded archive, as read.
type rawEntry struct {
	name  string
	kind  string // "reg", "dir", "link", "special", or "global" (a PAX global header)
	size  int64  // of a regular file
	mode  fs.FileMode
	mtime time.Time
	// header is the bytes of extended headers (PAX records, GNU long names) the
	// entry carried, beyond its own 512-byte header; a global header's records.
	header int64
}

// eachSkillEntry calls fn for each entry of the archive in f (size bytes), with a
// reader of its content for a regular file.
func eachSkillEntry(f io.ReaderAt, size int64, lim SkillLimits, fn func(e rawEntry, body io.Reader) error) error {
	var magic [4]byte
	n, _ := f.ReadAt(magic[:], 0)
	switch {
	case n >= 4 && (bytes.Equal(magic[:], []byte("PK\x03\x04")) || bytes.Equal(magic[:], []byte("PK\x05\x06"))):
		return eachZipEntry(f, size, lim, fn)
	case n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		zr, err := gzip.NewReader(io.NewSectionReader(f, 0, size))
		if err != nil {
			return Invalid("file", "is not a valid gzip stream: %v", err)
		}
		defer zr.Close()
		return eachTarEntry(bufio.NewReader(zr), fn)
	}
	// Not a seeker: the tar reader reads what it skips, so the meter counts it.
	return eachTarEntry(struct{ io.Reader }{io.NewSectionReader(f, 0, size)}, fn)
}

// eachZipEntry reads a zip. archive/zip reads the whole central directory before
// it returns the first entry, and makes an object per record (however many the
// archive claims); it is given only so many bytes to read for it.
func eachZipEntry(f io.ReaderAt, size int64, lim SkillLimits, fn func(rawEntry, io.Reader) error) error {
	budget := &budgetReaderAt{r: f, left: zipEndBytes + int64(lim.MaxFiles)*zipDirBytesPerFile}
	zr, err := zip.NewReader(budget, size)
	if budget.spent {
		return TooLarge("file", "has a zip directory of more than %d bytes; a skill has at most %d files and directories (CODEINTERP_SKILL_MAX_FILES)", budget.limit(), lim.MaxFiles)
	}
	if err != nil {
		return Invalid("file", "is not a valid zip archive: %v", err)
	}
	if len(zr.File) > lim.MaxFiles {
		return TooLarge("file", "has more than %d files and directories; the limit is CODEINTERP_SKILL_MAX_FILES", lim.MaxFiles)
	}
	budget.left = -1 // the entries' content is bounded by their checked sizes
	for _, zf := range zr.File {
		mode, kind := zf.Mode(), "reg"
		switch {
		case mode&fs.ModeSymlink != 0:
			kind = "link"
		case mode.IsDir() || strings.HasSuffix(zf.Name, "/"):
			kind = "dir"
		case !mode.IsRegular():
			kind = "special"
		}
		e := rawEntry{name: zf.Name, kind: kind, mode: mode, mtime: zf.Modified}
		if kind != "reg" {
			if err := fn(e, nil); err != nil && !errors.Is(err, errSkip) {
				return err
			}
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			return Invalid("file", "zip entry %q cannot be read: %v", zf.Name, err)
		}
		e.size = int64(zf.UncompressedSize64)
		err = fn(e, rc)
		rc.Close()
		if err != nil && !errors.Is(err, errSkip) {
			return err
		}
	}
	return nil
}

// budgetReaderAt reads from r until left bytes were read (left < 0: no bound).
type budgetReaderAt struct {
	r     io.ReaderAt
	left  int64
	read  int64
	spent bool
}

func (b *budgetReaderAt) limit() int64 { return b.read + max(b.left, 0) }

func (b *budgetReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if b.left >= 0 {
		if int64(len(p)) > b.left {
			b.spent = true
			return 0, errors.New("zip directory over its budget")
		}
		b.left -= int64(len(p))
		b.read += int64(len(p))
	}
	return b.r.ReadAt(p, off)
}

// tarMeter counts the bytes of a tar stream read and lets its reader read no further
// than a mark, so that the extended headers tar.Reader.Next reads before an entry are
// bounded while they are read, not after.
type tarMeter struct {
	r        io.Reader
	n, limit int64
	over     bool
}

func (m *tarMeter) Read(p []byte) (int, error) {
	if m.n >= m.limit {
		m.over = true
		return 0, errors.New("tar headers over their budget")
	}
	if rest := m.limit - m.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	k, err := m.r.Read(p)
	m.n += int64(k)
	return k, err
}

const tarBlock = 512

func eachTarEntry(r io.Reader, fn func(rawEntry, io.Reader) error) error {
	m := &tarMeter{r: r}
	tr := tar.NewReader(m)
	first, prev := true, ""
	var dataEnd int64 // where the last entry's content ends in the stream
	for {
		pad := (tarBlock - dataEnd%tarBlock) % tarBlock // a tar is in blocks from its start
		m.limit = dataEnd + pad + tarBlock + maxEntryHeaderBytes
		hdr, err := tr.Next()
		if m.over {
			after := ""
			if prev != "" {
				after = " after " + quote(prev)
			}
			return TooLarge("file", "has an entry%s with more than %d bytes of extended headers (PAX records, long names); pack it without extended attributes", after, maxEntryHeaderBytes)
		}
		if errors.Is(err, io.EOF) {
			if first {
				return Invalid("file", "is not a tar, tar.gz or zip archive (or an empty one)")
			}
			return nil
		}
		if err != nil {
			if first {
				return Invalid("file", "is not a tar, tar.gz or zip archive: %v", err)
			}
			return Invalid("file", "is a damaged archive: %v", err)
		}
		first, prev = false, hdr.Name
		e := rawEntry{name: hdr.Name, kind: "special", size: hdr.Size, mode: fs.FileMode(hdr.Mode).Perm(), mtime: hdr.ModTime,
			header: m.n - dataEnd - pad - tarBlock}
		data := hdr.Size
		switch hdr.Typeflag {
		case tar.TypeReg, tar.TypeRegA:
			e.kind = "reg"
		case tar.TypeDir:
			e.kind, data = "dir", 0
		case tar.TypeSymlink, tar.TypeLink:
			e.kind, data = "link", 0
		case tar.TypeXGlobalHeader: // its records were read by Next
			e.kind, data = "global", 0
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			data = 0
		}
		for k := range hdr.PAXRecords {
			if strings.HasPrefix(k, "GNU.sparse.") {
				e.kind = "special" // its content is not its size
			}
		}
		dataEnd = m.n + data
		m.limit = dataEnd
		if err := fn(e, tr); err != nil && !errors.Is(err, errSkip) {
			return err
		}
	}
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return `"` + s + `"`
}
