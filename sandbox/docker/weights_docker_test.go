package docker_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Sandboxes go under their own cgroup parent, and under runc each tenant's running
// sandboxes share one weight: acme's two get half each, globex's one the whole, and
// pausing one of acme's gives the other the whole again. gVisor's runsc here cannot
// update a running container: every sandbox keeps the base weight.
func TestDockerTenantWeights(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := fmt.Sprintf("citest-w%d", os.Getpid())
	d := newDocker(t, prefix)
	t.Cleanup(func() { removeInstallation(t, prefix) })
	cli := newClient(t)
	create := func(tenant, thread string) sandbox.Sandbox {
		sb, err := d.Create(ctx, sandbox.Spec{Tenant: tenant, Thread: thread, Owner: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Remove(context.Background()) })
		return sb
	}
	a1, a2, g1 := create("acme", "one"), create("acme", "two"), create("globex", "one")

	gvisor := strings.HasPrefix(os.Getenv("CODEINTERP_SANDBOX_RUNTIME"), "runsc")
	want := func(what string, shares map[sandbox.Sandbox]int64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var got []string
			ok := true
			for sb, w := range shares {
				if gvisor {
					w = 1024
				}
				info, err := cli.ContainerInspect(ctx, sb.ID())
				if err != nil {
					t.Fatal(err)
				}
				if p := info.HostConfig.CgroupParent; p != "/docker/codeinterp-sandboxes" {
					t.Fatalf("cgroup parent %q, want /docker/codeinterp-sandboxes (this machine's engine uses cgroupfs)", p)
				}
				got = append(got, fmt.Sprint(info.HostConfig.CPUShares))
				ok = ok && info.HostConfig.CPUShares == w
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: shares %v", what, got)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	want("two of acme's, one of globex's", map[sandbox.Sandbox]int64{a1: 512, a2: 512, g1: 1024})
	if err := a2.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	want("one of acme's paused", map[sandbox.Sandbox]int64{a1: 1024, g1: 1024})
	if _, err := a2.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	want("resumed", map[sandbox.Sandbox]int64{a1: 512, a2: 512, g1: 1024})
}
