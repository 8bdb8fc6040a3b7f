package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMCPTenants(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	a, err := s.mcpHTTP(t, "key-a", &progress{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.mcpHTTP(t, "key-b", &progress{})
	if err != nil {
		t.Fatal(err)
	}
	res, ex := runCode(t, a, "secret = 42\nopen('secret.txt', 'w').write('s3cret')", map[string]any{"thread_id": "shared"})
	if res.IsError {
		t.Fatalf("tenant A: %q", texts(res))
	}
	_, mine := runCode(t, a, "1")

	// The same thread id, and A's session thread, are other threads for B.
	for _, thread := range []string{"shared", mine.ThreadID} {
		if res, ex := runCode(t, b, "secret", map[string]any{"thread_id": thread}); !res.IsError || ex.Error == nil || ex.Error.Name != "NameError" {
			t.Fatalf("tenant B reached A's thread %s: %q", thread, texts(res))
		}
	}
	if res := callTool(t, b, "read_file", map[string]any{"thread_id": "shared", "path": "secret.txt"}); !res.IsError {
		t.Fatalf("tenant B read A's file: %q", texts(res))
	}
	if _, err := b.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "codeinterp://threads/shared/files/secret.txt"}); err == nil {
		t.Fatal("tenant B read A's file as a resource")
	}
	if res := callTool(t, b, "interrupt", map[string]any{"thread_id": ex.ThreadID}); structuredOf[struct{ Interrupted string }](t, res).Interrupted != "" {
		t.Fatal("tenant B interrupted A's thread")
	}

	// A's session is A's: B's key cannot use its id.
	post := func(key, session string) int {
		req, _ := http.NewRequest("POST", s.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("key-b", a.ID()); code != http.StatusForbidden {
		t.Fatalf("tenant B on A's session: %d", code)
	}
	if code := post("key-a", a.ID()); code != http.StatusOK {
		t.Fatalf("tenant A on its session: %d", code)
	}

	// A missing or wrong key is refused.
	for _, key := range []string{"", "wrong-key"} {
		if code := post(key, ""); code != http.StatusUnauthorized {
			t.Fatalf("key %q: %d", key, code)
		}
		if _, err := s.mcpHTTP(t, key, &progress{}); err == nil {
			t.Fatalf("key %q: connected", key)
		}
	}
	bin := buildCLI(t)
	if _, err := s.mcpStdio(t, bin, "wrong-key", &progress{}); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("stdio bridge with a wrong key: %v", err)
	}
}
