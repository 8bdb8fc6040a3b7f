package webhook

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/internal/netguard"
)

func TestWebhookRetriesLastOverAnHour(t *testing.T) {
	var total time.Duration
	for n := range MaxRetry {
		d := RetryDelay(n, nil)
		if d > 10*time.Minute {
			t.Fatalf("retry %d waits %s", n, d)
		}
		total += d
	}
	if total < time.Hour {
		t.Fatalf("retries span %s, want at least an hour", total)
	}
}

func TestSign(t *testing.T) {
	// Computed independently: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac whsec_0123456789abcdef
	got := Sign("whsec_0123456789abcdef", time.Unix(1700000000, 0), []byte(`{"a":1}`))
	if want := "t=1700000000,v1=9f5e37cdc7ea587c7c02062d93283cad000d66a831b2a1676418696db47ed6c2"; got != want {
		t.Fatalf("signature %q, want %q", got, want)
	}
}

// Errors a tenant sees never carry the dialer's words.
func TestPublicErrors(t *testing.T) {
	// A closed port on an allowed address: the tenant learns only that it failed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	_, err = netguard.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}.Client(time.Second).Get("http://" + closed + "/")
	if err == nil {
		t.Fatal("a closed port answered")
	}
	if got := publicError(err); got != "connection failed" || strings.Contains(got, "refused") {
		t.Errorf("public error %q for %v", got, err)
	}
	if got := publicError(&statusError{code: 500}); got != "webhook answered 500" {
		t.Errorf("status error %q", got)
	}
}
