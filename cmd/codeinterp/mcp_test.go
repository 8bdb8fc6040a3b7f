package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// keys records the Authorization headers a server saw.
type keys struct {
	mu   sync.Mutex
	seen []string
}

func (k *keys) record(r *http.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seen = append(k.seen, r.Header.Get("Authorization"))
}

func (k *keys) leaked(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, s := range k.seen {
		if strings.Contains(s, key) {
			return true
		}
	}
	return false
}

// bridgeOnce runs `codeinterp mcp` against base, sends it an initialize and returns
// its answer.
func bridgeOnce(t *testing.T, base, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- mcpBridge(ctx, base, key, inR, outW, io.Discard) }()
	go io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(outR).ReadString('\n')
		line <- s
	}()
	var answer string
	select {
	case answer = <-line:
	case <-ctx.Done():
		t.Fatal("the bridge never answered")
	}
	inW.Close()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the bridge did not end with its input")
	}
	return answer
}

// The bridge sends the API key to the service's origin only: a redirect to another
// host is not followed (the key and the session's messages would go with it); one
// within the origin is.
func TestMCPBridgeKeepsTheKeyAtHome(t *testing.T) {
	const key = "ci_live_secret_key"
	var other keys
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.record(r)
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	defer elsewhere.Close()
	var own keys
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		own.record(r)
		switch r.URL.Path {
		case "/mcp":
			http.Redirect(w, r, elsewhere.URL+"/mcp", http.StatusTemporaryRedirect)
		case "/moved/mcp":
			http.Redirect(w, r, "/mcp2", http.StatusTemporaryRedirect)
		default:
			http.Error(w, "nothing here", http.StatusNotFound)
		}
	}))
	defer home.Close()

	answer := bridgeOnce(t, home.URL, key)
	if other.leaked(key) {
		t.Fatalf("the key went to another host on a redirect; the bridge answered %s", answer)
	}
	if !strings.Contains(answer, `"error"`) || !strings.Contains(answer, "another host") {
		t.Fatalf("the bridge answered %s, want an error naming the redirect", answer)
	}

	bridgeOnce(t, home.URL+"/moved", key)
	own.mu.Lock()
	defer own.mu.Unlock()
	if n := len(own.seen); n < 2 || own.seen[n-1] != "Bearer "+key {
		t.Fatalf("a redirect within the service lost the key: %q", own.seen)
	}
}
