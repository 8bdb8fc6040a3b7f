package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpRoundTrip measures a code_interpreter call over MCP (Streamable HTTP, the SDK's
// client) for a warm print(1) in the session's thread: the same work as the warm
// thread print(1) over the HTTP API, through the MCP adapter.
func mcpRoundTrip(b bench, t *table, n int) error {
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: strings.TrimRight(b.url, "/") + "/mcp", HTTPClient: &http.Client{Transport: keyed{b.key}},
	}, nil)
	if err != nil {
		return fmt.Errorf("mcp connect: %w", err)
	}
	defer cs.Close()
	call := func() (time.Duration, error) {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "code_interpreter", Arguments: map[string]any{"code": "print(1)"}})
		took := time.Since(start)
		if err == nil && res.IsError {
			err = fmt.Errorf("code_interpreter: %+v", res.Content)
		}
		return took, err
	}
	if _, err := call(); err != nil { // the session's thread gets its sandbox
		return fmt.Errorf("mcp new thread: %w", err)
	}
	time.Sleep(5 * time.Second) // as for the HTTP API: let the warm pool refill
	s, err := measure(n, call)
	if err != nil {
		return fmt.Errorf("mcp warm print(1): %w", err)
	}
	t.add("warm thread print(1), MCP code_interpreter", s, "compare: the same over the HTTP API above")
	return nil
}

// keyed adds the API key to every request.
type keyed struct{ key string }

func (k keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return http.DefaultTransport.RoundTrip(r)
}
