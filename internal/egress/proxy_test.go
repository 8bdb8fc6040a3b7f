package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/internal/netguard"
)

type fakeIdentifier struct{ id Identity }

func (f fakeIdentifier) Identify(_ context.Context, remote netip.Addr) (Identity, bool) {
	return f.id, remote.IsLoopback()
}

type memLedger struct {
	mu      sync.Mutex
	entries []Entry
}

func (l *memLedger) Record(_ Identity, e Entry) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
	return int64(len(l.entries) - 1)
}

func (l *memLedger) Update(_ Identity, slot int64, e Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if slot < int64(len(l.entries)) {
		l.entries[slot] = e
	}
}

// waitBytes waits for the entry about host to have its final counts.
func (l *memLedger) waitBytes(t *testing.T, host string) Entry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if e := l.waitEntry(t, host); e.BytesIn > 0 || time.Now().After(deadline) {
			return e
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitEntry waits for the ledger's entry about host (they are recorded once a
// tunnel has ended).
func (l *memLedger) waitEntry(t *testing.T, host string) Entry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		for _, e := range l.entries {
			if e.Host == host {
				l.mu.Unlock()
				return e
			}
		}
		l.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no ledger entry for %s", host)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// proxyRig is a proxy for one sandbox (any loopback peer) whose "internet" is two
// servers on loopback, named through the proxy's resolver: example.com (HTTPS, the
// test certificate's name) and plain.test (HTTP). internal.test and meta.test
// resolve to a private and the metadata address.
type proxyRig struct {
	proxy  *httptest.Server
	tlsSrv *httptest.Server
	plain  *httptest.Server
	ledger *memLedger
	client *http.Client
}

func newProxyRig(t *testing.T) *proxyRig {
	t.Helper()
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" {
			http.Error(w, "the proxy's credentials reached upstream", http.StatusTeapot)
			return
		}
		fmt.Fprintf(w, "hello %s", r.Host)
	})
	rig := &proxyRig{tlsSrv: httptest.NewTLSServer(hello), plain: httptest.NewServer(hello), ledger: &memLedger{}}
	t.Cleanup(rig.tlsSrv.Close)
	t.Cleanup(rig.plain.Close)
	tlsPort, plainPort := port(t, rig.tlsSrv.URL), port(t, rig.plain.URL)
	policy, err := ParsePolicy([]string{"example.com:" + tlsPort, "plain.test:" + plainPort, "internal.test", "meta.test", "nowhere.test"})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{"example.com": "127.0.0.1", "plain.test": "127.0.0.1", "other.test": "127.0.0.1",
		"internal.test": "10.0.0.5", "meta.test": "169.254.169.254"}
	p := &Proxy{
		Identify: fakeIdentifier{Identity{Tenant: "acme", Policy: policy}},
		Guard:    netguard.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}, // the test's "public" servers
		Ledger:   rig.ledger,
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			a, ok := names[host]
			if !ok {
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		},
		HelloTimeout: 2 * time.Second,
	}
	rig.proxy = httptest.NewServer(p)
	t.Cleanup(rig.proxy.Close)
	proxyURL, _ := url.Parse(rig.proxy.URL)
	rig.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(proxyURL),
		TLSClientConfig: &tls.Config{RootCAs: rig.tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs},
	}}
	return rig
}

func port(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

func (rig *proxyRig) get(t *testing.T, raw string) (int, string, error) {
	t.Helper()
	resp, err := rig.client.Get(raw)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func TestProxyAllowsByName(t *testing.T) {
	rig := newProxyRig(t)
	tlsPort, plainPort := port(t, rig.tlsSrv.URL), port(t, rig.plain.URL)

	code, body, err := rig.get(t, "https://example.com:"+tlsPort+"/")
	if err != nil || code != 200 || body != "hello example.com:"+tlsPort {
		t.Fatalf("HTTPS through the tunnel: %d %q %v", code, body, err)
	}
	if e := rig.ledger.waitEntry(t, "example.com"); !e.Allowed || e.Method != "CONNECT" {
		t.Errorf("ledger while the tunnel is open: %+v", e)
	}
	rig.client.CloseIdleConnections() // a tunnel's counts are in once it ends
	if e := rig.ledger.waitBytes(t, "example.com"); !e.Allowed || e.Method != "CONNECT" || e.BytesIn == 0 || e.BytesOut == 0 {
		t.Errorf("ledger: %+v", e)
	}

	req, _ := http.NewRequest("GET", "http://plain.test:"+plainPort+"/", nil)
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	resp, err := rig.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "hello plain.test:"+plainPort {
		t.Fatalf("plain HTTP: %d %q", resp.StatusCode, b)
	}
	if e := rig.ledger.waitBytes(t, "plain.test"); !e.Allowed || e.Method != "GET" || e.BytesIn != int64(len(b)) {
		t.Errorf("ledger: %+v", e)
	}
}

func TestProxyRefuses(t *testing.T) {
	rig := newProxyRig(t)
	tlsPort, plainPort := port(t, rig.tlsSrv.URL), port(t, rig.plain.URL)
	for _, c := range []struct{ url, host, reason string }{
		{"https://other.test:" + tlsPort + "/", "other.test", ReasonNotAllowed},
		{"http://other.test:" + plainPort + "/", "other.test", ReasonNotAllowed},
		{"https://example.com:1/", "example.com", ReasonNotAllowed}, // a port the rule does not name
		{"https://127.0.0.1:" + tlsPort + "/", "127.0.0.1", ReasonAddress},
		{"http://127.0.0.1:" + plainPort + "/", "127.0.0.1", ReasonAddress},
		{"https://internal.test/", "internal.test", ReasonNotPublic},
		{"http://meta.test/latest/meta-data/", "meta.test", ReasonNotPublic},
		{"https://nowhere.test/", "nowhere.test", ReasonNoSuchHost},
	} {
		rig.ledger.mu.Lock()
		rig.ledger.entries = nil
		rig.ledger.mu.Unlock()
		code, body, err := rig.get(t, c.url)
		if code == 200 {
			t.Errorf("%s: fetched %q", c.url, body)
			continue
		}
		if err == nil && !strings.Contains(body, c.reason) {
			t.Errorf("%s: %d %q; want it to say %q", c.url, code, body, c.reason)
		}
		if e := rig.ledger.waitEntry(t, c.host); e.Allowed || e.Reason != c.reason {
			t.Errorf("%s: ledger %+v, want refused: %s", c.url, e, c.reason)
		}
	}
}

// connect opens a CONNECT tunnel to host:port by hand.
func (rig *proxyRig) connect(t *testing.T, hostport string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(rig.proxy.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s: %v %v", hostport, resp, err)
	}
	return conn
}

// A tunnel carries TLS to the host it was opened for, nothing else.
func TestProxyTunnelChecksServerName(t *testing.T) {
	rig := newProxyRig(t)
	hostport := "example.com:" + port(t, rig.tlsSrv.URL)

	conn := rig.connect(t, hostport)
	tc := tls.Client(conn, &tls.Config{ServerName: "other.test", InsecureSkipVerify: true})
	if err := tc.Handshake(); err == nil {
		t.Fatal("a TLS session for another name went through the tunnel")
	}
	if e := rig.ledger.waitEntry(t, "example.com"); e.Allowed || !strings.HasPrefix(e.Reason, ReasonSNI) {
		t.Errorf("ledger: %+v", e)
	}

	rig.ledger.mu.Lock()
	rig.ledger.entries = nil
	rig.ledger.mu.Unlock()
	conn = rig.connect(t, hostport)
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, _ := conn.Read(make([]byte, 1)); n > 0 {
		t.Fatal("plain text through a CONNECT tunnel got an answer")
	}
	if e := rig.ledger.waitEntry(t, "example.com"); e.Allowed || e.Reason != ReasonNotTLS {
		t.Errorf("ledger: %+v", e)
	}
}

// A peer the identifier does not know gets nothing, and nothing is recorded.
func TestProxyUnknownPeer(t *testing.T) {
	rig := newProxyRig(t)
	p := rig.proxy.Config.Handler.(*Proxy)
	p.Identify = fakeIdentifier{} // knows loopback only…
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("CONNECT", "example.com:443", nil)
	req.RemoteAddr = "192.0.2.7:4000" // …and this is not
	p.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), ReasonUnknownPeer) {
		t.Fatalf("unknown peer: %d %q", rec.Code, rec.Body.String())
	}
	rig.ledger.mu.Lock()
	defer rig.ledger.mu.Unlock()
	if len(rig.ledger.entries) != 0 {
		t.Fatalf("recorded: %+v", rig.ledger.entries)
	}
}

// A plain HTTP body that stops moving is cut after the idle timeout, and the ledger
// says so.
func TestProxyCutsAStalledBody(t *testing.T) {
	release := make(chan struct{})
	drip := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(200)
		io.WriteString(w, "first bytes")
		w.(http.Flusher).Flush()
		<-release // and nothing more
	}))
	defer drip.Close()
	defer close(release) // before the server closes: its handler waits on it
	rig := newProxyRig(t)
	p := rig.proxy.Config.Handler.(*Proxy)
	p.IdleTimeout = 300 * time.Millisecond
	policy, _ := ParsePolicy([]string{"drip.test:" + port(t, drip.URL)})
	p.Identify = fakeIdentifier{Identity{Tenant: "acme", Policy: policy}}
	resolve := p.Resolve
	p.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
		if host == "drip.test" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return resolve(ctx, host)
	}
	resp, err := rig.client.Get("http://drip.test:" + port(t, drip.URL) + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || string(b) != "first bytes" {
		t.Fatalf("a stalled body: %q %v; want the first bytes, then an error", b, err)
	}
	if e := rig.ledger.waitBytes(t, "drip.test"); e.Reason != ReasonIdle || e.BytesIn != int64(len("first bytes")) {
		t.Fatalf("ledger: %+v", e)
	}
}
