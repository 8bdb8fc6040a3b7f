package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/internal/app"
)

// storeProxy forwards TCP connections to an address until it is cut; from then on it
// drops every connection, open or new, as a store that went away.
type storeProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
}

func newStoreProxy(t *testing.T, target string) *storeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &storeProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.drop() })
	go p.serve()
	return p
}

func (p *storeProxy) addr() string { return p.ln.Addr().String() }

func (p *storeProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil || !p.track(up) {
			c.Close()
			continue
		}
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
	}
}

// track records c, unless the proxy is cut.
func (p *storeProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		p.conns[c] = true
	}
	return !p.cut
}

// drop cuts the proxy: every connection is closed, and every new one.
func (p *storeProxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

var errorRefRE = regexp.MustCompile(`err_[0-9a-z]{26}`)

// When the service fails on its own (here the worker's artifact store goes away), the
// tenant sees a SandboxError, or an answer, saying so with a reference, and none of
// the error's words (the store's address, its bucket, the object's key, the dialer's
// message); the operator finds the reference in the logs, beside the full error.
func TestInternalErrorsShowOnlyAReference(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, stackOptions{noWorkers: true})
	proxy := newStoreProxy(t, s.storageConfig.Endpoint)
	cfg := s.cfg
	cfg.S3Endpoint = proxy.addr() // the worker's store, and a second API's
	logs := &lockedBuffer{}
	a, err := app.Open(ctx, cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	w := a.Worker(s.runtime, app.WorkerOptions{ID: s.prefix + "-w0", Linger: time.Second})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		w.Shutdown(sctx)
	})
	if ex := s.run(t, map[string]any{"thread_id": "t", "code": "open('a.txt', 'w').write('a')"}); ex.Status != "succeeded" {
		t.Fatalf("a run with the store up: %s %+v", ex.Status, ex.Error)
	}

	proxy.drop()
	// What no tenant may read: the addresses of the store, its bucket, the object's
	// key, the words of the dialer and of the HTTP client.
	hidden := []string{proxy.addr(), s.storageConfig.Endpoint, s.storageConfig.Bucket, "acme/", "inputs/",
		"127.0.0.1", "dial", "EOF", "connection", "reset", "http://", "Get ", "Put "}
	// logged checks that text names a reference, and nothing hidden, and that the
	// logs have the reference beside the store's address.
	logged := func(what, text string) {
		t.Helper()
		ref := errorRefRE.FindString(text)
		if ref == "" {
			t.Errorf("%s has no error reference: %s", what, text)
		}
		for _, h := range hidden {
			if strings.Contains(text, h) {
				t.Errorf("%s shows %q: %s", what, h, text)
			}
		}
		if ref == "" {
			return
		}
		for line := range strings.SplitSeq(logs.String(), "\n") {
			if strings.Contains(line, ref) && strings.Contains(line, proxy.addr()) {
				return
			}
		}
		t.Errorf("no log line has %s%s with the error's words: %s", what, ref, logs.String())
	}

	// An execution whose input cannot be read from the store.
	ex := s.run(t, map[string]any{"thread_id": "t", "code": "print(open('data.csv').read())",
		"files": []map[string]any{{"name": "data.csv", "content_base64": base64.StdEncoding.EncodeToString([]byte("a,b\n1,2\n"))}}})
	if ex.Status != "failed" || ex.Error == nil || ex.Error.Name != "SandboxError" {
		t.Fatalf("a run whose input the worker cannot read: %s %+v; want a SandboxError", ex.Status, ex.Error)
	}
	logged("the execution's error", ex.Error.Value)

	// A thread file the worker cannot copy to the store: the API answers 503 with
	// the operation's error.
	var body map[string]map[string]string
	if code := s.call(t, "GET", "/v1/threads/t/files/a.txt", nil, &body); code != http.StatusServiceUnavailable {
		t.Fatalf("GET a thread file with the store down: %d %v", code, body)
	}
	logged("the answer to GET a thread file", body["error"]["message"])

	// The API itself: an upload to a store that is gone is a 503 (a dropped
	// connection: retry) or a 500 naming the request id (no documented answer, so a
	// plain client); both are logged under the request id.
	x, err := a.API(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Close)
	srv := httptest.NewServer(x.Handler)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("POST", srv.URL+"/v1/files?name=x.txt", strings.NewReader("x"))
	req.Header.Set("Authorization", "Bearer key-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("X-Request-Id")
	if (resp.StatusCode != http.StatusInternalServerError && resp.StatusCode != http.StatusServiceUnavailable) || id == "" {
		t.Fatalf("an upload with the store gone: %d %s (request id %q)", resp.StatusCode, raw, id)
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("the answer %s: %v", raw, err)
	}
	msg := body["error"]["message"]
	if resp.StatusCode == http.StatusInternalServerError && !strings.Contains(msg, id) {
		t.Errorf("the answer does not name its request id %s: %s", id, msg)
	}
	for _, h := range hidden {
		if strings.Contains(msg, h) {
			t.Errorf("the upload's answer shows %q: %s", h, msg)
		}
	}
	if !strings.Contains(logs.String(), id) {
		t.Errorf("no log line has the request id %s", id)
	}
}
