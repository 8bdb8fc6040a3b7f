package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// One tenant's long thread items leave a worker's reserve slot free (issue 22, a fair
// share of CPU): another tenant's thread runs beside them at once, not after one of
// them ends, and the tenant's items held back meanwhile are not lost.
func TestThreadSlotReservedForOthers(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{concurrency: 3}) // acme's share 1, the reserve 1: acme may hold 2
	long := func(i int) map[string]any {
		return map[string]any{"thread_id": fmt.Sprintf("long-%d", i), "code": "import time\ntime.sleep(100)", "timeout_ms": 120000}
	}
	var ids []string
	for i := range 3 {
		id := idOf(t, s.post(t, "key-a", long(i)))
		s.cancelAtEnd(t, "key-a", id)
		ids = append(ids, id)
	}
	status := func(id string) string {
		var ex execution
		s.call(t, "GET", "/v1/executions/"+id, nil, &ex)
		return ex.Status
	}
	var running, queued []string
	eventually(t, 2*time.Minute, "two of acme's long items running", func() bool {
		running, queued = nil, nil
		for _, id := range ids {
			switch status(id) {
			case "running":
				running = append(running, id)
			case "queued":
				queued = append(queued, id)
			}
		}
		return len(running) == 2
	})
	if len(queued) != 1 {
		t.Fatalf("acme's third long item is not queued: running %v, queued %v", running, queued)
	}

	// Without the reserve, acme's third thread takes the worker's last slot, and
	// globex's thread waits until one of acme's sleeps ends.
	other := idOf(t, s.post(t, "key-b", map[string]any{"thread_id": "quick", "code": "print('globex')"}))
	var g execution
	if code := s.callAs(t, "key-b", "GET", "/v1/executions/"+other+"?wait=60s", nil, &g); code != http.StatusOK || g.Status != "succeeded" {
		t.Fatalf("globex's thread: %d %s %+v", code, g.Status, g.Error)
	}
	for _, id := range running {
		if st := status(id); st != "running" {
			t.Fatalf("acme's long item %s is %s when globex's ended; want still running beside it", id, st)
		}
	}
	if st := status(queued[0]); st != "queued" {
		t.Fatalf("acme's third long item is %s; want queued, leaving the reserve free", st)
	}
	for _, id := range running {
		wantStatus(t, "cancel "+id, s.request(t, "key-a", "POST", "/v1/executions/"+id+"/cancel", nil), http.StatusAccepted)
	}
	s.waitStatus(t, queued[0], "running")
}
