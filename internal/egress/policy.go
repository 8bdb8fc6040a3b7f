// Package egress owns sandboxes' way out to the internet: the allow-list policy a
// tenant (and, narrower, an execution or a thread) has, and the proxy that enforces
// it on every connection a sandbox makes, keeping a ledger of what was tried. Where a
// connection may go after DNS is netguard's rule, shared with webhooks and URL inputs.
//
// It knows nothing of Redis or sandboxes' runtimes (of jobs only the ledger entry's
// type): who a connection comes from is asked of an interface its caller provides.
package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// DefaultPorts are the ports a rule without one allows: HTTP and HTTPS.
var DefaultPorts = []uint16{80, 443}

// Rule allows one host, or every subdomain of one ("*.example.com": a.example.com
// and a.b.example.com, not example.com itself), on some ports.
type Rule struct {
	Host  string   // lower case, no trailing dot; "*." prefix for a wildcard
	Ports []uint16 // sorted; DefaultPorts when the rule named none
}

// Policy is an allow-list. The zero Policy allows nothing: no network at all.
type Policy struct {
	Allow []Rule
}

// MaxRules bounds a policy's rules: a policy is checked on every connection.
const MaxRules = 256

// ErrBadRule is wrapped by every error of ParseRule.
var ErrBadRule = errors.New("bad egress rule")

// ParseRule reads "host", "host:port" or "host:port,port", where host is a DNS name
// or "*." and one. IP addresses are refused: egress is decided on names, and an
// address would skip the name's rule.
func ParseRule(s string) (Rule, error) {
	host, ports, hasPorts := strings.Cut(strings.TrimSpace(s), ":")
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	name, wildcard := strings.CutPrefix(host, "*.")
	if err := checkName(name); err != nil {
		return Rule{}, fmt.Errorf("%w %q: %v", ErrBadRule, s, err)
	}
	if strings.Contains(name, "*") || (!wildcard && strings.HasPrefix(host, "*")) {
		return Rule{}, fmt.Errorf("%w %q: a wildcard is only a leading \"*.\"", ErrBadRule, s)
	}
	r := Rule{Host: host, Ports: DefaultPorts}
	if hasPorts {
		r.Ports = nil
		for _, p := range strings.Split(ports, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(p), 10, 16)
			if err != nil || n == 0 {
				return Rule{}, fmt.Errorf("%w %q: port %q: want 1 to 65535", ErrBadRule, s, p)
			}
			r.Ports = append(r.Ports, uint16(n))
		}
		slices.Sort(r.Ports)
		r.Ports = slices.Compact(r.Ports)
	}
	return r, nil
}

// ParsePolicy reads rules (ParseRule each); an empty list is no network.
func ParsePolicy(rules []string) (Policy, error) {
	if len(rules) > MaxRules {
		return Policy{}, fmt.Errorf("%w: %d rules, at most %d", ErrBadRule, len(rules), MaxRules)
	}
	var p Policy
	for _, s := range rules {
		r, err := ParseRule(s)
		if err != nil {
			return Policy{}, err
		}
		p.Allow = append(p.Allow, r)
	}
	return p, nil
}

// checkName accepts a DNS name of letters, digits and hyphens (IDNs in their
// xn-- form), with at least two labels, that is not an IP address.
func checkName(name string) error {
	if _, err := netip.ParseAddr(name); err == nil {
		return errors.New("an IP address: name a host")
	}
	if len(name) == 0 || len(name) > 253 {
		return errors.New("want a host name of 1 to 253 characters")
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 {
		return errors.New("want a fully qualified name such as example.com")
	}
	for _, l := range labels {
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("label %q: want 1 to 63 letters, digits or inner hyphens", l)
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("label %q: want letters, digits or hyphens (an IDN in its xn-- form)", l)
			}
		}
	}
	if _, err := strconv.Atoi(labels[len(labels)-1]); err == nil {
		return errors.New("a numeric top-level label: an address, not a name")
	}
	return nil
}

// String gives the rule back in ParseRule's form.
func (r Rule) String() string {
	if slices.Equal(r.Ports, DefaultPorts) {
		return r.Host
	}
	ps := make([]string, len(r.Ports))
	for i, p := range r.Ports {
		ps[i] = strconv.Itoa(int(p))
	}
	return r.Host + ":" + strings.Join(ps, ",")
}

// matches reports whether the rule's host pattern covers host (normalised).
func (r Rule) matches(host string) bool {
	if suffix, ok := strings.CutPrefix(r.Host, "*"); ok { // ".example.com"
		return strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	}
	return host == r.Host
}

// Allows reports whether the policy lets a connection go to host on port. host is
// what the code asked for; it is normalised here (case, trailing dot).
func (p Policy) Allows(host string, port uint16) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, r := range p.Allow {
		if r.matches(host) && slices.Contains(r.Ports, port) {
			return true
		}
	}
	return false
}

// Empty reports whether the policy allows nothing.
func (p Policy) Empty() bool { return len(p.Allow) == 0 }

// Covers checks that every rule of narrow is allowed by p, so that an execution or a
// thread can only narrow its tenant's policy; the error names the first rule that
// is not.
func (p Policy) Covers(narrow Policy) error {
	for _, n := range narrow.Allow {
		if !p.coversRule(n) {
			return fmt.Errorf("%q is not within what the tenant may reach (%s)", n.String(), p.String())
		}
	}
	return nil
}

// coversRule: each of n's ports by one rule of p whose pattern covers n's whole
// pattern (a wildcard only by a wildcard of the same or a shorter suffix).
func (p Policy) coversRule(n Rule) bool {
	for _, port := range n.Ports {
		ok := false
		for _, r := range p.Allow {
			if !slices.Contains(r.Ports, port) {
				continue
			}
			if sub, wild := strings.CutPrefix(n.Host, "*"); wild {
				ok = r.Host == n.Host || (strings.HasPrefix(r.Host, "*") && strings.HasSuffix(sub, r.Host[1:]))
			} else {
				ok = r.matches(n.Host)
			}
			if ok {
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// String lists the rules, or says there is no network.
func (p Policy) String() string {
	if p.Empty() {
		return "no network"
	}
	s := make([]string, len(p.Allow))
	for i, r := range p.Allow {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}
