package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progress records the progress notifications a client receives.
type progress struct {
	mu   sync.Mutex
	msgs []string
}

func (p *progress) add(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, msg)
}

// seen reports whether a message containing sub arrived.
func (p *progress) seen(sub string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.msgs {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

func (p *progress) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.msgs, " | ")
}

func mcpClient(p *progress) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { p.add(r.Params.Message) },
	})
}

// withKey adds an API key to every request.
type withKey struct{ key string }

func (k withKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if k.key != "" {
		r.Header.Set("Authorization", "Bearer "+k.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpHTTP opens an MCP session with the stack's /mcp over Streamable HTTP, as the
// tenant of key.
func (s *stack) mcpHTTP(t *testing.T, key string, p *progress) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: withKey{key}}, MaxRetries: -1}
	cs, err := mcpClient(p).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// buildCLI builds the codeinterp command into a temporary directory.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "codeinterp")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/codeinterp/codeinterp/cmd/codeinterp").CombinedOutput(); err != nil {
		t.Fatalf("build cli: %v\n%s", err, out)
	}
	return bin
}

// mcpStdio opens an MCP session through `codeinterp mcp`, the stdio bridge, as the
// tenant of key.
func (s *stack) mcpStdio(t *testing.T, bin, key string, p *progress) (*mcp.ClientSession, error) {
	t.Helper()
	cmd := exec.Command(bin, "mcp")
	cmd.Env = append(os.Environ(), "CODEINTERP_URL="+s.url, "CODEINTERP_API_KEY="+key)
	cmd.Stderr = testWriter{t}
	cs, err := mcpClient(p).Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("bridge: %s", strings.TrimSpace(string(p)))
	return len(p), nil
}

// callTool calls a tool, failing the test on a protocol error.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return res
}

// texts joins a result's text content.
func texts(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// mcpExecution is code_interpreter's structured result, as a client reads it.
type mcpExecution struct {
	ExecutionID     string `json:"execution_id"`
	ThreadID        string `json:"thread_id"`
	Status          string `json:"status"`
	Stdout          string `json:"stdout"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	Error           *struct {
		Name, Value, Traceback string
	} `json:"error"`
	Files []struct {
		Name, URL string
		Size      int64
	} `json:"files"`
}

func structuredOf[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var out T
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return out
}

// run calls code_interpreter with code (and more arguments, if any).
func runCode(t *testing.T, cs *mcp.ClientSession, code string, more ...map[string]any) (*mcp.CallToolResult, mcpExecution) {
	t.Helper()
	args := map[string]any{"code": code}
	for _, m := range more {
		for k, v := range m {
			args[k] = v
		}
	}
	res := callTool(t, cs, "code_interpreter", args)
	return res, structuredOf[mcpExecution](t, res)
}
