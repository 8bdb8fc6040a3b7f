package docker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
)

// helperCmd runs deploy/sandbox/fsop.py isolated from the environment (-I) and
// without site packages (-S): the code's user can write to neither, but nothing the
// code set up should be able to steer it. It is imported, not run as a script, so
// Python loads the image's compiled copy instead of compiling it on every run.
var helperCmd = []string{"python3", "-I", "-S", "-c",
	"import sys; sys.path.insert(0, '/opt/codeinterp'); import fsop; sys.exit(fsop.main(sys.argv))"}

// helper is one run of the file helper in a sandbox, as the code's user: the
// workspace's files are read and written through it, never by the engine (which
// would do it as root, following links in parent directories). Read its standard
// output from it; Close it when done. Its output is as untrusted as the code: the
// code's other processes run as the same user.
type helper struct {
	s      *Sandbox
	execID string
	hj     types.HijackedResponse
	out    demux
	fed    chan error // the feeder's result; nil without a feeder
	closed bool
}

// startHelper starts `fsop.py args...` in the sandbox. feed, if not nil, writes the
// helper's standard input from a goroutine of its own, which Close waits for.
// Under a fencing token it runs only while no newer owner fenced the sandbox, so a
// stale owner never writes into the new owner's workspace (fence.go).
func (s *Sandbox) startHelper(ctx context.Context, feed func(io.Writer) error, args ...string) (*helper, error) {
	return s.startHelperAs(ctx, codeUser, feed, args...)
}

// startHelperAs is startHelper as user: the keeper's runs touch only its own skills
// tmpfs (skills.go).
func (s *Sandbox) startHelperAs(ctx context.Context, user string, feed func(io.Writer) error, args ...string) (*helper, error) {
	s.mu.Lock()
	token := s.token
	s.mu.Unlock()
	dir := "/workspace"
	if user != codeUser {
		dir = "/" // the workspace is the code's user's alone (mode 0700)
	}
	created, err := s.d.cli.ContainerExecCreate(ctx, s.id, container.ExecOptions{
		User: user, WorkingDir: dir, Cmd: fenced(token, append(helperCmd[:len(helperCmd):len(helperCmd)], args...)...),
		AttachStdin: feed != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, fmt.Errorf("create file helper in %s: %w", s.name, err)
	}
	hj, err := s.d.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("start file helper in %s: %w", s.name, err)
	}
	h := &helper{s: s, execID: created.ID, hj: hj, out: demux{r: hj.Reader}}
	if feed != nil {
		h.fed = make(chan error, 1)
		go func() {
			err := feed(hj.Conn)
			if cerr := hj.CloseWrite(); err == nil {
				err = cerr
			}
			h.fed <- err
		}()
	}
	// The stream does not watch ctx: end it when ctx ends, so no read waits forever.
	stop := context.AfterFunc(ctx, func() { hj.Conn.Close() })
	h.out.stop = stop
	return h, nil
}

// Read reads the helper's standard output.
func (h *helper) Read(p []byte) (int, error) { return h.out.Read(p) }

// Close ends the helper's stream and waits for its feeder; it returns the feeder's
// error, if any.
func (h *helper) Close() error {
	if h.closed {
		return nil
	}
	h.closed = true
	h.out.stop()
	h.hj.Close()
	if h.fed == nil {
		return nil
	}
	return <-h.fed
}

// stderr is what the helper wrote to its standard error so far, for error messages.
func (h *helper) stderr() string {
	if len(h.out.stderr) == 0 {
		return "no diagnostics"
	}
	return string(h.out.stderr)
}

// explain says why a helper's answer broke off, for error messages: its standard
// error, the start of a short standard output (where the engine writes an exec it
// could not start: "OCI runtime exec failed: ..."), and how the process ended.
func (h *helper) explain(ctx context.Context) string {
	why := h.stderr()
	if h.out.total > 0 && h.out.total <= int64(len(h.out.head)) {
		why += fmt.Sprintf("; its output was %q", h.out.head)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if ins, err := h.s.d.cli.ContainerExecInspect(ctx, h.execID); err == nil {
		if ins.Running {
			why += "; still running"
		} else {
			why += fmt.Sprintf("; exit code %d", ins.ExitCode)
		}
	}
	return why
}

// demux reads standard output out of an exec's multiplexed stream (frames of an
// 8-byte header — stream, 3 zero bytes, big-endian length — and a payload), keeping
// the first 16 KiB of standard error aside.
type demux struct {
	r      *bufio.Reader
	left   int // bytes of the current stdout frame not read yet
	stderr []byte
	head   [256]byte // the first bytes of standard output
	total  int64     // bytes of standard output read
	stop   func() bool
}

func (d *demux) Read(p []byte) (int, error) {
	for d.left == 0 {
		var hdr [8]byte
		if _, err := io.ReadFull(d.r, hdr[:]); err != nil {
			return 0, err // io.EOF at a frame boundary: the helper is done
		}
		n := int(binary.BigEndian.Uint32(hdr[4:]))
		switch hdr[0] {
		case 1:
			d.left = n
		default: // stderr (2) or the engine's own error (3)
			keep := min(n, max(16<<10-len(d.stderr), 0))
			buf := make([]byte, keep)
			if _, err := io.ReadFull(d.r, buf); err != nil {
				return 0, io.ErrUnexpectedEOF
			}
			d.stderr = append(d.stderr, buf...)
			if _, err := d.r.Discard(n - keep); err != nil {
				return 0, io.ErrUnexpectedEOF
			}
		}
	}
	n, err := d.r.Read(p[:min(len(p), d.left)])
	if d.total < int64(len(d.head)) {
		copy(d.head[d.total:], p[:n])
	}
	d.total += int64(n)
	d.left -= n
	if errors.Is(err, io.EOF) && d.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
