package webhook

import (
	"net/netip"
	"testing"
	"time"
)

func TestGuard(t *testing.T) {
	g := Guard{}
	for _, ip := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
		"0.0.0.0", "224.0.0.1", "::1", "fe80::1", "fd00:ec2::254", "::ffff:10.0.0.1", "::ffff:127.0.0.1", "ff02::1", "::"} {
		if g.Permitted(netip.MustParseAddr(ip)) {
			t.Errorf("%s permitted; want blocked", ip)
		}
	}
	for _, ip := range []string{"93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"} {
		if !g.Permitted(netip.MustParseAddr(ip)) {
			t.Errorf("%s blocked; want permitted", ip)
		}
	}
	allowed := Guard{Allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}
	if !allowed.Permitted(netip.MustParseAddr("10.1.2.3")) || allowed.Permitted(netip.MustParseAddr("10.2.0.1")) {
		t.Error("the allow-list should open 10.1.0.0/16 and nothing else")
	}
}

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
