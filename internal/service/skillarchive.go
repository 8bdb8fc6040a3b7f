package service

import (
	"archive/tar"
	"errors"
	"io"
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
// (ValidName: relative, no "..", no control characters, bounded lengths). What is
// read besides the files is bounded too (skillentries.go): a tar entry's extended
// headers (PAX records, long names) and a zip's central directory; a tar's extended
// headers count against the unpacked bytes, and a global PAX header as an entry. When every
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
	lim     SkillLimits
}

var errSkip = errors.New("skip entry")

// checkSkillArchive reads an uploaded archive through once and checks every entry
// against the limits, without keeping any content.
func checkSkillArchive(f io.ReaderAt, size int64, lim SkillLimits) (skillManifest, error) {
	m := skillManifest{lim: lim}
	seen := map[string]bool{} // clean name → is a directory
	var globals int           // PAX global headers: entries too, though they name no file
	var headers int64         // bytes of extended headers
	tooLarge := func() error {
		return TooLarge("file", "unpacks to more than %d bytes (extended headers included); the limit is CODEINTERP_SKILL_MAX_UNPACKED_BYTES", lim.MaxUnpacked)
	}
	tooMany := func() error {
		return TooLarge("file", "has more than %d files and directories; the limit is CODEINTERP_SKILL_MAX_FILES", lim.MaxFiles)
	}
	err := eachSkillEntry(f, size, lim, func(re rawEntry, _ io.Reader) error {
		name := re.name
		headers += re.header // checked with the entry's size, once its name is
		switch re.kind {
		case "global":
			if globals++; len(m.entries)+globals > lim.MaxFiles {
				return tooMany()
			}
			if m.bytes+headers > lim.MaxUnpacked {
				return tooLarge()
			}
			return errSkip
		case "link":
			return Invalid("file", "archive entry %q is a link; a skill holds regular files and directories only", name)
		case "special":
			return Invalid("file", "archive entry %q is a device, FIFO, sparse or other special file; a skill holds regular files and directories only", name)
		}
		if strings.HasPrefix(name, "/") {
			return Invalid("file", "archive entry %q is an absolute path", name)
		}
		if re.kind == "dir" && path.Clean(strings.TrimPrefix(name, "./")) == "." {
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
			if dir && re.kind == "dir" {
				return errSkip
			}
			return Invalid("file", "archive entry %q appears twice", clean)
		}
		seen[clean] = re.kind == "dir"
		if len(m.entries)+globals+1 > lim.MaxFiles {
			return tooMany()
		}
		e := skillEntry{name: clean, dir: re.kind == "dir", mtime: re.mtime}
		if !e.dir {
			e.size, e.exec = re.size, re.mode&0o111 != 0
			m.files++
			m.bytes += re.size
		}
		if (!e.dir && re.size < 0) || m.bytes+headers > lim.MaxUnpacked {
			return tooLarge()
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
	err := eachSkillEntry(f, size, m.lim, func(re rawEntry, body io.Reader) error {
		if re.kind != "reg" {
			return errSkip
		}
		clean, _ := ValidName("file", re.name)
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
