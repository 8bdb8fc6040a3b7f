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
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// SkillLimits bound a skill upload and what an execution attaches.
type SkillLimits struct {
	MaxBytes     int64 // the uploaded archive (CODEINTERP_SKILL_MAX_BYTES)
	MaxUnpacked  int64 // the bytes of its files (CODEINTERP_SKILL_MAX_UNPACKED_BYTES)
	MaxFiles     int   // its files and directories (CODEINTERP_SKILL_MAX_FILES)
	PerExecution int   // skills attached to one execution, a thread's included
}

// A skill archive is a tar, a gzip-compressed tar or a zip, told apart by its first
// bytes. Only regular files and directories are accepted: a link (symbolic or hard),
// a device or a FIFO is refused, and every path is checked like an input file's name
// (ValidName: relative, no "..", no control characters, bounded lengths). When every
// entry lies under one top-level directory (what `zip -r s.zip my-skill/` or
// `tar czf s.tgz my-skill/` make), that directory is dropped. The result is stored as
// a normalised tar: directories first, then files, owned by root, modes 0755/0644
// (0755 for a file executable in the archive).

// skillEntry is one entry of an uploaded archive.
type skillEntry struct {
	name  string // clean, relative
	dir   bool
	size  int64
	exec  bool
	mtime time.Time
}

// skillManifest is what an archive holds once checked.
type skillManifest struct {
	entries []skillEntry
	strip   string // a top-level directory every entry lies under, dropped; "" for none
	files   int
	bytes   int64
}

var errSkip = errors.New("skip entry")

// eachSkillEntry calls fn for each entry of the archive in f (size bytes), with a
// reader of its content for a regular file. kind is "reg", "dir", "link", "special".
func eachSkillEntry(f io.ReaderAt, size int64, fn func(name, kind string, hdrSize int64, mode fs.FileMode, mtime time.Time, body io.Reader) error) error {
	var magic [4]byte
	n, _ := f.ReadAt(magic[:], 0)
	switch {
	case n >= 4 && (bytes.Equal(magic[:], []byte("PK\x03\x04")) || bytes.Equal(magic[:], []byte("PK\x05\x06"))):
		zr, err := zip.NewReader(f, size)
		if err != nil {
			return Invalid("file", "is not a valid zip archive: %v", err)
		}
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
			var body io.Reader
			if kind == "reg" {
				rc, err := zf.Open()
				if err != nil {
					return Invalid("file", "zip entry %q cannot be read: %v", zf.Name, err)
				}
				body = rc
				err = fn(zf.Name, kind, int64(zf.UncompressedSize64), mode, zf.Modified, body)
				rc.Close()
				if err != nil && !errors.Is(err, errSkip) {
					return err
				}
				continue
			}
			if err := fn(zf.Name, kind, 0, mode, zf.Modified, nil); err != nil && !errors.Is(err, errSkip) {
				return err
			}
		}
		return nil
	case n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		zr, err := gzip.NewReader(io.NewSectionReader(f, 0, size))
		if err != nil {
			return Invalid("file", "is not a valid gzip stream: %v", err)
		}
		defer zr.Close()
		return eachTarEntry(bufio.NewReader(zr), fn)
	}
	return eachTarEntry(io.NewSectionReader(f, 0, size), fn)
}

func eachTarEntry(r io.Reader, fn func(string, string, int64, fs.FileMode, time.Time, io.Reader) error) error {
	tr := tar.NewReader(r)
	first := true
	for {
		hdr, err := tr.Next()
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
		first = false
		kind := "special"
		switch hdr.Typeflag {
		case tar.TypeReg, tar.TypeRegA:
			kind = "reg"
		case tar.TypeDir:
			kind = "dir"
		case tar.TypeSymlink, tar.TypeLink:
			kind = "link"
		case tar.TypeXGlobalHeader:
			continue
		}
		if err := fn(hdr.Name, kind, hdr.Size, fs.FileMode(hdr.Mode).Perm(), hdr.ModTime, tr); err != nil && !errors.Is(err, errSkip) {
			return err
		}
	}
}

// checkSkillArchive reads an uploaded archive through once and checks every entry
// against the limits, without keeping any content.
func checkSkillArchive(f io.ReaderAt, size int64, lim SkillLimits) (skillManifest, error) {
	var m skillManifest
	seen := map[string]bool{} // clean name → is a directory
	err := eachSkillEntry(f, size, func(name, kind string, n int64, mode fs.FileMode, mtime time.Time, _ io.Reader) error {
		switch kind {
		case "link":
			return Invalid("file", "archive entry %q is a link; a skill holds regular files and directories only", name)
		case "special":
			return Invalid("file", "archive entry %q is a device, FIFO or other special file; a skill holds regular files and directories only", name)
		}
		if strings.HasPrefix(name, "/") {
			return Invalid("file", "archive entry %q is an absolute path", name)
		}
		if kind == "dir" && path.Clean(strings.TrimPrefix(name, "./")) == "." {
			return errSkip // the archive's own root: "./"
		}
		clean, err := ValidName("file", name)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return Invalid("file", "archive entry %q: %s", name, e.Message)
			}
			return err
		}
		if dir, dup := seen[clean]; dup {
			if dir && kind == "dir" {
				return errSkip
			}
			return Invalid("file", "archive entry %q appears twice", clean)
		}
		seen[clean] = kind == "dir"
		if len(m.entries)+1 > lim.MaxFiles {
			return TooLarge("file", "has more than %d files and directories; the limit is CODEINTERP_SKILL_MAX_FILES", lim.MaxFiles)
		}
		e := skillEntry{name: clean, dir: kind == "dir", mtime: mtime}
		if !e.dir {
			e.size, e.exec = n, mode&0o111 != 0
			m.files++
			m.bytes += n
			if n < 0 || m.bytes > lim.MaxUnpacked {
				return TooLarge("file", "unpacks to more than %d bytes; the limit is CODEINTERP_SKILL_MAX_UNPACKED_BYTES", lim.MaxUnpacked)
			}
		}
		m.entries = append(m.entries, e)
		return nil
	})
	if err != nil {
		return m, err
	}
	if m.files == 0 {
		return m, Invalid("file", "holds no files")
	}
	// A file must not also be a directory of another entry.
	for _, e := range m.entries {
		for dir := path.Dir(e.name); dir != "."; dir = path.Dir(dir) {
			if isDir, ok := seen[dir]; ok && !isDir {
				return m, Invalid("file", "archive entry %q is both a file and a directory", dir)
			}
		}
	}
	m.strip = commonTop(m.entries, seen)
	return m, nil
}

// commonTop returns the top-level directory every entry lies under (the directory
// itself aside), or "".
func commonTop(entries []skillEntry, seen map[string]bool) string {
	top := ""
	for _, e := range entries {
		first, _, _ := strings.Cut(e.name, "/")
		if top == "" {
			top = first
		} else if first != top {
			return ""
		}
	}
	if isDir, ok := seen[top]; (ok && !isDir) || !slices.ContainsFunc(entries, func(e skillEntry) bool { return strings.HasPrefix(e.name, top+"/") }) {
		return ""
	}
	return top
}

// writeSkillTar writes the normalised tar of a checked archive to w.
func writeSkillTar(f io.ReaderAt, size int64, m skillManifest, w io.Writer) error {
	rename := func(name string) string {
		if m.strip == "" {
			return name
		}
		return strings.TrimPrefix(strings.TrimPrefix(name, m.strip), "/")
	}
	dirs := map[string]bool{}
	for _, e := range m.entries {
		name := rename(e.name)
		if e.dir && name != "" {
			dirs[name] = true
		}
		for d := path.Dir(name); d != "." && d != ""; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	tw := tar.NewWriter(w)
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	slices.Sort(names)
	now := time.Now().UTC().Truncate(time.Second) // whole seconds: no PAX records
	for _, d := range names {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: now, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	files := map[string]skillEntry{}
	for _, e := range m.entries {
		if !e.dir {
			files[e.name] = e
		}
	}
	err := eachSkillEntry(f, size, func(name, kind string, _ int64, _ fs.FileMode, _ time.Time, body io.Reader) error {
		if kind != "reg" {
			return errSkip
		}
		clean, _ := ValidName("file", name)
		e, ok := files[clean]
		if !ok {
			return errSkip
		}
		delete(files, clean) // once
		mode := int64(0o644)
		if e.exec {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rename(e.name), Size: e.size, Mode: mode, ModTime: e.mtime.Truncate(time.Second), Format: tar.FormatPAX}); err != nil {
			return err
		}
		// A zip entry's declared size is only a claim: exactly that many bytes, no more.
		if n, err := io.CopyN(tw, body, e.size); err != nil {
			return Invalid("file", "archive entry %q is shorter than it says (%d of %d bytes): %v", e.name, n, e.size, err)
		}
		if n, _ := io.CopyN(io.Discard, body, 1); n > 0 {
			return Invalid("file", "archive entry %q is longer than it says (%d bytes)", e.name, e.size)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// spoolSkill copies an uploaded body to a temporary file, refusing one over max bytes.
func spoolSkill(body io.Reader, max int64) (*os.File, int64, error) {
	f, err := os.CreateTemp("", "codeinterp-skill-*")
	if err != nil {
		return nil, 0, err
	}
	os.Remove(f.Name()) // gone when closed
	n, err := io.Copy(f, io.LimitReader(body, max+1))
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if n > max {
		f.Close()
		return nil, 0, TooLarge("file", "the archive is over %d bytes; the limit is CODEINTERP_SKILL_MAX_BYTES", max)
	}
	return f, n, nil
}
