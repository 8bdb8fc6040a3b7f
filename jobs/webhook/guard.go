// Package webhook delivers execution webhooks: the asynq task that POSTs the
// execution object to the client's URL, signed with the tenant's secret
// (Codeinterp-Signature), its retry policy (over an hour), and the guard that keeps
// deliveries away from loopback, private and metadata addresses.
//
// It reads records through the small interface it declares; it knows nothing of
// sandboxes, and of HTTP only as a client.
package webhook

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// blockedNets are the destinations a webhook may not reach unless the operator allows
// them: loopback, private, link-local (cloud metadata services live there), shared
// (CGNAT), multicast, unspecified and reserved addresses.
var blockedNets = mustPrefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
	"192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
	"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8",
)

func mustPrefixes(cidrs ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(cidrs))
	for i, c := range cidrs {
		out[i] = netip.MustParsePrefix(c)
	}
	return out
}

// Guard decides which addresses webhooks may connect to.
type Guard struct {
	Allow []netip.Prefix // operator exceptions: internal receivers
}

// Permitted reports whether a webhook may connect to ip.
func (g Guard) Permitted(ip netip.Addr) bool {
	ip = ip.Unmap() // ::ffff:10.0.0.1 is 10.0.0.1
	for _, p := range g.Allow {
		if p.Contains(ip) {
			return true
		}
	}
	for _, p := range blockedNets {
		if p.Contains(ip) {
			return false
		}
	}
	return ip.IsValid()
}

// Client returns an HTTP client for webhooks: it checks every address it connects to
// after DNS resolution (so a name that resolves, or re-resolves, to a private address
// is refused: no DNS rebinding), follows no redirects and uses no proxy.
func (g Guard) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{
		Timeout: timeout,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("webhook: bad address %q: %w", address, err)
			}
			if !g.Permitted(ap.Addr()) {
				return fmt.Errorf("webhook: %w: %s", ErrForbiddenTarget, ap.Addr())
			}
			return nil
		},
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          16,
			IdleConnTimeout:       30 * time.Second,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// ErrForbiddenTarget means a webhook resolved to an address it may not reach.
var ErrForbiddenTarget = fmt.Errorf("target address not allowed")
