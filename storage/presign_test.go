package storage_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Presigned downloads are attachments whatever the type, and the disposition is part
// of the signature: a URL without it is refused.
func TestPresignIsAttachment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	page := `<html><script>alert(document.domain)</script></html>`
	key := "acme/t1/ex_1/outputs/page.html"
	if _, err := s.Put(ctx, key, strings.NewReader(page), int64(len(page)), "text/html; charset=utf-8"); err != nil {
		t.Fatal(err)
	}
	for filename, want := range map[string]string{
		"page.html":    `attachment; filename=page.html`,
		"ré sumé.html": `attachment; filename*=utf-8''r%C3%A9%20sum%C3%A9.html`,
		"":             "attachment",
	} {
		u, _, err := s.PresignGet(ctx, key, filename)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Disposition") != want {
			t.Fatalf("%q: %d, Content-Disposition %q, want %q", filename, resp.StatusCode, resp.Header.Get("Content-Disposition"), want)
		}
		// Dropping the disposition from the URL voids the signature.
		parsed, _ := url.Parse(u)
		q := parsed.Query()
		q.Del("response-content-disposition")
		parsed.RawQuery = q.Encode()
		tampered, err := http.Get(parsed.String())
		if err != nil {
			t.Fatal(err)
		}
		tampered.Body.Close()
		if tampered.StatusCode != http.StatusForbidden {
			t.Fatalf("%q: the URL without its disposition answered %d, want 403", filename, tampered.StatusCode)
		}
	}
}
