package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/sandbox"
)

// PutFiles writes files into the workspace, creating parent directories, owned by the
// code's user. Existing files are replaced.
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
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, files)) }()
	err := s.d.cli.CopyToContainer(ctx, s.id, "/workspace", pr, container.CopyToContainerOptions{})
	pr.CloseWithError(errors.New("copy ended"))
	if err != nil {
		return fmt.Errorf("copy files into %s: %w", s.name, err)
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
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, Uid: 1000, Gid: 1000, ModTime: now}); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Name, Size: f.Size, Mode: 0o644, Uid: 1000, Gid: 1000, ModTime: now}); err != nil {
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

// OpenFile streams one regular file from the workspace. Symbolic links are never
// followed, so code cannot point a path at a file outside what it could write.
func (s *Sandbox) OpenFile(ctx context.Context, name string) (io.ReadCloser, sandbox.FileInfo, error) {
	clean, err := sandbox.CleanPath(name)
	if err != nil {
		return nil, sandbox.FileInfo{}, err
	}
	rc, _, err := s.d.cli.CopyFromContainer(ctx, s.id, "/workspace/"+clean)
	if err != nil {
		if client.IsErrNotFound(err) {
			return nil, sandbox.FileInfo{}, fmt.Errorf("%w: %s", sandbox.ErrNoFile, clean)
		}
		return nil, sandbox.FileInfo{}, fmt.Errorf("copy %s from %s: %w", clean, s.name, err)
	}
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		rc.Close()
		return nil, sandbox.FileInfo{}, fmt.Errorf("read archive of %s: %w", clean, err)
	}
	if hdr.Typeflag != tar.TypeReg {
		rc.Close()
		return nil, sandbox.FileInfo{}, fmt.Errorf("%w: %s", sandbox.ErrNotRegular, clean)
	}
	return readCloser{Reader: tr, Closer: rc}, sandbox.FileInfo{Name: clean, Size: hdr.Size, ModTime: hdr.ModTime}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// Files lists the regular files in the workspace (at most 1000), asking the kernel.
func (s *Sandbox) Files(ctx context.Context) ([]sandbox.FileInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.resumeLocked(ctx); err != nil {
		return nil, err
	}
	if s.kernel == nil {
		k, err := s.d.startKernel(ctx, s.id, s.spec.Preload)
		if err != nil {
			return nil, fmt.Errorf("restart kernel in %s: %w", s.name, err)
		}
		s.kernel, s.restartPending = k, true
	}
	id := "list-" + randomHex(4)
	if err := s.kernel.send(wireRequest{Op: "list", ID: id}); err != nil {
		return nil, s.lostKernel(ctx, err)
	}
	for {
		select {
		case ev, ok := <-s.kernel.events:
			if !ok {
				return nil, s.lostKernel(ctx, errors.New("kernel exited while listing files"))
			}
			if ev.Ev == "listing" && ev.ID == id {
				return cleanListing(ev.Workspace), nil
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
