package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The budget of bodies an API process holds at once (CODEINTERP_INFLIGHT_BYTES), as
// /metrics shows it: request bodies, and input files fetched by URL
// (input_urls_abuse_test.go).

// metric reads a sample without labels from the API's /metrics (0 when absent).
func (s *stack) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(s.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// Uploads of unknown length (chunked) reserve the budget of bodies as their parts
// fill, not the largest upload each: 16 uploads of a byte, all open at once on a
// process whose budget is one largest upload, all succeed.
func TestAbuseAPIChunkedUploads(t *testing.T) {
	t.Parallel()
	const uploads = 16
	s := newStack(t, stackOptions{noWorkers: true, env: map[string]string{"CODEINTERP_INFLIGHT_BYTES": strconv.Itoa(8 << 20)}})
	u, _ := url.Parse(s.url)
	conns := make([]net.Conn, uploads)
	readers := make([]*bufio.Reader, uploads)
	for i := range uploads {
		// By hand, so the headers and the first chunk are surely on the wire (Go's
		// client may hold back a body of unknown length while it probes it).
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := fmt.Fprintf(c, "POST /v1/files?name=f%d.txt HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer key-a\r\n"+
			"Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n", i, u.Host); err != nil {
			t.Fatal(err)
		}
		conns[i], readers[i] = c, bufio.NewReader(c)
	}
	// Each upload being read holds the budget's least step (a refused one would not
	// be answered before its body ends: Go's server reads a body before it answers).
	eventually(t, time.Minute, "all the uploads being read at once, each holding one step of the budget", func() bool {
		return s.metric(t, "codeinterp_api_inflight_bytes") >= uploads*64<<10
	})
	for i, c := range conns {
		_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
		if _, err := io.WriteString(c, "0\r\n\r\n"); err != nil {
			t.Fatalf("upload %d: %v", i, err)
		}
	}
	for i := range conns {
		resp, err := http.ReadResponse(readers[i], nil)
		if err != nil {
			t.Fatalf("upload %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("upload %d of 1 byte among %d open: %d %s; want 201", i, uploads, resp.StatusCode, body)
		}
	}
}
