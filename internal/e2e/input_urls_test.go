package e2e

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// TestInputURLs: an input file given by URL is downloaded by the service, through the
// fetches' egress guard (CODEINTERP_FETCH_ALLOW lets it reach the test's loopback
// server), for the HTTP API and for MCP's code_interpreter and upload_file; a URL the
// guard refuses, a redirect, a missing file and a file over the limit are errors
// naming the field.
func TestInputURLs(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sales.csv":
			w.Write([]byte("region,total\nnorth,10\nsouth,32\n"))
		case "/moved":
			http.Redirect(w, r, "/sales.csv", http.StatusFound)
		case "/huge": // no Content-Length: the limit bites while reading
			w.(http.Flusher).Flush()
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			for range 12 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	s := newStack(t, stackOptions{env: map[string]string{"CODEINTERP_FETCH_ALLOW": "127.0.0.1/32"}})

	t.Run("http api", func(t *testing.T) {
		ex := s.run(t, map[string]any{"code": "import pandas as pd; print(pd.read_csv('in/sales.csv').total.sum())",
			"files": []map[string]any{{"name": "in/sales.csv", "url": srv.URL + "/sales.csv"}}})
		if ex.Status != "succeeded" || ex.Stdout != "42\n" {
			t.Fatalf("%s %q %+v", ex.Status, ex.Stdout, ex.Error)
		}
		for what, c := range map[string]struct {
			url, field, says string
			status           int
		}{
			"redirect":         {srv.URL + "/moved", "files[0].url", "redirects are not followed", 400},
			"missing":          {srv.URL + "/nope", "files[0].url", "404", 400},
			"too large":        {srv.URL + "/huge", "files[0].url", "limit", 413},
			"metadata address": {"http://169.254.169.254/latest/meta-data/", "files[0].url", "internal address", 400},
			"other loopback":   {"http://127.0.0.2:" + srv.URL[strings.LastIndex(srv.URL, ":")+1:] + "/sales.csv", "files[0].url", "internal address", 400},
			"not http":         {"file:///etc/passwd", "files[0].url", "http", 400},
			"with credentials": {"http://user:pw@example.com/x", "files[0].url", "credentials", 400},
			"url and content":  {"", "files[0]", "one of", 400},
		} {
			file := map[string]any{"name": "a.csv", "url": c.url}
			if c.url == "" {
				file = map[string]any{"name": "a.csv", "url": srv.URL + "/sales.csv", "content_base64": ""}
			}
			a := s.post(t, "key-a", map[string]any{"code": "print(1)", "files": []map[string]any{file}})
			var e struct {
				Error struct{ Code, Message, Field string } `json:"error"`
			}
			if a.status != c.status || json.Unmarshal(a.body, &e) != nil || e.Error.Field != c.field || !strings.Contains(e.Error.Message, c.says) {
				t.Errorf("%s: %d %s; want %d naming %s, saying %q", what, a.status, a.body, c.status, c.field, c.says)
			}
		}
	})

	t.Run("mcp", func(t *testing.T) {
		cs, err := s.mcpHTTP(t, "key-a", &progress{})
		if err != nil {
			t.Fatal(err)
		}
		res, ex := runCode(t, cs, "print(open('a.csv').read().count('\\n'))", map[string]any{"files": []map[string]any{{"name": "a.csv", "url": srv.URL + "/sales.csv"}}})
		if res.IsError || ex.Stdout != "3\n" {
			t.Fatalf("code_interpreter with a url file: %q", texts(res))
		}
		if res := callTool(t, cs, "upload_file", map[string]any{"name": "b.csv", "url": srv.URL + "/sales.csv"}); res.IsError {
			t.Fatalf("upload_file by url: %q", texts(res))
		}
		if res, ex := runCode(t, cs, "print(open('b.csv').read().splitlines()[2])"); ex.Stdout != "south,32\n" {
			t.Fatalf("uploaded by url: %q", texts(res))
		}
		res = callTool(t, cs, "upload_file", map[string]any{"name": "c.csv", "url": "http://169.254.169.254/"})
		if !res.IsError || !strings.Contains(texts(res), "url") || !strings.Contains(texts(res), "internal address") {
			t.Fatalf("upload_file of an internal url: %v %q", res.IsError, texts(res))
		}
		res = callTool(t, cs, "upload_file", map[string]any{"name": "c.csv", "url": srv.URL + "/huge"})
		if !res.IsError || !strings.Contains(texts(res), "payload_too_large") {
			t.Fatalf("upload_file over the limit: %v %q", res.IsError, texts(res))
		}
	})
}

// Fetches have an allow-list of their own: an internal receiver the operator allowed
// for webhooks is refused as an input file's URL, for the HTTP API and MCP, while an
// address on the fetch list is fetched. MCP upload_file takes the tenant's rate
// token before it connects: a call past the quota fetches nothing.
func TestInputURLAllowListOwn(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hits := map[string]int{}
	serve := func(addr string) *httptest.Server {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hits[addr]++
			mu.Unlock()
			w.Write([]byte("a,b\n1,2\n"))
		}))
		ln, err := net.Listen("tcp", addr+":0")
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener.Close()
		srv.Listener = ln
		srv.Start()
		t.Cleanup(srv.Close)
		return srv
	}
	hook, fetch := serve("127.0.0.1"), serve("127.0.0.2")
	s := newStack(t, stackOptions{noWorkers: true, webhookAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		env: map[string]string{"CODEINTERP_FETCH_ALLOW": "127.0.0.2/32", "CODEINTERP_QUOTA_RATE": "0.001", "CODEINTERP_QUOTA_BURST": "5"}})
	hitsOf := func(addr string) int {
		mu.Lock()
		defer mu.Unlock()
		return hits[addr]
	}

	a := s.post(t, "key-a", map[string]any{"code": "print(1)", "files": []map[string]any{{"name": "a.csv", "url": hook.URL + "/a.csv"}}})
	if e := errorOf(a); a.status != http.StatusBadRequest || e.Field != "files[0].url" || !strings.Contains(e.Message, "internal address") {
		t.Errorf("a webhook receiver as an input URL: %d %s; want 400 naming files[0].url", a.status, a.body)
	}
	cs, err := s.mcpHTTP(t, "key-a", &progress{})
	if err != nil {
		t.Fatal(err)
	}
	if res := callTool(t, cs, "upload_file", map[string]any{"name": "b.csv", "url": hook.URL + "/b.csv"}); !res.IsError || !strings.Contains(texts(res), "internal address") {
		t.Errorf("upload_file from a webhook receiver: %v %q", res.IsError, texts(res))
	}
	if n := hitsOf("127.0.0.1"); n != 0 {
		t.Errorf("the webhook receiver was fetched %d times", n)
	}

	wantStatus(t, "an address on the fetch list", s.post(t, "key-a", map[string]any{"code": "print(1)",
		"files": []map[string]any{{"name": "c.csv", "url": fetch.URL + "/c.csv"}}}), http.StatusAccepted)
	if res := callTool(t, cs, "upload_file", map[string]any{"name": "d.csv", "url": fetch.URL + "/d.csv"}); res.IsError {
		t.Errorf("upload_file from the fetch list: %q", texts(res))
	}
	if n := hitsOf("127.0.0.2"); n != 2 {
		t.Fatalf("the fetch list's server was fetched %d times; want 2", n)
	}
	// The burst of 5 is spent (a refused post, the MCP session's initialize, two
	// uploads and a post): the next upload_file is refused before it connects.
	if res := callTool(t, cs, "upload_file", map[string]any{"name": "e.csv", "url": fetch.URL + "/e.csv"}); !res.IsError || !strings.Contains(texts(res), "quota_exceeded") {
		t.Errorf("upload_file past the rate quota: %v %q", res.IsError, texts(res))
	}
	if n := hitsOf("127.0.0.2"); n != 2 {
		t.Errorf("upload_file past the rate quota fetched its URL (%d fetches; want 2)", n)
	}
}
