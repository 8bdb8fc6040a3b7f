package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// TestInputURLs: an input file given by URL is downloaded by the service, through the
// webhooks' egress guard, for the HTTP API and for MCP's code_interpreter and
// upload_file; a URL the guard refuses, a redirect, a missing file and a file over
// the limit are errors naming the field.
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
	s := newStack(t, stackOptions{webhookAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})

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
