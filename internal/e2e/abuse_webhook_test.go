package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

// A tenant whose webhook receiver never answers (a tarpit) holds only a few delivery
// slots, on a queue of their own: another tenant's webhook is delivered promptly, and
// one-offs run as usual meanwhile.
func TestAbuseWebhookTarpit(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{
		webhookAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		env: map[string]string{
			"CODEINTERP_WEBHOOK_SECRETS":            "acme:" + webhookSecret + ",globex:" + webhookSecret,
			"CODEINTERP_WEBHOOK_CONCURRENCY":        "4",
			"CODEINTERP_WEBHOOK_TENANT_CONCURRENCY": "1",
			"CODEINTERP_WEBHOOK_TIMEOUT":            "30s",
		},
	})
	stuck := make(chan struct{})
	tarpit := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // holds the delivery until the test ends or the client gives up
		case <-stuck:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(stuck); tarpit.Close() })
	for range 8 {
		s.submit(t, "key-a", map[string]any{"code": "1", "webhook_url": tarpit.URL + "/hook"})
	}
	// globex's one-off runs and its webhook arrives while acme's deliveries hang.
	rcv := newReceiver(t, 0)
	id := s.submit(t, "key-b", map[string]any{"code": "print('ok')", "webhook_url": rcv.srv.URL + "/hook"})
	// The one-off waits its turn behind acme's eight (sandboxes are slow to create
	// under gVisor on a busy machine): what is timed is the delivery after it ended.
	var ex execution
	eventually(t, 2*time.Minute, "globex's one-off finished", func() bool {
		if code := s.callAs(t, "key-b", "GET", "/v1/executions/"+id+"?wait=30s", nil, &ex); code != http.StatusOK {
			t.Fatalf("GET globex's one-off: %d", code)
		}
		return ex.Status != "queued" && ex.Status != "running"
	})
	if ex.Status != "succeeded" {
		t.Fatalf("globex's one-off: %s %+v", ex.Status, ex.Error)
	}
	start := time.Now()
	eventually(t, 20*time.Second, "globex's webhook delivered", func() bool {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		return rcv.calls > 0
	})
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("globex's webhook took %s after its execution ended, behind acme's tarpit", took)
	}
}
