package docker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Kernel starts wait for one of the host's start slots: with every slot taken, a
// kernel cannot start before its deadline, and says why; once a slot frees, a
// sandbox waiting for it starts.
//
// The deadline is given to the kernel's start alone: a Create's deadline also
// covers making the container, which under gVisor on a busy host can take longer
// than any deadline short enough for a test.
func TestKernelStartsAreBounded(t *testing.T) {
	t.Parallel()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// The client negotiates its API version on first use, racily: do it before the
	// Create below and waitRunning use it at once.
	cli.NegotiateAPIVersion(context.Background())
	prefix := fmt.Sprintf("citest-starts%d", os.Getpid())
	d := New(cli, Config{Image: cmp.Or(os.Getenv("CODEINTERP_SANDBOX_IMAGE"), "codeinterp/sandbox:latest"), Prefix: prefix, KernelStarts: 1})
	d.starts <- struct{}{} // another kernel is starting

	// The wait for a slot comes before the kernel's container is touched.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := d.startKernel(ctx, "no-such-container", kernelEnv{}, 0); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "kernel start slot") {
		t.Fatalf("kernel start with no free start slot = %v, want a deadline while waiting for a slot", err)
	}

	// A Create waits for the slot as long as its caller lets it, and starts once
	// the slot frees.
	type created struct {
		sb  sandbox.Sandbox
		err error
	}
	done := make(chan created, 1)
	go func() {
		sb, err := d.Create(context.Background(), sandbox.Spec{})
		done <- created{sb, err}
	}()
	waitRunning(t, cli, prefix) // its container is up: it is at, or near, the wait
	select {
	case c := <-done:
		if c.sb != nil {
			c.sb.Remove(context.Background())
		}
		t.Fatalf("Create with no free start slot returned before the slot freed: %v", c.err)
	default:
	}
	<-d.starts
	c := <-done
	if c.err != nil {
		t.Fatalf("Create once the slot freed: %v", c.err)
	}
	if err := c.sb.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// waitRunning waits until a container named with prefix runs.
func waitRunning(t *testing.T, cli *client.Client, prefix string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		list, err := cli.ContainerList(context.Background(), container.ListOptions{Filters: filters.NewArgs(filters.Arg("name", prefix))})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list {
			if c.State == "running" {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no container named %s ran within 2 minutes", prefix)
}
