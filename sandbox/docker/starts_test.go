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

	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Kernel starts wait for one of the host's start slots: with every slot taken, a
// sandbox cannot start its kernel before its deadline, and says why; once a slot
// frees, it starts.
func TestKernelStartsAreBounded(t *testing.T) {
	t.Parallel()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	prefix := fmt.Sprintf("citest-starts%d", os.Getpid())
	d := New(cli, Config{Image: cmp.Or(os.Getenv("CODEINTERP_SANDBOX_IMAGE"), "codeinterp/sandbox:latest"), Prefix: prefix, KernelStarts: 1})
	d.starts <- struct{}{} // another kernel is starting

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if sb, err := d.Create(ctx, sandbox.Spec{}); err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "kernel start slot") {
		if sb != nil {
			sb.Remove(context.Background())
		}
		t.Fatalf("Create with no free start slot = %v, want a deadline while waiting for a slot", err)
	}
	<-d.starts
	sb, err := d.Create(context.Background(), sandbox.Spec{})
	if err != nil {
		t.Fatalf("Create once the slot freed: %v", err)
	}
	if err := sb.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
}
