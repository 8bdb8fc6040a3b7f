package e2e

import (
	"net/http"
	"testing"
)

// TestThreadResetRoute: POST /v1/threads/{id}/reset restarts the kernel in order with
// the thread's executions; files stay; another tenant's thread is a 404.
func TestThreadResetRoute(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	run := func(code string) execution {
		return s.run(t, map[string]any{"thread_id": "reset-me", "code": code})
	}
	if ex := run("x = 41\nopen('kept.txt', 'w').write('kept')"); ex.Status != "succeeded" {
		t.Fatalf("first: %s %+v", ex.Status, ex.Error)
	}
	var out struct {
		ThreadID string `json:"thread_id"`
		Reset    bool   `json:"reset"`
	}
	if code := s.callAs(t, "key-b", "POST", "/v1/threads/reset-me/reset", nil, &out); code != http.StatusNotFound {
		t.Fatalf("another tenant's reset: %d; want 404", code)
	}
	if ex := run("print(x + 1)"); ex.Stdout != "42\n" {
		t.Fatalf("state lost after another tenant's refused reset: %q %+v", ex.Stdout, ex.Error)
	}
	if code := s.callAs(t, "key-a", "POST", "/v1/threads/reset-me/reset", nil, &out); code != http.StatusOK || !out.Reset || out.ThreadID != "reset-me" {
		t.Fatalf("reset: %d %+v", code, out)
	}
	ex := run("print(open('kept.txt').read()); print(x)")
	if ex.Stdout != "kept\n" || ex.Error == nil || ex.Error.Name != "NameError" {
		t.Fatalf("after reset: %q %+v; want the file kept and x gone", ex.Stdout, ex.Error)
	}
	if code := s.callAs(t, "key-a", "POST", "/v1/threads/never-used/reset", nil, &out); code != http.StatusNotFound {
		t.Fatalf("reset of a thread never used: %d; want 404", code)
	}
	if code := s.callAs(t, "key-a", "POST", "/v1/threads/bad%20id/reset", nil, &out); code != http.StatusBadRequest {
		t.Fatalf("reset of a bad id: %d; want 400", code)
	}
}
