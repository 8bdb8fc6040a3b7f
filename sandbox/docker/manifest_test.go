package docker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/sandbox"
)

// Reading an image's manifest: an image without one is nil, no error; an image the
// engine lacks is ErrImageMissing; and the container read from is gone either way.
// (An image with a manifest is read end to end: internal/e2e TestProfiles.)
func TestManifestWithoutFile(t *testing.T) {
	t.Parallel()
	prefix := fmt.Sprintf("citest-manifest-%d", os.Getpid())
	d := newDocker(t, prefix)
	ctx := context.Background()
	m, err := d.Manifest(ctx, testenv.Image("redis")) // an image of ours without a manifest
	if err != nil || m != nil {
		t.Fatalf("image without a manifest: %+v, %v", m, err)
	}
	if _, err := d.Manifest(ctx, "codeinterp/no-such-image:none"); !errors.Is(err, sandbox.ErrImageMissing) {
		t.Fatalf("missing image: %v", err)
	}
	left, err := newClient(t).ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", "codeinterp.manifest="+prefix))})
	if err != nil || len(left) != 0 {
		t.Fatalf("containers left behind: %d, %v", len(left), err)
	}
}
