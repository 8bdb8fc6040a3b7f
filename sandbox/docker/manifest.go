package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Manifest reads what image says it holds (sandbox.ManifestPath), from a container
// created, never started, and removed again: nothing of the image runs. It returns
// nil, nil for an image without a manifest, and an error wrapping
// sandbox.ErrImageMissing for an image the engine does not have.
func (d *Runtime) Manifest(ctx context.Context, image string) (*sandbox.Manifest, error) {
	created, err := d.cli.ContainerCreate(ctx, &container.Config{
		Image: image, Cmd: []string{"true"}, NetworkDisabled: true,
		// Not LabelInstall: the janitor and the host cap must never see it as a sandbox.
		Labels: map[string]string{"codeinterp.manifest": d.cfg.Prefix},
	}, &container.HostConfig{NetworkMode: "none"}, nil, nil, d.cfg.Prefix+"-manifest-"+randomHex(8))
	if client.IsErrNotFound(err) {
		return nil, fmt.Errorf("%w: %s: %v", sandbox.ErrImageMissing, image, err)
	}
	if err != nil {
		return nil, fmt.Errorf("create container to read the manifest of %s: %w", image, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = d.cli.ContainerRemove(rctx, created.ID, container.RemoveOptions{Force: true})
	}()
	rc, _, err := d.cli.CopyFromContainer(ctx, created.ID, sandbox.ManifestPath)
	if client.IsErrNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("copy the manifest of %s: %w", image, err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("read the manifest of %s: %w", image, err)
	}
	if hdr.Typeflag != tar.TypeReg || hdr.Size > sandbox.MaxManifestBytes {
		return nil, fmt.Errorf("the manifest of %s is not a regular file of at most %d bytes", image, sandbox.MaxManifestBytes)
	}
	data, err := io.ReadAll(io.LimitReader(tr, sandbox.MaxManifestBytes))
	if err != nil {
		return nil, fmt.Errorf("read the manifest of %s: %w", image, err)
	}
	m, err := sandbox.ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", image, errors.Unwrap(err))
	}
	return &m, nil
}
