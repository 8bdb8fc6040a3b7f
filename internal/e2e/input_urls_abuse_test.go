package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Input files given by URL under abuse (issue 22): the API fetches them within the
// process's budget of bodies, one deadline and a bound on their number per request,
// never inflating a compressed body, through an allow-list of their own.

// gzipOf is data gzip-compressed.
func gzipOf(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return b.Bytes()
}

// errorOf is the API's error object in a.
func errorOf(a answer) (e struct{ Code, Message, Field string }) {
	var body struct {
		Error struct{ Code, Message, Field string } `json:"error"`
	}
	_ = json.Unmarshal(a.body, &body)
	return body.Error
}

// A body served with Content-Encoding is refused, by its header, before any of it is
// read: the API asks for no compression and never inflates a body, so 99 KiB of gzip
// cannot become 100 MiB in its memory.
func TestInputURLCompressedRefused(t *testing.T) {
	t.Parallel()
	bomb := gzipOf(t, make([]byte, 100<<20))
	small := gzipOf(t, []byte("region,total\nnorth,10\n"))
	var mu sync.Mutex
	var asked []string // Accept-Encoding of each request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/csv")
		w.Header().Set("Content-Encoding", "gzip") // whatever the client asked
		if strings.HasPrefix(r.URL.Path, "/bomb") {
			w.Write(bomb)
			return
		}
		w.Write(small)
	}))
	t.Cleanup(srv.Close)
	if len(bomb) > 200<<10 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	s := newStack(t, stackOptions{noWorkers: true, env: map[string]string{"CODEINTERP_FETCH_ALLOW": "127.0.0.1/32"}})
	for _, path := range []string{"/bomb.csv", "/small.csv"} {
		a := s.post(t, "key-a", map[string]any{"code": "print(1)", "files": []map[string]any{{"name": "a.csv", "url": srv.URL + path}}})
		if e := errorOf(a); a.status != http.StatusBadRequest || e.Field != "files[0].url" || !strings.Contains(e.Message, "Content-Encoding") {
			t.Errorf("%s: %d %s; want 400 naming files[0].url, saying Content-Encoding", path, a.status, a.body)
		}
	}
	cs, err := s.mcpHTTP(t, "key-a", &progress{})
	if err != nil {
		t.Fatal(err)
	}
	if res := callTool(t, cs, "upload_file", map[string]any{"name": "b.csv", "url": srv.URL + "/bomb.csv"}); !res.IsError || !strings.Contains(texts(res), "Content-Encoding") {
		t.Errorf("upload_file of a gzip bomb: %v %q", res.IsError, texts(res))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, ae := range asked {
		if strings.Contains(ae, "gzip") {
			t.Errorf("the API asked for Accept-Encoding %q", ae)
		}
	}
}

// A burst of URL requests holds no more than the budget of bodies: a fetch reserves
// its file's length before reading it, and one the budget cannot hold is refused with
// 503 and Retry-After rather than held. Measured by the budget's own gauge and the
// fetches the file server has open, not by time.
func TestInputURLBurstWithinBudget(t *testing.T) {
	t.Parallel()
	const (
		fileSize = 2 << 20
		budget   = 8 << 20 // the least the harness allows: the largest request and upload
		burst    = 12
	)
	var (
		mu            sync.Mutex
		started, live int
	)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		started, live = started+1, live+1
		mu.Unlock()
		defer func() {
			mu.Lock()
			live--
			mu.Unlock()
		}()
		w.Header().Set("Content-Length", strconv.Itoa(fileSize))
		chunk := make([]byte, 64<<10)
		w.Write(chunk)
		w.(http.Flusher).Flush()
		select { // until the test lets it go on, or the API hangs up
		case <-release:
		case <-r.Context().Done():
			return
		}
		for sent := len(chunk); sent < fileSize; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	t.Cleanup(let) // before srv.Close, which waits for its handlers
	s := newStack(t, stackOptions{noWorkers: true, env: map[string]string{
		"CODEINTERP_FETCH_ALLOW": "127.0.0.1/32", "CODEINTERP_INFLIGHT_BYTES": strconv.Itoa(budget),
	}})

	answers := make(chan answer, burst)
	for i := range burst {
		go func() {
			a, err := send(s.newRequest("key-a", "POST", "/v1/executions", jsonBody(map[string]any{"code": "print(1)",
				"files": []map[string]any{{"name": "f.bin", "url": fmt.Sprintf("%s/f%d.bin", srv.URL, i)}}})))
			if err != nil {
				a.status, a.body = -1, []byte(err.Error())
			}
			answers <- a
		}()
	}
	var got []answer
	collect := func() {
		for {
			select {
			case a := <-answers:
				got = append(got, a)
			default:
				return
			}
		}
	}
	// Settled: every request reached the file server, and each is either answered or
	// fetching with its file's length reserved (a refused fetch's connection is
	// closed: its handler ends). Without the budget's accounting it never settles.
	var fetching int
	var held, limit float64
	for deadline := time.Now().Add(2 * time.Minute); ; {
		collect()
		held, limit = s.metric(t, "codeinterp_api_inflight_bytes"), s.metric(t, "codeinterp_api_inflight_limit_bytes")
		mu.Lock()
		fetching = live
		settled := started == burst && len(got)+live == burst && len(got)+int(held)/fileSize == burst
		mu.Unlock()
		if settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled: %d requests fetching and %d answered of %d; the budget holds %g of %g bytes (fetched bytes must count, and fetches past the budget be refused)",
				fetching, len(got), burst, held, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d fetching, %d refused; the budget holds %g of %g bytes", fetching, len(got), held, limit)
	if fetching > budget/fileSize-1 {
		t.Errorf("%d of %d fetches of %d bytes held at once within a budget of %d bytes", fetching, burst, fileSize, budget)
	}
	if limit != budget || held > limit {
		t.Errorf("the budget holds %g of %g bytes", held, limit)
	}
	for _, a := range got {
		wantRefused(t, "a fetch past the budget", a, http.StatusServiceUnavailable, "unavailable")
	}
	if refused := s.metric(t, "codeinterp_api_inflight_refused_total"); refused < float64(len(got)) {
		t.Errorf("%g refusals counted; %d answered 503", refused, len(got))
	}

	let()
	for len(got) < burst {
		got = append(got, receive(t, "a fetch let go on", answers))
	}
	accepted := 0
	for _, a := range got {
		if a.status == http.StatusAccepted {
			accepted++
		}
	}
	if accepted != fetching {
		t.Errorf("%d accepted; %d were fetching", accepted, fetching)
	}
	eventually(t, time.Minute, "the budget empty again", func() bool { return s.metric(t, "codeinterp_api_inflight_bytes") == 0 })
}

// One request names at most CODEINTERP_FETCH_MAX_FILES files by URL, refused before
// any is fetched, and all of its files share one deadline, CODEINTERP_FETCH_TIMEOUT:
// five files that take a second each, then one that never ends, are cut within the
// deadline on a file that alone was well within it.
func TestInputURLBounds(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hits := 0
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		w.Header().Set("Content-Length", "2048")
		w.Write(make([]byte, 1024))
		w.(http.Flusher).Flush()
		var pause <-chan time.Time // the stalling file never goes on
		if strings.HasPrefix(r.URL.Path, "/slow") {
			pause = time.After(time.Second) // a slow server, the scenario itself
		}
		select {
		case <-pause:
			w.Write(make([]byte, 1024))
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) })
	s := newStack(t, stackOptions{noWorkers: true, env: map[string]string{
		"CODEINTERP_FETCH_ALLOW": "127.0.0.1/32", "CODEINTERP_FETCH_MAX_FILES": "6", "CODEINTERP_FETCH_TIMEOUT": "3s",
	}})
	files := func(paths ...string) []map[string]any {
		var out []map[string]any
		for i, p := range paths {
			out = append(out, map[string]any{"name": fmt.Sprintf("f%d", i), "url": srv.URL + p})
		}
		return out
	}

	a := s.post(t, "key-a", map[string]any{"code": "print(1)", "files": files("/a", "/b", "/c", "/d", "/e", "/f", "/g")})
	if e := errorOf(a); a.status != http.StatusBadRequest || e.Field != "files" || !strings.Contains(e.Message, "at most 6") {
		t.Errorf("7 files by url: %d %s; want 400 naming files, saying at most 6", a.status, a.body)
	}
	mu.Lock()
	if hits != 0 {
		t.Errorf("%d files fetched for a request refused for naming too many", hits)
	}
	mu.Unlock()

	a = s.post(t, "key-a", map[string]any{"code": "print(1)", "files": files("/slow0", "/slow1", "/slow2", "/slow3", "/slow4", "/stall")})
	e := errorOf(a)
	if a.status != http.StatusBadRequest || !strings.Contains(e.Message, "within 3s") {
		t.Fatalf("files past the request's deadline: %d %s; want 400 saying within 3s", a.status, a.body)
	}
	if !strings.HasPrefix(e.Field, "files[") || !strings.HasSuffix(e.Field, "].url") || e.Field == "files[5].url" {
		t.Errorf("cut on %q; want one of the slow files (each well within the deadline alone)", e.Field)
	}

	cs, err := s.mcpHTTP(t, "key-a", &progress{})
	if err != nil {
		t.Fatal(err)
	}
	if res := callTool(t, cs, "upload_file", map[string]any{"name": "s.bin", "url": srv.URL + "/stall"}); !res.IsError || !strings.Contains(texts(res), "within 3s") {
		t.Errorf("upload_file of a file that never ends: %v %q", res.IsError, texts(res))
	}
}
