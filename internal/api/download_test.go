package api

import (
	"net/http"
	"strings"
	"testing"
)

func TestFileHeaders(t *testing.T) {
	for ct, attach := range map[string]bool{
		"text/html; charset=utf-8":  true,
		"application/xhtml+xml":     true,
		"image/svg+xml":             true,
		"text/xml; charset=utf-8":   true,
		"application/xml":           true,
		"application/xslt+xml":      true,
		"text/javascript":           true,
		"application/javascript":    true,
		"application/pdf":           true,
		"multipart/x-mixed-replace": true,
		"":                          true,
		"not a type":                true,
		"text/plain; charset=utf-8": false,
		"text/csv":                  false,
		"image/png":                 false,
		"application/json":          false,
		"application/octet-stream":  false,
	} {
		h := http.Header{}
		setFileHeaders(h, ct, `ré"port.html`)
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Security-Policy") != "sandbox" {
			t.Errorf("%q: %v", ct, h)
		}
		cd := h.Get("Content-Disposition")
		if attach != strings.HasPrefix(cd, "attachment") {
			t.Errorf("%q: Content-Disposition %q, want attachment %v", ct, cd, attach)
		}
		if attach && !strings.Contains(cd, "filename*=utf-8''r%C3%A9%22port.html") {
			t.Errorf("%q: the file name is not carried safely: %q", ct, cd)
		}
	}
}
