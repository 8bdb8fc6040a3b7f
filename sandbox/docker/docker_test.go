package docker_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/docker"
	"github.com/codeinterp/codeinterp/sandbox/sandboxtest"
)

// newDocker returns a runtime on the local engine, or fails: these tests need Docker,
// the sandbox image (`make images`) and the OCI runtime CODEINTERP_SANDBOX_RUNTIME
// names (runc when unset; `make runsc` registers runsc).
func newDocker(t *testing.T, prefix string) *docker.Runtime {
	t.Helper()
	d := docker.New(newClient(t), docker.Config{
		Image:  cmp.Or(os.Getenv("CODEINTERP_SANDBOX_IMAGE"), "codeinterp/sandbox:latest"),
		Prefix: prefix,
		// The grace bounds how long an interrupted run may take to stop: a loaded host
		// under gVisor has taken over a second to deliver the interrupt to a busy loop
		// (CI: conformance Timeout found the kernel restarted). The production default
		// is 2 s; runs that ignore the interrupt wait it out.
		Grace:   3 * time.Second,
		Runtime: os.Getenv("CODEINTERP_SANDBOX_RUNTIME"),
	})
	if err := d.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}

func newClient(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// A runtime the engine does not know makes the runtime unready, saying which.
func TestDockerPingUnknownRuntime(t *testing.T) {
	t.Parallel()
	d := docker.New(newClient(t), docker.Config{Prefix: "citest", Runtime: "no-such-runtime"})
	err := d.Ping(context.Background())
	if !errors.Is(err, docker.ErrRuntimeMissing) || !strings.Contains(err.Error(), `"no-such-runtime"`) {
		t.Fatalf("Ping = %v, want ErrRuntimeMissing naming the runtime", err)
	}
}

func TestDockerConformance(t *testing.T) {
	d := newDocker(t, "citest")
	sandboxtest.Exercise(t, func(t *testing.T, spec sandbox.Spec) sandbox.Sandbox {
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

// A thread's sandbox outlives the process that created it: another process adopts it
// with a fresh kernel, the workspace intact and the old kernel's processes gone.
func TestDockerFindAdopts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDocker(t, "citest")
	spec := sandbox.Spec{Tenant: "acme", Thread: "adopt-" + time.Now().Format("150405.000000")}
	sb, err := d.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Remove(context.Background()) })
	out, err := sb.Run(ctx, sandbox.Request{ID: "1", Code: "import subprocess\nx = 1\nopen('kept.txt', 'w').write('kept')\nsubprocess.Popen(['sleep', '1000'])"}, nil)
	if err != nil || out.Status != sandbox.Succeeded {
		t.Fatalf("%+v %v", out, err)
	}
	sb.Release()

	if other, err := d.Find(ctx, sandbox.Spec{Tenant: "globex", Thread: spec.Thread}); err != nil || other != nil {
		t.Fatalf("another tenant found the sandbox: %v %v", other, err)
	}
	adopted, err := d.Find(ctx, spec)
	if err != nil || adopted == nil {
		t.Fatalf("Find = %v, %v", adopted, err)
	}
	if adopted.ID() != sb.ID() {
		t.Fatalf("adopted %s, want %s", adopted.ID(), sb.ID())
	}
	out, err = adopted.Run(ctx, sandbox.Request{ID: "2", Language: "bash", Code: "cat kept.txt; pgrep -c -u 1000 sleep || true"}, nil)
	if err != nil || out.Stdout != "kept0\n" || !out.KernelRestarted {
		t.Fatalf("after adoption: %+v %v", out, err)
	}
	names := map[string]bool{}
	for _, f := range out.Workspace {
		names[f.Name] = true
	}
	if !names["kept.txt"] {
		t.Fatalf("workspace listing %+v", out.Workspace)
	}
	if out, _ = adopted.Run(ctx, sandbox.Request{ID: "3", Code: "print(1)"}, nil); out.KernelRestarted {
		t.Fatal("only the first run after adoption reports a restart")
	}
}

// A blank sandbox from a pool has its libraries imported already.
func TestDockerBlankPreloaded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDocker(t, "citest")
	blank, err := d.CreateBlank(ctx, sandbox.Spec{Owner: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { blank.Remove(context.Background()) })
	if out, err := blank.Run(ctx, sandbox.Request{ID: "1", Code: "import sys; print('pandas' in sys.modules)"}, nil); err != nil || out.Stdout != "True\n" {
		t.Fatalf("blank kernel not preloaded: %q %v", out.Stdout, err)
	}
}

// The runtime-level suite, each subtest on an installation prefix of its own so that
// Count and List see only what it made.
func TestDockerRuntimeConformance(t *testing.T) {
	var n atomic.Int64
	sandboxtest.ExerciseRuntime(t, func(t *testing.T) sandboxtest.Runtime {
		prefix := fmt.Sprintf("citest-rt%d-%d", os.Getpid(), n.Add(1))
		d := newDocker(t, prefix)
		t.Cleanup(func() { removeInstallation(t, prefix) })
		return d
	})
}

// removeInstallation removes every container and volume of an installation prefix.
func removeInstallation(t *testing.T, prefix string) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Error(err)
		return
	}
	defer cli.Close()
	ctx := context.Background()
	label := filters.NewArgs(filters.Arg("label", docker.LabelInstall+"="+prefix))
	list, _ := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: label})
	for _, c := range list {
		_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}
	vols, _ := cli.VolumeList(ctx, volume.ListOptions{Filters: label})
	for _, v := range vols.Volumes {
		_ = cli.VolumeRemove(ctx, v.Name, true)
	}
}
