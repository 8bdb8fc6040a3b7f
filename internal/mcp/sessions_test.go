package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codeinterp/codeinterp/internal/service"
)

type keyed struct{ key string }

func (k keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return http.DefaultTransport.RoundTrip(r)
}

func connect(url, key string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	return c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: keyed{key}}, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
}

// A tenant has at most its quota of sessions open; one that idles out frees its
// slot (the e2e tests show a closed one does, through the whole stack).
func TestSessionQuotaIdleOut(t *testing.T) {
	t.Parallel()
	e := New(Config{Service: service.New(service.Config{}), SessionTimeout: 300 * time.Millisecond,
		Tenant: func(key string) (string, bool) {
			return strings.TrimPrefix(key, "key-"), strings.HasPrefix(key, "key-")
		},
		Sessions: func(tenant string) int { return map[string]int{"acme": 1}[tenant] }})
	srv := httptest.NewServer(e)
	defer srv.Close()
	first, err := connect(srv.URL, "key-acme")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := connect(srv.URL, "key-acme"); err == nil || !strings.Contains(err.Error(), "mcp_sessions quota") {
		t.Fatalf("a second session: %v, want refused by the quota", err)
	}
	if other, err := connect(srv.URL, "key-globex"); err != nil {
		t.Fatalf("another tenant: %v", err)
	} else {
		other.Close()
	}
	deadline := time.Now().Add(time.Minute)
	for {
		cs, err := connect(srv.URL, "key-acme")
		if err == nil {
			cs.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle session never freed its slot: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
