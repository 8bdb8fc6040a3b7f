// Package netguard owns the one rule for where the service's own outbound
// connections may go on a tenant's behalf: webhooks, input files fetched by URL, and
// sandboxes' egress. It keeps them away from loopback, private, link-local, metadata
// and other non-public addresses, checked on the literal address and again at dial
// time after DNS, with the operator's exceptions.
//
// It does no I/O of its own beyond the dialer it configures, and imports nothing of
// codeinterp.
package netguard

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// blockedNets are the destinations a webhook, an input file's URL or egress may not reach
// unless the operator allows them: loopback, private, link-local (cloud metadata
// services live there), shared (CGNAT), multicast, unspecified and reserved
// addresses, Azure's WireServer (168.63.129.16: a public address every Azure VM
// reaches, which serves its provisioning data and extensions), and the IPv6 ranges
// that embed or translate to IPv4 ones (IPv4-compatible, IPv4-translated
// ::ffff:0:a.b.c.d, NAT64, 6to4, Teredo), site-local and discard. IPv4-mapped
// addresses (::ffff:a.b.c.d) are judged as the IPv4 address they map.
var blockedNets = mustPrefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
	"192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4", "168.63.129.16/32",
	"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8",
	"::/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "2001::/32", "fec0::/10", "100::/64",
)

func mustPrefixes(cidrs ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(cidrs))
	for i, c := range cidrs {
		out[i] = netip.MustParsePrefix(c)
	}
	return out
}

// Guard decides which addresses and ports a connection may go to. Each use has a
// Guard of its own: the API fetches input files given by URL through one
// (CODEINTERP_FETCH_ALLOW), so an internal receiver allowed for webhooks
// (CODEINTERP_WEBHOOK_ALLOW) is not readable by every tenant.
type Guard struct {
	Allow []netip.Prefix // operator exceptions: internal receivers
	Ports []uint16       // if set, the only ports connections may go to
}

// Permitted reports whether a connection may go to ip. An address with a zone
// (fe80::1%eth0) is refused whatever its value: prefixes never contain one, so it
// would slip past every check.
func (g Guard) Permitted(ip netip.Addr) bool {
	if ip.Zone() != "" {
		return false
	}
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

// PortPermitted reports whether a connection may go to port.
func (g Guard) PortPermitted(port uint16) bool {
	if len(g.Ports) == 0 {
		return true
	}
	for _, p := range g.Ports {
		if p == port {
			return true
		}
	}
	return false
}

// CheckURL refuses, before any connection, a URL whose host is an address
// (in any spelling: 127.0.0.1, 2130706433, 0x7f.1, 0177.0.0.1, [::1%25lo]) that
// connections may not reach, or whose port is not allowed. A name is checked again
// when connecting, after DNS.
func (g Guard) CheckURL(u *url.URL) error {
	host := u.Hostname()
	if ip, ok := literalAddr(host); ok && !g.Permitted(ip) {
		return fmt.Errorf("%w: %s is a loopback, private, link-local or otherwise internal address", ErrForbiddenTarget, host)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || !g.PortPermitted(uint16(n)) {
		return fmt.Errorf("%w: port %s may not be used", ErrForbiddenTarget, port)
	}
	return nil
}

// literalAddr reads host as an IP address the way resolvers and browsers do: IPv6
// with an optional zone, dotted IPv4, and the legacy IPv4 forms (a single number,
// fewer than four parts, octal and hexadecimal parts).
func literalAddr(host string) (netip.Addr, bool) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, true
	}
	parts := strings.Split(host, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	var nums []uint64
	for _, p := range parts {
		n, err := strconv.ParseUint(p, 0, 32) // 0x.. hex, 0.. octal, else decimal
		if err != nil {
			return netip.Addr{}, false
		}
		nums = append(nums, n)
	}
	// The last part fills the bytes the earlier ones leave (inet_aton).
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// Client returns an HTTP client that checks every address it connects to
// after DNS resolution (so a name that resolves, or re-resolves, to a private address
// is refused: no DNS rebinding), follows no redirects, uses no proxy and asks for no
// compression (a gzip body of kilobytes would inflate to gigabytes in the reader).
func (g Guard) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{
		Timeout: timeout,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("bad address %q: %w", address, err)
			}
			if !g.Permitted(ap.Addr()) || !g.PortPermitted(ap.Port()) {
				return fmt.Errorf("%w: %s", ErrForbiddenTarget, ap)
			}
			return nil
		},
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DisableCompression:    true,
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

// ErrForbiddenTarget means a connection would reach an address or port it may not.
var ErrForbiddenTarget = fmt.Errorf("target address not allowed")
