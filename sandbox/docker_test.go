package sandbox_test

import (
	"cmp"
	"context"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/sandboxtest"
)

// newDocker returns a runtime on the local engine, or fails: these tests need Docker
// and the sandbox image (`make images`).
func newDocker(t *testing.T) *sandbox.Docker {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	d := sandbox.New(cli, sandbox.Config{
		Image:  cmp.Or(os.Getenv("CODEINTERP_SANDBOX_IMAGE"), "codeinterp/sandbox:latest"),
		Prefix: "citest",
		Grace:  time.Second,
	})
	if err := d.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDockerConformance(t *testing.T) {
	d := newDocker(t)
	sandboxtest.Exercise(t, func(t *testing.T, spec sandbox.Spec) sandboxtest.Sandbox {
		sb, err := d.Create(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := sb.Remove(context.Background()); err != nil {
				t.Error(err)
			}
		})
		return sb
	})
}
