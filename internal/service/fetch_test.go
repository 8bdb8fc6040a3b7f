package service

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/codeinterp/codeinterp/internal/netguard"
)

func TestFetchURL(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := strings.Repeat("x", len(r.URL.Path)-1) // /xxx → 3 bytes
		if r.URL.Query().Has("chunked") {
			w.(http.Flusher).Flush() // no Content-Length
		}
		if r.URL.Query().Has("gzip") {
			w.Header().Set("Content-Encoding", "gzip") // unasked for: refused, never inflated
		}
		if r.URL.Query().Has("redirect") {
			http.Redirect(w, r, "/x", http.StatusMovedPermanently)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	loopback := netguard.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	svc := New(Config{Fetch: Fetch{Guard: loopback}})
	long := "/" + strings.Repeat("x", 100)

	for _, c := range []struct {
		name, url string
		svc       *Service
		code      Code
		says      string
	}{
		{"at the limit", srv.URL + long, svc, "", ""},
		{"at the limit, chunked", srv.URL + long + "?chunked", svc, "", ""},
		{"over, with a length", srv.URL + long + "x", svc, CodeTooLarge, "limit is 100"},
		{"over, chunked", srv.URL + long + "x?chunked", svc, CodeTooLarge, "over the limit of 100"},
		{"redirect", srv.URL + "/x?redirect", svc, CodeInvalid, "redirects are not followed"},
		{"compressed", srv.URL + "/x?gzip", svc, CodeInvalid, "Content-Encoding"},
		{"loopback refused by default", srv.URL + "/x", New(Config{}), CodeInvalid, "internal address"},
		{"loopback allowed for webhooks only", srv.URL + "/x", New(Config{WebhookGuard: loopback}), CodeInvalid, "internal address"},
		{"a name resolving to loopback", strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/x", New(Config{}), CodeInvalid, "internal address"},
		{"metadata in decimal", "http://2852039166/latest", svc, CodeInvalid, "internal address"},
		{"ftp", "ftp://example.com/x", svc, CodeInvalid, "http"},
		{"relative", "/x", svc, CodeInvalid, "http"},
	} {
		data, err := fetchAll(c.svc, "files[0].url", c.url, 100)
		var se *Error
		switch {
		case c.code == "" && (err != nil || len(data) != 100):
			t.Errorf("%s: %d bytes, %v; want 100 bytes", c.name, len(data), err)
		case c.code != "" && (!errors.As(err, &se) || se.Code != c.code || se.Field != "files[0].url" || !strings.Contains(se.Message, c.says)):
			t.Errorf("%s: %v; want %s naming files[0].url, saying %q", c.name, err, c.code, c.says)
		}
	}
}

// A refused connection says nothing a port scan could use.
func TestFetchURLErrorsAreGeneric(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens there now
	loopback := netguard.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	_, err := fetchAll(New(Config{Fetch: Fetch{Guard: loopback}}), "url", addr+"/x", 100)
	var se *Error
	if !errors.As(err, &se) || se.Field != "url" || se.Message != "could not be fetched: the connection failed or timed out" {
		t.Fatalf("fetch from a closed port: %v; want the generic error", err)
	}
}

// fetchAll downloads a URL as openURL does, into memory.
func fetchAll(s *Service, field, raw string, limit int64) ([]byte, error) {
	body, _, err := s.openURL(context.Background(), field, raw, limit)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return io.ReadAll(body)
}
