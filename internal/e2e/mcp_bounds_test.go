package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metric reads one sample of the stack's /metrics, "" when absent.
func figureCount(t *testing.T, s *stack, outcome string) int {
	t.Helper()
	return int(s.metric(t, fmt.Sprintf(`codeinterp_mcp_figures_total{outcome=%q}`, outcome)))
}

// bigPNG is Python that shows, as the last expression's image, a 16-bit RGBA PNG of
// 6400x6400 zero pixels: some 330 KiB, rows streamed through zlib, 470 MiB decoded.
const bigPNG = `import struct, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
z = zlib.compressobj(9)
row = bytes(1 + 6400 * 8)
idat = b"".join(z.compress(row) for _ in range(6400)) + z.flush()
data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 6400, 6400, 16, 6, 0, 0, 0)) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
print(len(data))
class Big:
    def _repr_png_(self):
        return data
Big()`

// A figure whose header asks for more than the pixel budget, or 16 bits a channel,
// is a link, never decoded (what became of each figure is on /metrics); a result
// fits its first CODEINTERP_MCP_IMAGES figures and links the others.
func TestMCPFigureBudget(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	cs, err := s.mcpHTTP(t, "key-a", &progress{})
	if err != nil {
		t.Fatal(err)
	}

	res, ex := runCode(t, cs, bigPNG)
	if res.IsError || ex.Status != "succeeded" {
		t.Fatalf("%s %q", ex.Status, texts(res))
	}
	var link *mcp.ResourceLink
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.ImageContent:
			t.Fatalf("the 16-bit 6400x6400 figure was sent as an image (%d bytes)", len(c.Data))
		case *mcp.ResourceLink:
			link = c
		}
	}
	if link == nil || !strings.HasPrefix(link.Name, "outputs/.results/") {
		t.Fatalf("no link to the figure: %+v", res.Content)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(download(t, link.URI)))
	if err != nil || cfg.Width != 6400 || link.Size == nil || *link.Size > 1<<20 {
		t.Fatalf("the link is not the figure: %+v %v %+v", cfg, err, link)
	}
	if refused, decoded := figureCount(t, s, "refused"), figureCount(t, s, "downscaled")+figureCount(t, s, "unfit"); refused != 1 || decoded != 0 {
		t.Fatalf("figures refused %d (want 1), decoded %d (want 0)", refused, decoded)
	}

	res, _ = runCode(t, cs, "import matplotlib.pyplot as plt\nfor i in range(6):\n    plt.figure(figsize=(2, 2), dpi=50)\n    plt.plot([1, i])\nplt.show()")
	images, links := 0, 0
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.ImageContent:
			images++
		case *mcp.ResourceLink:
			if strings.HasPrefix(c.Name, "outputs/.results/") {
				links++
			}
		}
	}
	if res.IsError || images != 4 || links != 2 {
		t.Fatalf("six figures: %d images and %d links, want 4 and 2: %q", images, links, texts(res))
	}
	if inline, over := figureCount(t, s, "inline"), figureCount(t, s, "over_count"); inline != 4 || over != 2 {
		t.Fatalf("figures inline %d, over the count %d; want 4 and 2", inline, over)
	}
}

// A tenant has at most its mcp_sessions quota of sessions open (the client is told
// why); a closed session frees its slot; opening one counts against the rate quota,
// 429 with Retry-After past it.
func TestMCPSessionQuota(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorkers: true, env: map[string]string{
		"CODEINTERP_TENANT_QUOTAS": "acme:mcp_sessions=2;globex:rate=0.001,burst=2",
	}})
	var open []*mcp.ClientSession
	for range 2 {
		cs, err := s.mcpHTTP(t, "key-a", &progress{})
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, cs)
	}
	if _, err := s.mcpHTTP(t, "key-a", &progress{}); err == nil || !strings.Contains(err.Error(), "quota_exceeded") || !strings.Contains(err.Error(), "CODEINTERP_QUOTA_MCP_SESSIONS") {
		t.Fatalf("a third session: %v, want refused naming the quota", err)
	}
	if got := s.metric(t, `codeinterp_mcp_sessions{tenant="acme"}`); got != 2 {
		t.Fatalf("sessions open on /metrics: %v, want 2", got)
	}
	if err := open[0].Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "a closed session frees its slot", func() bool {
		cs, err := s.mcpHTTP(t, "key-a", &progress{})
		if err == nil {
			cs.Close()
		}
		return err == nil
	})

	// globex: two submissions at once, one every 1000 s.
	for range 2 {
		if _, err := s.mcpHTTP(t, "key-b", &progress{}); err != nil {
			t.Fatal(err)
		}
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"loop","version":"1"}}}`
	req, _ := http.NewRequestWithContext(context.Background(), "POST", s.url+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer key-b")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Error struct {
			Code    int
			Message string
		}
	}
	_ = json.NewDecoder(resp.Body).Decode(&answer)
	retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || retry < 1 || !strings.Contains(answer.Error.Message, "quota_exceeded") || !strings.Contains(answer.Error.Message, "submissions-per-second") {
		t.Fatalf("an initialize past the rate: %d Retry-After %q %+v", resp.StatusCode, resp.Header.Get("Retry-After"), answer)
	}
	if _, err := s.mcpHTTP(t, "key-b", &progress{}); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Fatalf("a client past the rate: %v", err)
	}
}
