package e2e

import (
	"net/http"
	"testing"
)

// One tenant's long one-offs hold only its share of a worker's slots (issue 22,
// finding 11): another tenant's one-off runs beside them at once, not after them,
// and the tenant's one-offs held back meanwhile are not lost.
func TestOneOffFairAcrossTenants(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{concurrency: 2, env: map[string]string{"CODEINTERP_ONEOFF_TENANT_SHARE": "1"}})
	long := map[string]any{"code": "import time\ntime.sleep(50)", "timeout_ms": 60000}
	first := idOf(t, s.post(t, "key-a", long))
	s.cancelAtEnd(t, "key-a", first)
	s.waitStatus(t, first, "running")
	second := idOf(t, s.post(t, "key-a", long))
	s.cancelAtEnd(t, "key-a", second)
	short := idOf(t, s.post(t, "key-a", map[string]any{"code": "print('acme')"}))

	// Without the share, acme's second long one-off takes the worker's other slot,
	// and globex's waits until one of them ends.
	other := idOf(t, s.post(t, "key-b", map[string]any{"code": "print('globex')"}))
	var g execution
	if code := s.callAs(t, "key-b", "GET", "/v1/executions/"+other+"?wait=60s", nil, &g); code != http.StatusOK || g.Status != "succeeded" {
		t.Fatalf("globex's one-off: %d %s %+v", code, g.Status, g.Error)
	}
	status := func(id string) string {
		var ex execution
		s.call(t, "GET", "/v1/executions/"+id, nil, &ex)
		return ex.Status
	}
	if st := status(first); st != "running" {
		t.Fatalf("acme's first long one-off is %s when globex's ended; want still running beside it", st)
	}
	if st := status(second); st != "queued" {
		t.Fatalf("acme's second long one-off is %s; want queued, past acme's share of 1", st)
	}
	for _, id := range []string{first, second} {
		wantStatus(t, "cancel "+id, s.request(t, "key-a", "POST", "/v1/executions/"+id+"/cancel", nil), http.StatusAccepted)
	}
	if ex := s.wait(t, short); ex.Status != "succeeded" || ex.Stdout != "acme\n" {
		t.Fatalf("acme's one-off held back meanwhile: %s %q %+v", ex.Status, ex.Stdout, ex.Error)
	}
}
