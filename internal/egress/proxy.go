package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/codeinterp/codeinterp/internal/netguard"
	"github.com/codeinterp/codeinterp/jobs"
)

// Identity is who a connection comes from and what it may reach, as the proxy's
// caller knows it from the connection's source address: never from anything the
// code sends.
type Identity struct {
	Tenant, Thread, Execution string
	Policy                    Policy
}

// Identifier maps a connection's source address to its sandbox's identity; false:
// no sandbox with egress has that address, and the connection is refused.
type Identifier interface {
	Identify(ctx context.Context, remote netip.Addr) (Identity, bool)
}

// Entry is one line of an execution's egress ledger.
type Entry = jobs.EgressEntry

// Ledger keeps executions' entries. Every attempt is recorded when it is decided, so
// an execution's ledger is whole when its code ends, even while a connection it
// opened (a client's keep-alive pool) stays open; an allowed connection's entry is
// updated with its byte counts when it ends.
type Ledger interface {
	// Record adds e and returns a slot to update it by (-1: it was not kept).
	Record(id Identity, e Entry) (slot int64)
	// Update replaces the entry at slot.
	Update(id Identity, slot int64, e Entry)
}

// Reasons an attempt is refused, as the ledger and the code's error say them.
const (
	ReasonNotAllowed   = "not in the allow-list"
	ReasonAddress      = "an IP address: egress goes by host name"
	ReasonNotPublic    = "resolves to a non-public address"
	ReasonNoSuchHost   = "the name does not resolve"
	ReasonConnect      = "could not connect"
	ReasonNotTLS       = "a CONNECT tunnel must carry TLS"
	ReasonSNI          = "the TLS server name differs from the CONNECT host"
	ReasonBadRequest   = "not a proxy request"
	ReasonUnknownPeer  = "not a sandbox with egress"
	ReasonUpstreamFail = "the upstream request failed"
	ReasonIdle         = "cut: no bytes moved for the idle timeout"
)

// Proxy is the egress proxy: an HTTP forward proxy for http:// URLs and a CONNECT
// tunnel for TLS. It decides on the host the code asked for, resolves it itself and
// connects only to addresses netguard permits, so neither a name that resolves to
// a private address nor an address literal gets through.
//
// It is net/http rather than a proxy library: each tunnel must be held until the
// TLS server name is read, and every dial must go through the policy, the proxy's
// own resolver and the guard, which in a library means taking its connections over
// anyway.
type Proxy struct {
	Identify Identifier
	Guard    netguard.Guard
	Ledger   Ledger
	// Resolve looks a host up; default net.DefaultResolver. Sandboxes have no resolver
	// of their own: this is the only one their names reach.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// DialTimeout bounds a lookup and a connect; default 10 s.
	DialTimeout time.Duration
	// HelloTimeout bounds the wait for a tunnel's TLS ClientHello; default 10 s.
	HelloTimeout time.Duration
	// IdleTimeout closes a tunnel or a plain request quiet both ways this long;
	// default 2 min.
	IdleTimeout time.Duration
}

func (p *Proxy) dialTimeout() time.Duration  { return durationOr(p.DialTimeout, 10*time.Second) }
func (p *Proxy) helloTimeout() time.Duration { return durationOr(p.HelloTimeout, 10*time.Second) }
func (p *Proxy) idleTimeout() time.Duration  { return durationOr(p.IdleTimeout, 2*time.Minute) }

func durationOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// ServeHTTP serves one proxy request: CONNECT host:port, or an absolute http:// URL.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	remote, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		refuse(w, http.StatusForbidden, ReasonUnknownPeer)
		return
	}
	id, ok := p.Identify.Identify(r.Context(), remote.Addr().Unmap())
	if !ok {
		refuse(w, http.StatusForbidden, fmt.Sprintf("%s (%s)", ReasonUnknownPeer, remote.Addr().Unmap()))
		return
	}
	host, port, err := target(r)
	if err != nil {
		p.record(id, Entry{Host: host, Method: r.Method, Reason: ReasonBadRequest})
		refuse(w, http.StatusBadRequest, ReasonBadRequest+": "+err.Error())
		return
	}
	e := Entry{Host: host, Port: port, Method: r.Method}
	if reason := decide(id.Policy, host, port); reason != "" {
		e.Reason = reason
		p.record(id, e)
		refuse(w, http.StatusForbidden, fmt.Sprintf("%s:%d %s", host, port, reason))
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r, id, e)
		return
	}
	p.forward(w, r, id, e)
}

// target reads the host and port a proxy request is for.
func target(r *http.Request) (string, uint16, error) {
	hostport := r.Host
	if r.Method != http.MethodConnect {
		if !r.URL.IsAbs() || r.URL.Scheme != "http" {
			return r.URL.Hostname(), 0, errors.New("want CONNECT host:port, or an absolute http:// URL")
		}
		hostport = r.URL.Host
		if r.URL.Port() == "" {
			hostport = net.JoinHostPort(r.URL.Hostname(), "80")
		}
	}
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport, 0, fmt.Errorf("want host:port, got %q", hostport)
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil || port == 0 {
		return host, 0, fmt.Errorf("bad port %q", ps)
	}
	return strings.TrimSuffix(strings.ToLower(host), "."), uint16(port), nil
}

// decide returns why a connection to host:port is refused by policy, or "".
func decide(p Policy, host string, port uint16) string {
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return ReasonAddress
	}
	if !p.Allows(host, port) {
		return ReasonNotAllowed
	}
	return ""
}

// dial resolves host with the proxy's resolver and connects to the first address
// the guard permits; the reason says why it could not.
func (p *Proxy) dial(ctx context.Context, host string, port uint16) (net.Conn, string) {
	ctx, cancel := context.WithTimeout(ctx, p.dialTimeout())
	defer cancel()
	resolve := p.Resolve
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	addrs, err := resolve(ctx, host)
	if err != nil || len(addrs) == 0 {
		return nil, ReasonNoSuchHost
	}
	var d net.Dialer
	reason := ReasonNotPublic
	for _, a := range addrs {
		if !p.Guard.Permitted(a) || !p.Guard.PortPermitted(port) {
			continue
		}
		conn, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a.Unmap(), port).String())
		if err == nil {
			return conn, ""
		}
		reason = ReasonConnect
	}
	return nil, reason
}

func (p *Proxy) record(id Identity, e Entry) int64 {
	if p.Ledger == nil {
		return -1
	}
	return p.Ledger.Record(id, e)
}

// update records an allowed connection's final entry.
func (p *Proxy) update(id Identity, slot int64, e Entry) {
	if p.Ledger != nil && slot >= 0 {
		p.Ledger.Update(id, slot, e)
	}
}

// refuse answers a proxy request the code's client shows as its error.
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(status)
	fmt.Fprintf(w, "codeinterp egress: %s\n", msg)
}
