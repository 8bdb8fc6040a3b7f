package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/codeinterp/codeinterp/sandbox/docker"
)

// place is where a run ran: its sandbox's host name (its container's short id) and
// the container's memory limit, as the engine says.
type place struct {
	Host  string
	Limit string
}

func (s *stack) whereAmI(t *testing.T, key string, req map[string]any) place {
	t.Helper()
	req["code"] = memoryLimit
	id := s.submit(t, key, req)
	var ex execution
	eventually(t, 2*time.Minute, "execution "+id+" ends", func() bool {
		s.callAs(t, key, "GET", "/v1/executions/"+id+"?wait=30s", nil, &ex)
		return ex.Status != "queued" && ex.Status != "running"
	})
	if ex.Status != "succeeded" {
		t.Fatalf("%v: %s %q %+v", req, ex.Status, ex.Stdout, ex.Error)
	}
	return place{Host: strings.TrimSpace(ex.Stdout), Limit: s.limitOf(t, ex.Stdout)}
}

// runningHosts returns the short ids (a container's host name) of the prefix's
// running sandboxes.
func (s *stack) runningHosts(t *testing.T) map[string]bool {
	t.Helper()
	list, err := s.docker.ContainerList(context.Background(), container.ListOptions{
		Filters: filters.NewArgs(filters.Arg("label", docker.LabelInstall+"="+s.prefix)),
	})
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string]bool{}
	for _, c := range list {
		hosts[c.ID[:12]] = true
	}
	return hosts
}

// A profile with pools of its own: its one-offs and new threads start in sandboxes
// made beforehand with the profile's limits, and a recycled one-off sandbox serves
// the same tenant in the same profile alone — never the tenant's default-profile
// one-offs, never another tenant.
func TestProfilePools(t *testing.T) {
	t.Parallel()
	small := strconv.Itoa(200 << 20)
	s := newStack(t, stackOptions{recycle: true, concurrency: 1, env: map[string]string{
		// The default profile has no pools here (the harness's 0): only small's fill.
		"CODEINTERP_PROFILES":        "small:memory_mb=200,oneoff_pool=1,warm_pool=1",
		"CODEINTERP_TENANT_PROFILES": "*:default+small",
	}})
	eventually(t, 2*time.Minute, "small's one-off pool and warm pool filled", func() bool {
		levels := s.workers[0].w.Runner.PoolLevels()
		full := 0
		for _, l := range levels {
			if l.Profile == "small" && l.Ready == l.Size {
				full++
			}
		}
		return len(levels) == 2 && full == 2
	})
	pooled := s.runningHosts(t)
	if len(pooled) != 2 {
		t.Fatalf("running sandboxes with only small's pools full: %v", pooled)
	}

	oneOff := s.whereAmI(t, "key-a", map[string]any{"profile": "small"})
	if !pooled[oneOff.Host] || oneOff.Limit != small {
		t.Fatalf("small one-off ran in %+v, not in a pooled sandbox of %s bytes (pooled: %v)", oneOff, small, pooled)
	}
	thread := s.whereAmI(t, "key-a", map[string]any{"profile": "small", "thread_id": "pooled"})
	if !pooled[thread.Host] || thread.Host == oneOff.Host || thread.Limit != small {
		t.Fatalf("small thread ran in %+v, not in the other pooled sandbox (one-off in %s; pooled: %v)", thread, oneOff.Host, pooled)
	}
	if again := s.whereAmI(t, "key-a", map[string]any{"profile": "small"}); again.Host != oneOff.Host {
		t.Fatalf("acme's next small one-off ran in %s, not in its recycled %s", again.Host, oneOff.Host)
	}
	if def := s.whereAmI(t, "key-a", map[string]any{}); def.Host == oneOff.Host || def.Limit != strconv.Itoa(512<<20) {
		t.Fatalf("acme's default one-off ran in %+v (its small recycled sandbox: %s)", def, oneOff.Host)
	}
	if other := s.whereAmI(t, "key-b", map[string]any{"profile": "small"}); other.Host == oneOff.Host || other.Limit != small {
		t.Fatalf("globex's small one-off ran in %+v (acme's recycled sandbox: %s)", other, oneOff.Host)
	}
	if host := s.whereAmI(t, "key-a", map[string]any{"profile": "small"}).Host; host != oneOff.Host {
		t.Fatalf("acme's small recycled sandbox is gone: ran in %s, not %s", host, oneOff.Host)
	}
}
