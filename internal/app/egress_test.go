package app

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs/egressreg"
)

// The egress proxy as cmd/egress wires it, over real Redis: an address a worker
// registered reaches what its policy allows, by a name of the hosts file, and the
// attempt lands in its execution's ledger; once forgotten, the address gets nothing.
func TestEgressProxyWiring(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") }))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("# the test's internet\n127.0.0.1 data.example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, db := testenv.RedisDB(t)
	cfg, err := config.Load(map[string]string{
		"CODEINTERP_REDIS_URL": fmt.Sprintf("redis://%s/%d", addr, db), "CODEINTERP_DEV_MODE": "true",
		"CODEINTERP_EGRESS_NET_ALLOW": "127.0.0.1/32", "CODEINTERP_EGRESS_HOSTS_FILE": hosts,
	})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rdb, err := RedisOnly(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	proxy, err := EgressProxy(cfg, rdb, log)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	purl, _ := url.Parse(srv.URL)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(purl)}}
	target := "http://data.example:" + u.Port() + "/"

	reg := egressreg.New(rdb, egressreg.Config{Prefix: cfg.KeyPrefix})
	loopback := netip.MustParseAddr("127.0.0.1") // where this test's requests come from
	if err := reg.Register(t.Context(), loopback, egressreg.Identity{Tenant: "acme", Execution: "ex_1",
		Allow: []string{"data.example:" + u.Port()}}, time.Minute); err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hi" {
		t.Fatalf("through the proxy: %d %q", resp.StatusCode, body)
	}
	// The entry is there at once; its counts once the proxy has finished the request.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		entries, _, err := reg.Ledger(t.Context(), "ex_1")
		if err != nil || len(entries) != 1 || !entries[0].Allowed || entries[0].Host != "data.example" {
			t.Fatalf("ledger: %+v %v", entries, err)
		}
		if entries[0].BytesIn == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ledger counts: %+v", entries[0])
		}
	}

	if err := reg.Forget(t.Context(), loopback); err != nil {
		t.Fatal(err)
	}
	resp, err = client.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "not a sandbox") {
		t.Fatalf("a forgotten address: %d %q", resp.StatusCode, body)
	}
}
