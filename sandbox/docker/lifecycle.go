package docker

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Pause freezes every process of the sandbox (docker pause): it uses no CPU and
// keeps its memory, kernel state and workspace. Runs and file operations unpause it
// first, so callers need not.
func (s *Sandbox) Pause(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused {
		return nil
	}
	if err := s.checkFence(ctx); err != nil {
		return err
	}
	if err := s.engineRetry(ctx, []string{"is already paused", "unable to freeze"}, func() error { return s.d.cli.ContainerPause(ctx, s.id) }); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", s.name, err)
	}
	s.paused = true
	s.d.weights.leave(s.spec.Tenant, s.id)
	return nil
}

// Resume unpauses the sandbox if it is paused, and reports whether it was.
func (s *Sandbox) Resume(ctx context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumeLocked(ctx)
}

func (s *Sandbox) resumeLocked(ctx context.Context) (bool, error) {
	if !s.paused {
		return false, nil
	}
	if err := s.engineRetry(ctx, []string{"is not paused"}, func() error { return s.d.cli.ContainerUnpause(ctx, s.id) }); err != nil {
		return false, fmt.Errorf("resume sandbox %s: %w", s.name, err)
	}
	s.paused = false
	s.d.weights.join(s.spec.Tenant, s.id, 0)
	return true, nil
}

// staleStateFor bounds how long a pause or an unpause waits for the engine's record
// of the container's state to catch up (see engineRetry).
const staleStateFor = 5 * time.Second

// engineRetry runs a pause or an unpause, retrying while the engine answers with
// one of the transient errors: its "already paused" or "not paused" conflict, or
// runc's "unable to freeze". The engine marks a container paused both when it
// pauses it and when containerd's pause event arrives, which may be after a quick
// unpause: for a moment it calls a running container paused, until the resume
// event puts it right (seen under gVisor, whose events lag). This sandbox's own
// flag, kept under s.mu, is the truth: nobody else pauses it. runc (cgroup v1)
// gives up on a freeze that a process keeps escaping (one forking, or in the
// middle of I/O) and thaws the container again; a moment later it freezes (CI saw
// it once on a busy machine).
func (s *Sandbox) engineRetry(ctx context.Context, transient []string, op func() error) error {
	deadline := time.Now().Add(staleStateFor)
	wait := 5 * time.Millisecond
	for {
		err := op()
		if err == nil || !containsAny(err.Error(), transient) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(wait):
			wait = min(2*wait, 200*time.Millisecond)
		case <-ctx.Done():
			return err
		}
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// Snapshot streams the workspace as a tar archive whose paths are relative to
// /workspace. The caller must close it. A file larger than the workspace (sparse:
// tmpfs bounds pages, not sizes) is left out, as are files once the archive holds
// the workspace's size of data, so that it can always be restored; and the archive
// ends after reading twice that much, so no sparse file costs more to snapshot.
func (s *Sandbox) Snapshot(ctx context.Context) (io.ReadCloser, error) {
	if !s.isPaused() {
		// A stale owner must not save over a newer owner's snapshot. (A paused
		// sandbox runs nothing to check with; only its owner or the janitor, which
		// fences first, snapshot one.)
		if err := s.checkFence(ctx); err != nil {
			return nil, err
		}
	}
	rc, _, err := s.d.cli.CopyFromContainer(ctx, s.id, "/workspace/.")
	if err != nil {
		return nil, fmt.Errorf("snapshot workspace of %s: %w", s.name, err)
	}
	pr, pw := io.Pipe()
	go func() {
		defer rc.Close()
		pw.CloseWithError(rewriteTar(rc, pw, func(name string) string {
			// Runtime names entries "./<path>" for "/workspace/."; keep "<path>".
			return strings.TrimPrefix(strings.TrimPrefix(name, "."), "/")
		}, snapshotBudget(s.limits.Workspace)))
	}()
	return pr, nil
}

// Restore unpacks a Snapshot archive into the workspace, written by the file helper
// as the code's user. Only regular files, directories and symbolic links are
// restored; entries whose path is not a clean workspace path, or lies under a link
// (in the archive or on disk: no link is ever followed), are left out, and the
// thread goes on with the rest.
func (s *Sandbox) Restore(ctx context.Context, archive io.Reader) error {
	if err := s.resume(ctx); err != nil {
		return err
	}
	_, err := s.write(ctx, func(w io.Writer) error {
		return rewriteTar(archive, w, func(name string) string { return name }, tarBudget{})
	})
	if err != nil {
		return fmt.Errorf("restore workspace of %s: %w", s.name, err)
	}
	return nil
}

// tarBudget bounds what rewriteTar copies; zero fields bound nothing.
type tarBudget struct {
	maxEntry int64 // a larger file is skipped
	maxKept  int64 // a file that would bring the data copied past this is skipped
	maxRead  int64 // the archive ends before the data read (copied or skipped) passes this
}

// snapshotBudget keeps at most a workspace's worth of data, which a workspace of that
// size can restore, and reads at most twice that.
func snapshotBudget(workspace int64) tarBudget {
	return tarBudget{maxEntry: workspace, maxKept: workspace, maxRead: 2 * workspace}
}

// admit decides on a regular file of size bytes, given the data read and kept so far.
func (b tarBudget) admit(size, read, kept int64) (keep, more bool) {
	switch {
	case b.maxRead > 0 && read+size > b.maxRead:
		return false, false
	case b.maxEntry > 0 && size > b.maxEntry, b.maxKept > 0 && kept+size > b.maxKept:
		return false, true
	}
	return true, true
}

// rewriteTar copies the safe entries of a workspace archive, renamed by rename and
// owned by the code's user, within budget. Entries whose new name is empty, is no
// clean workspace path (longer than sandbox.MaxPathLen: a tree 1,200 deep; a newline)
// or lies under a link of the archive are skipped, and the copy goes on.
func rewriteTar(r io.Reader, w io.Writer, rename func(string) string, budget tarBudget) error {
	tr, tw := tar.NewReader(r), tar.NewWriter(w)
	var read, kept int64
	links := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return tw.Close()
		}
		if err != nil {
			return fmt.Errorf("read workspace archive: %w", err)
		}
		name := strings.TrimSuffix(rename(hdr.Name), "/")
		c, err := sandbox.CleanPath(name)
		skip := err != nil || c != name || underLink(links, name) || isSkillsLink(hdr, name)
		switch hdr.Typeflag {
		case tar.TypeReg:
			keep, more := budget.admit(hdr.Size, read, kept)
			if !more {
				return tw.Close()
			}
			read += hdr.Size // a skipped entry is read through by tr.Next
			if !keep || skip {
				continue
			}
			kept += hdr.Size
		case tar.TypeSymlink, tar.TypeDir:
			if skip {
				continue
			}
			if hdr.Typeflag == tar.TypeSymlink {
				links[name] = true
			}
		default:
			continue
		}
		out := &tar.Header{
			Typeflag: hdr.Typeflag, Name: name, Linkname: hdr.Linkname, Size: hdr.Size,
			Mode: hdr.Mode & 0o777, ModTime: hdr.ModTime, Uid: 1000, Gid: 1000, Format: tar.FormatPAX,
		}
		if hdr.Typeflag == tar.TypeDir {
			out.Name += "/"
			out.Size = 0
		}
		if err := tw.WriteHeader(out); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := io.CopyN(tw, tr, hdr.Size); err != nil {
				return fmt.Errorf("copy %s: %w", name, err)
			}
		}
	}
}

// underLink reports whether a parent of name is one of links.
func underLink(links map[string]bool, name string) bool {
	for i := range len(name) {
		if name[i] == '/' && links[name[:i]] {
			return true
		}
	}
	return false
}

// Usage is what a sandbox costs the host now.
type Usage struct {
	MemoryBytes int64 // resident memory of the sandbox's processes, page cache excluded
}

// Usage reads the sandbox's current resource use from the engine.
func (s *Sandbox) Usage(ctx context.Context) (Usage, error) {
	st, err := s.d.cli.ContainerStatsOneShot(ctx, s.id)
	if err != nil {
		return Usage{}, fmt.Errorf("stats of %s: %w", s.name, err)
	}
	defer st.Body.Close()
	var v container.StatsResponse
	if err := json.NewDecoder(st.Body).Decode(&v); err != nil {
		return Usage{}, fmt.Errorf("decode stats of %s: %w", s.name, err)
	}
	mem := int64(v.MemoryStats.Usage)
	if cache, ok := v.MemoryStats.Stats["total_inactive_file"]; ok { // cgroup v1
		mem -= int64(cache)
	} else if cache, ok := v.MemoryStats.Stats["inactive_file"]; ok { // cgroup v2
		mem -= int64(cache)
	}
	return Usage{MemoryBytes: mem}, nil
}
