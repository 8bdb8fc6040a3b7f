package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/internal/testenv"
)

// internetPy is the test's internet: one HTTP server answering every request with
// the host it was asked for.
const internetPy = `import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello from " + self.headers.get("Host", "?")).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("0.0.0.0", 80), H).serve_forever()`

// startEgressRig starts an egress proxy container (codeinterp/egress) on Docker's default
// network (to reach the test's Redis) and on a network of its own, "the internet",
// where one server answers for data.example and blocked.example; private.example
// resolves to a private address. The names are in the proxy's /etc/hosts. The proxy
// is named prefix-egress.
func startEgressRig(t *testing.T, cli *client.Client, redisURL, prefix string) {
	t.Helper()
	ctx := context.Background()
	inet := prefix + "-inet"
	created, err := cli.NetworkCreate(ctx, inet, network.CreateOptions{Driver: "bridge", Labels: map[string]string{"codeinterp.install": "citest"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.NetworkRemove(context.Background(), created.ID) })
	run := func(name string, cfg *container.Config, hc *container.HostConfig) container.InspectResponse {
		t.Helper()
		c, err := cli.ContainerCreate(ctx, cfg, hc, nil, nil, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true}) })
		if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		info, err := cli.ContainerInspect(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	server := run(prefix+"-www", &container.Config{Image: testenv.Image("sandbox"), User: "0:0", Cmd: []string{"python3", "-c", internetPy}},
		&container.HostConfig{NetworkMode: container.NetworkMode(inet)})
	serverIP := server.NetworkSettings.Networks[inet].IPAddress
	subnet := ""
	if n, err := cli.NetworkInspect(ctx, inet, network.InspectOptions{}); err == nil && len(n.IPAM.Config) > 0 {
		subnet = n.IPAM.Config[0].Subnet
	}

	// The proxy reaches the test's Redis on the host, where testcontainers publishes
	// its port (host-gateway: the engine's address for the host).
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = "host.docker.internal:" + u.Port()
	name := prefix + "-egress"
	run(name, &container.Config{Image: testenv.Image("egress"), Env: []string{
		"CODEINTERP_REDIS_URL=" + u.String(), "CODEINTERP_KEY_PREFIX=ci:", "CODEINTERP_DEV_MODE=true",
		"CODEINTERP_EGRESS_NET_ALLOW=" + subnet, // the test's internet is a private range
	}}, &container.HostConfig{ExtraHosts: []string{
		"host.docker.internal:host-gateway",
		"data.example:" + serverIP, "blocked.example:" + serverIP, "private.example:10.0.0.7",
	}})
	if err := cli.NetworkConnect(ctx, inet, name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the container goes (cleanups run last first)
		if t.Failed() {
			logs, err := cli.ContainerLogs(context.Background(), name, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: "20"})
			if err == nil {
				b, _ := io.ReadAll(logs)
				logs.Close()
				t.Logf("the egress proxy's log:\n%s", b)
			}
		}
	})
}

type egressEntry struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Method   string `json:"method"`
	Allowed  bool   `json:"allowed"`
	Reason   string `json:"reason"`
	BytesIn  int64  `json:"bytes_in"`
	BytesOut int64  `json:"bytes_out"`
}

// A one-off that asks for network reaches what its tenant's allow-list names,
// through the proxy, with requests and urllib; a name not on the list and one that
// resolves to a private address are refused; the execution's ledger lists all three.
// A tenant without an allow-list cannot ask, and narrowing past the tenant's list is
// refused naming the rule.
func TestEgressOneOff(t *testing.T) {
	t.Parallel()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	proxy := fmt.Sprintf("citest-eg-%d-%d", os.Getpid(), time.Now().UnixNano())
	s := newStack(t, stackOptions{env: map[string]string{
		"CODEINTERP_EGRESS_PROXY":  proxy + "-egress",
		"CODEINTERP_TENANT_EGRESS": "acme:data.example private.example",
	}})
	startEgressRig(t, cli, s.cfg.RedisURL, proxy)

	code := `import requests, urllib.request
print(requests.get("http://data.example/", timeout=30).text)
try:
    print(urllib.request.urlopen("http://data.example/again", timeout=30).read().decode())
except urllib.error.HTTPError as e:
    print("URLLIB", e.read())
for u in ["http://blocked.example/", "http://private.example/"]:
    r = requests.get(u, timeout=30)
    print(u, r.status_code, r.text.strip())`
	ex := s.run(t, map[string]any{"code": code, "network": map[string]any{}})
	if ex.Status != "succeeded" {
		t.Fatalf("%s %+v\n%s", ex.Status, ex.Error, ex.Stderr)
	}
	for _, want := range []string{"hello from data.example\nhello from data.example\n", "blocked.example/ 403", "not in the allow-list",
		"private.example/ 502", "resolves to a non-public address"} {
		if !strings.Contains(ex.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, ex.Stdout)
		}
	}
	var full struct {
		Network []egressEntry `json:"network"`
	}
	a := s.request(t, "key-a", "GET", "/v1/executions/"+ex.ID, nil)
	if err := json.Unmarshal(a.body, &full); err != nil {
		t.Fatal(err)
	}
	var verdicts []string
	for _, e := range full.Network {
		verdicts = append(verdicts, fmt.Sprintf("%s:%d %s %v %s", e.Host, e.Port, e.Method, e.Allowed, e.Reason))
	}
	want := []string{"data.example:80 GET true ", "data.example:80 GET true ", "blocked.example:80 GET false not in the allow-list",
		"private.example:80 GET false resolves to a non-public address"}
	if strings.Join(verdicts, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ledger:\n%s\nwant:\n%s", strings.Join(verdicts, "\n"), strings.Join(want, "\n"))
	}

	// Each tenant sees what it may reach.
	for key, want := range map[string]string{"key-a": `["data.example","private.example"]`, "key-b": `[]`} {
		var rt struct {
			Network struct {
				Allow json.RawMessage `json:"allow"`
			} `json:"network"`
		}
		a := s.request(t, key, "GET", "/v1/runtimes", nil)
		if err := json.Unmarshal(a.body, &rt); err != nil || string(rt.Network.Allow) != want {
			t.Errorf("%s's runtimes: network %s, want %s (%v)", key, rt.Network.Allow, want, err)
		}
	}

	// Another tenant has no allow-list; narrowing past the tenant's is refused.
	wantField(t, s.post(t, "key-b", map[string]any{"code": "1", "network": map[string]any{}}), "network")
	wantField(t, s.post(t, "key-a", map[string]any{"code": "1", "network": map[string]any{"allow": []string{"data.example", "pypi.org"}}}), "network.allow[1]")

	// Without network, the same code gets nowhere, and nothing is recorded.
	ex = s.run(t, map[string]any{"code": "import requests\ntry:\n    requests.get('http://data.example/', timeout=5)\nexcept Exception as e:\n    print(type(e).__name__)"})
	if ex.Status != "succeeded" || strings.Contains(ex.Stdout, "hello") || strings.TrimSpace(ex.Stdout) == "" {
		t.Fatalf("without network: %s %q %+v", ex.Status, ex.Stdout, ex.Error)
	}
}

// wantField checks that a is a 400 naming field.
func wantField(t *testing.T, a answer, field string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Message, Field string } `json:"error"`
	}
	if a.status != http.StatusBadRequest || json.Unmarshal(a.body, &e) != nil || e.Error.Field != field || e.Error.Message == "" {
		t.Fatalf("%d %s; want 400 naming %s", a.status, a.body, field)
	}
}
