package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// The workspace's files are read and written by the file helper (deploy/sandbox/fsop.py)
// as the code's user, never by the engine: docker cp runs as root and follows links in
// the parents of a path, so `outputs/etc -> /etc` would serve /etc/shadow and a restore
// could write through a link into the image. The helper walks every path from a
// descriptor of /workspace one component at a time, never following a link.

// PutFiles writes files into the workspace as the code's user, creating parent
// directories; an existing file or link is replaced, never written through. A file
// whose parent is a link or a file is refused ([sandbox.ErrBadPath]).
func (s *Sandbox) PutFiles(ctx context.Context, files []sandbox.File) error {
	if len(files) == 0 {
		return nil
	}
	for i := range files {
		clean, err := sandbox.CleanPath(files[i].Name)
		if err != nil {
			return err
		}
		files[i].Name = clean
	}
	if done, err := s.putInline(ctx, files); done {
		return err
	}
	if err := s.resume(ctx); err != nil {
		return err
	}
	res, err := s.write(ctx, func(w io.Writer) error { return writeTar(w, files) })
	if err != nil {
		return fmt.Errorf("copy files into %s: %w", s.name, err)
	}
	if res.Failed > 0 {
		return fmt.Errorf("%w: %s", sandbox.ErrBadPath, strings.Join(res.Errors, "; "))
	}
	return nil
}

func writeTar(w io.Writer, files []sandbox.File) error {
	tw := tar.NewWriter(w)
	now := time.Now()
	dirs := map[string]bool{}
	for _, f := range files {
		// Parent directories first, so they belong to the code's user too.
		for dir := path.Dir(f.Name); dir != "."; dir = path.Dir(dir) {
			if dirs[dir] {
				break
			}
			dirs[dir] = true
		}
	}
	for _, dir := range sortedByDepth(dirs) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: now, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Name, Size: f.Size, Mode: 0o644, ModTime: now, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if n, err := io.Copy(tw, io.LimitReader(f.Body, f.Size)); err != nil {
			return fmt.Errorf("read %s: %w", f.Name, err)
		} else if n != f.Size {
			return fmt.Errorf("read %s: got %d bytes, want %d", f.Name, n, f.Size)
		}
	}
	return tw.Close()
}

func sortedByDepth(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	// Shorter paths are never deeper, so sorting by length puts parents first.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) < len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// writeResult is the file helper's account of a write.
type writeResult struct {
	Written int      `json:"written"`
	Failed  int      `json:"failed"`
	Errors  []string `json:"errors"` // the first few failures, "path: why"
}

// write has the file helper unpack the tar archive feed writes.
func (s *Sandbox) write(ctx context.Context, feed func(io.Writer) error) (writeResult, error) {
	return s.writeAs(ctx, codeUser, feed, "write")
}

// writeAs runs a writing operation of the file helper (args) as user, fed by feed.
func (s *Sandbox) writeAs(ctx context.Context, user string, feed func(io.Writer) error, args ...string) (writeResult, error) {
	h, err := s.startHelperAs(ctx, user, feed, args...)
	if err != nil {
		return writeResult{}, err
	}
	line, rerr := io.ReadAll(io.LimitReader(h, 64<<10))
	ferr := h.Close()
	var res writeResult
	if rerr != nil || json.Unmarshal(line, &res) != nil {
		if ferr != nil {
			return writeResult{}, ferr
		}
		return writeResult{}, fmt.Errorf("file helper failed: %s", h.explain(ctx))
	}
	if ferr != nil {
		return writeResult{}, ferr
	}
	res.Errors = sandbox.BoundNotes(res.Errors) // as untrusted as the code
	if res.Failed > 0 && len(res.Errors) == 0 {
		res.Errors = []string{fmt.Sprintf("%d entries not written", res.Failed)}
	}
	return res, nil
}

// OpenFile streams one regular file from the workspace, read as the code's user. A
// link in any component of the path is never followed.
func (s *Sandbox) OpenFile(ctx context.Context, name string) (io.ReadCloser, sandbox.FileInfo, error) {
	clean, err := sandbox.CleanPath(name)
	if err != nil {
		return nil, sandbox.FileInfo{}, err
	}
	if err := s.resume(ctx); err != nil {
		return nil, sandbox.FileInfo{}, err
	}
	r, err := s.startRead(ctx, []string{clean}, sandbox.ReadLimits{})
	if err != nil {
		return nil, sandbox.FileInfo{}, err
	}
	info, body, err := r.next()
	if err != nil {
		r.Close()
		return nil, sandbox.FileInfo{}, err
	}
	return readCloser{Reader: body, Closer: r}, info, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// ReadFiles streams regular files from the workspace to fn, all through one run of
// the file helper. See [sandbox.Sandbox.ReadFiles].
func (s *Sandbox) ReadFiles(ctx context.Context, names []string, limits sandbox.ReadLimits, fn func(sandbox.FileInfo, io.Reader, error) error) error {
	var ask []string
	for _, name := range names {
		if c, err := sandbox.CleanPath(name); err == nil && c == name {
			ask = append(ask, c)
		}
	}
	var r *fileReader
	if len(ask) > 0 {
		var err error
		if r, err = s.readInline(ctx, ask, limits); err != nil {
			return err
		}
		if r == nil { // not through the kernel: through the helper
			if err := s.resume(ctx); err != nil {
				return err
			}
			if r, err = s.startRead(ctx, ask, limits); err != nil {
				return err
			}
		}
		defer r.Close()
	}
	for _, name := range names {
		if len(ask) == 0 || ask[0] != name {
			if err := fn(sandbox.FileInfo{Name: name}, nil, fmt.Errorf("%w: %q", sandbox.ErrBadPath, name)); err != nil {
				return err
			}
			continue
		}
		ask = ask[1:]
		info, body, err := r.next()
		if err != nil && !isFileError(err) {
			return fmt.Errorf("read files of %s: %w", s.name, err)
		}
		if err := fn(info, body, err); err != nil {
			return err
		}
	}
	return nil
}

func isFileError(err error) bool {
	return errors.Is(err, sandbox.ErrNoFile) || errors.Is(err, sandbox.ErrNotRegular) ||
		errors.Is(err, sandbox.ErrBadPath) || errors.Is(err, sandbox.ErrTooLarge)
}

// fileReader reads the file helper's (or a one-off's kernel's) answer to a read: a
// tar stream of one entry per path asked, in order, named by its index (see
// deploy/sandbox/fsop.py read_tar). It is as untrusted as the code.
type fileReader struct {
	io.Closer
	diag   func() string // what the reader said, for error messages
	tr     *tar.Reader
	names  []string
	limits sandbox.ReadLimits
	i      int
	sent   int64

	peeked bool // the next entry's header was read ahead, into hdr and hdrErr
	hdr    *tar.Header
	hdrErr error
}

// peek reads the next entry's header ahead; next returns it. It returns the
// error of a broken answer.
func (r *fileReader) peek() error {
	if !r.peeked {
		r.hdr, r.hdrErr = r.tr.Next()
		r.peeked = true
	}
	return r.hdrErr
}

// startRead starts the file helper reading names. An answer that breaks off before
// its first entry is asked for once more, since a read changes nothing: on a starved
// host under gVisor the engine has been seen to end a helper's stream before the
// helper said anything. A second break is reported, with what the helper said.
func (s *Sandbox) startRead(ctx context.Context, names []string, limits sandbox.ReadLimits) (*fileReader, error) {
	var in bytes.Buffer
	for _, n := range names {
		in.WriteString(n)
		in.WriteByte(0)
	}
	arg := func(n int64) string { return strconv.FormatInt(unbounded(n), 10) }
	for attempt := 1; ; attempt++ {
		h, err := s.startHelper(ctx, func(w io.Writer) error { _, err := w.Write(in.Bytes()); return err },
			"read", arg(limits.Each), arg(limits.Total))
		if err != nil {
			return nil, err
		}
		r := newFileReader(h, h, func() string { return h.explain(ctx) }, names, limits)
		if r.peek() == nil || attempt == 2 || ctx.Err() != nil {
			return r, nil // next reports a break
		}
		r.Close()
	}
}

func newFileReader(answer io.Reader, c io.Closer, diag func() string, names []string, limits sandbox.ReadLimits) *fileReader {
	if limits.Total > 0 {
		// What an honest helper sends: the files within Total, and headers.
		answer = io.LimitReader(answer, limits.Total+int64(len(names)+2)*8<<10)
	}
	return &fileReader{Closer: c, diag: diag, tr: tar.NewReader(answer), names: names, limits: limits}
}

// unbounded is a read limit as the helper takes it: 0 (no bound) is the largest.
func unbounded(n int64) int64 {
	if n > 0 {
		return n
	}
	return math.MaxInt64
}

// next returns the next file asked for and a reader of its content, or an error:
// one of the sandbox's file errors when the helper says why the file was not read,
// another when the helper broke.
func (r *fileReader) next() (sandbox.FileInfo, io.Reader, error) {
	name := r.names[r.i]
	info := sandbox.FileInfo{Name: name}
	r.peek()
	hdr, err := r.hdr, r.hdrErr
	r.peeked = false
	if err != nil {
		return info, nil, fmt.Errorf("file helper: %w (%s)", cmpErr(err, io.ErrUnexpectedEOF), r.diag())
	}
	if hdr.Name != strconv.Itoa(r.i) || hdr.Typeflag != tar.TypeReg {
		return info, nil, fmt.Errorf("file helper answered entry %q for file %d", hdr.Name, r.i)
	}
	r.i++
	why := hdr.PAXRecords["CODEINTERP.error"]
	if why == "" {
		info.Size, info.ModTime = hdr.Size, hdr.ModTime
		if !r.limits.Admits(hdr.Size, r.sent) {
			return info, nil, fmt.Errorf("%w: %s", sandbox.ErrTooLarge, name) // not what the helper was asked
		}
		r.sent += hdr.Size
		return info, r.tr, nil
	}
	switch why {
	case "nofile":
		return info, nil, fmt.Errorf("%w: %s", sandbox.ErrNoFile, name)
	case "notregular":
		return info, nil, fmt.Errorf("%w: %s (or a link or a file on its path)", sandbox.ErrNotRegular, name)
	case "badpath":
		return info, nil, fmt.Errorf("%w: %q", sandbox.ErrBadPath, name)
	case "toolarge":
		size, _ := strconv.ParseInt(hdr.PAXRecords["CODEINTERP.size"], 10, 64)
		info.Size = max(size, 0)
		return info, nil, fmt.Errorf("%w: %s", sandbox.ErrTooLarge, name)
	}
	return info, nil, fmt.Errorf("file helper gave an unknown reason %q for %s", why, name)
}

// Files lists the regular files in the workspace (at most 1000), walked by the file
// helper.
func (s *Sandbox) Files(ctx context.Context) ([]sandbox.FileInfo, error) {
	if err := s.resume(ctx); err != nil {
		return nil, err
	}
	h, err := s.startHelper(ctx, nil, "list")
	if err != nil {
		return nil, err
	}
	defer h.Close()
	b, err := io.ReadAll(io.LimitReader(h, 8<<20))
	var l struct {
		Files []listingEntry `json:"files"`
	}
	if err != nil || json.Unmarshal(b, &l) != nil {
		return nil, fmt.Errorf("list files of %s: %s", s.name, h.explain(ctx))
	}
	return sandbox.Outcome{Workspace: listing(l.Files)}.Clean().Workspace, nil
}

// resume unpauses the sandbox for an operation that runs a process in it.
func (s *Sandbox) resume(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.resumeLocked(ctx)
	return err
}
