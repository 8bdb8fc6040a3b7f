package docker_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/docker"
)

// reachPy prints, for each host:port given as an argument, whether a TCP connection
// to it opened ("open"), was refused by a listening host ("refused": the host is
// reachable) or got nowhere ("blocked").
const reachPy = `import socket, sys
def reach(hp):
    h, p = hp.rsplit(":", 1)
    try:
        socket.create_connection((h, int(p)), timeout=3).close()
        return "open"
    except ConnectionRefusedError:
        return "refused"
    except OSError:
        return "blocked"
for hp in TARGETS:
    print(hp, reach(hp))
`

func reach(t *testing.T, sb sandbox.Sandbox, targets ...string) map[string]string {
	t.Helper()
	list, _ := json.Marshal(targets)
	code := strings.Replace(reachPy, "TARGETS", string(list), 1)
	out, err := sb.Run(context.Background(), sandbox.Request{ID: "reach", Code: code}, nil)
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("reach: %v %+v", err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.Stdout), "\n") {
		if hp, verdict, ok := strings.Cut(line, " "); ok {
			got[hp] = verdict
		}
	}
	return got
}

// A sandbox with egress reaches the egress proxy and nothing else: not another
// sandbox of the same tenant, not the proxy's other networks, not the host, not an
// outside resolver; a sandbox without egress reaches nothing at all. Removing the
// sandbox removes its network.
func TestDockerEgressNetwork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cli := newClient(t)
	prefix := fmt.Sprintf("citest-eg%d", os.Getpid())
	image := cmp.Or(os.Getenv("CODEINTERP_SANDBOX_IMAGE"), "codeinterp/sandbox:latest")

	// A stand-in for the proxy: any server on its port, on Docker's default network
	// as well (as the real one is on the installation's).
	proxyName := prefix + "-proxy"
	created, err := cli.ContainerCreate(ctx, &container.Config{Image: image, User: "1000:1000",
		Cmd: []string{"python3", "-m", "http.server", "3128", "--directory", "/tmp"}}, nil, nil, nil, proxyName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cli.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
	})
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	pinfo, err := cli.ContainerInspect(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	bridge := pinfo.NetworkSettings.Networks["bridge"]

	d := docker.New(cli, docker.Config{Image: image, Prefix: prefix, Runtime: os.Getenv("CODEINTERP_SANDBOX_RUNTIME"), EgressProxy: proxyName})
	t.Cleanup(func() { removeInstallation(t, prefix) })
	create := func(thread string, egress bool) sandbox.Sandbox {
		sb, err := d.Create(ctx, sandbox.Spec{Tenant: "acme", Thread: thread, Owner: "w1", Egress: egress})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Remove(context.Background()) })
		return sb
	}
	a, b, none := create("a", true), create("b", true), create("none", false)
	addr := func(sb sandbox.Sandbox) string {
		ip, ok := sb.(interface{ EgressAddr() (netip.Addr, bool) }).EgressAddr()
		if !ok {
			t.Fatalf("sandbox %s has no egress address", sb.ID())
		}
		return ip.String()
	}

	// The proxy's address and port, from the environment the code is given.
	out, err := a.Run(ctx, sandbox.Request{ID: "env", Code: "import os\nprint(os.environ['HTTPS_PROXY'], os.environ['http_proxy'])"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	proxyURL, _, _ := strings.Cut(strings.TrimSpace(out.Stdout), " ")
	proxy := strings.TrimPrefix(proxyURL, "http://")
	if !strings.HasSuffix(proxy, ":3128") || !strings.Contains(out.Stdout, proxyURL+" "+proxyURL) {
		t.Fatalf("proxy environment: %q", out.Stdout)
	}

	// b listens, so a connection that reaches it is told so.
	listen := "import http.server, threading\n" +
		"srv = http.server.HTTPServer(('0.0.0.0', 8000), http.server.BaseHTTPRequestHandler)\n" +
		"threading.Thread(target=srv.serve_forever, daemon=True).start()"
	if out, err := b.Run(ctx, sandbox.Request{ID: "listen", Code: listen}, nil); err != nil || out.ExitCode != 0 {
		t.Fatalf("listen: %v %+v", err, out)
	}
	if got := reach(t, b, "127.0.0.1:8000")["127.0.0.1:8000"]; got != "open" {
		t.Fatalf("b's own server: %s", got)
	}
	want := map[string]string{
		proxy:                      "open",
		addr(b) + ":8000":          "blocked", // another sandbox of the same tenant
		bridge.IPAddress + ":3128": "blocked", // the proxy on its other network
		bridge.Gateway + ":22":     "blocked", // the host
		"8.8.8.8:53":               "blocked", // an outside resolver (and everything outside)
	}
	var targets []string
	for hp := range want {
		targets = append(targets, hp)
	}
	got := reach(t, a, targets...)
	for hp, w := range want {
		if got[hp] != w {
			t.Errorf("from a sandbox with egress, %s: %s, want %s", hp, got[hp], w)
		}
	}
	if got := reach(t, none, proxy)[proxy]; got != "blocked" {
		t.Errorf("a sandbox without egress reached the proxy: %s", got)
	}
	if out, _ := none.Run(ctx, sandbox.Request{ID: "env", Code: "import os\nprint(sorted(k for k in os.environ if 'proxy' in k.lower()))"}, nil); out.Stdout != "[]\n" {
		t.Errorf("a sandbox without egress has proxy settings: %s", out.Stdout)
	}

	// Removing a sandbox removes its network.
	info, err := cli.ContainerInspect(ctx, a.ID())
	if err != nil {
		t.Fatal(err)
	}
	netName := string(info.HostConfig.NetworkMode)
	if err := a.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.NetworkInspect(ctx, netName, network.InspectOptions{}); !client.IsErrNotFound(err) {
		t.Fatalf("network %s after its sandbox went: %v", netName, err)
	}
	// A runtime without a proxy refuses egress.
	plain := docker.New(cli, docker.Config{Image: image, Prefix: prefix, Runtime: os.Getenv("CODEINTERP_SANDBOX_RUNTIME")})
	if _, err := plain.Create(ctx, sandbox.Spec{Tenant: "acme", Thread: "x", Egress: true}); !errors.Is(err, docker.ErrEgressOff) {
		t.Fatalf("egress without a proxy: %v", err)
	}
	// A janitor's runtime (no proxy configured) removing a dead worker's sandbox
	// removes its network too, the proxy disconnected.
	info, err = cli.ContainerInspect(ctx, b.ID())
	if err != nil {
		t.Fatal(err)
	}
	h, err := plain.Open(ctx, b.ID())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.NetworkInspect(ctx, string(info.HostConfig.NetworkMode), network.InspectOptions{}); !client.IsErrNotFound(err) {
		t.Fatalf("network of a sandbox removed by a janitor: %v", err)
	}

	// A network whose sandbox went behind the runtime's back (a worker that died
	// between the two) is swept; a live sandbox's is kept.
	c := create("c", true)
	info, err = cli.ContainerInspect(ctx, c.ID())
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.ContainerRemove(ctx, c.ID(), container.RemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	live, err := cli.ContainerInspect(ctx, create("d", true).ID())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := plain.SweepEgressNetworks(ctx, 0); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v; want the one orphan network", n, err)
	}
	if _, err := cli.NetworkInspect(ctx, string(info.HostConfig.NetworkMode), network.InspectOptions{}); !client.IsErrNotFound(err) {
		t.Fatalf("an orphan network survived the sweep: %v", err)
	}
	if _, err := cli.NetworkInspect(ctx, string(live.HostConfig.NetworkMode), network.InspectOptions{}); err != nil {
		t.Fatalf("a live sandbox's network: %v", err)
	}
	if n, err := plain.SweepEgressNetworks(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("a young network swept: %d %v", n, err)
	}
}
