package egress

import (
	"errors"
	"strings"
	"testing"
)

func mustPolicy(t *testing.T, rules ...string) Policy {
	t.Helper()
	p, err := ParsePolicy(rules)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseRule(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM.":          "example.com",
		"api.example.com:443":   "api.example.com:443",
		"*.example.com":         "*.example.com",
		"x.example.com:8443,80": "x.example.com:80,8443",
		"a.example.com:443,80":  "a.example.com", // the default ports, in order
		"xn--bcher-kva.example": "xn--bcher-kva.example",
	} {
		r, err := ParseRule(in)
		if err != nil || r.String() != want {
			t.Errorf("ParseRule(%q) = %q, %v; want %q", in, r.String(), err, want)
		}
	}
	for _, in := range []string{
		"", "localhost", "127.0.0.1", "10.0.0.1:80", "[::1]", "::1", "*", "*.com.*", "a.*.example.com", "*example.com",
		"example.com:0", "example.com:65536", "example.com:http", "exa mple.com", "-a.example.com", "a_b.example.com",
		"bücher.example", "1.2.3.4.5", "example.123", strings.Repeat("a", 64) + ".com",
	} {
		if r, err := ParseRule(in); !errors.Is(err, ErrBadRule) {
			t.Errorf("ParseRule(%q) = %+v, %v; want ErrBadRule", in, r, err)
		}
	}
	if _, err := ParsePolicy(make([]string, MaxRules+1)); !errors.Is(err, ErrBadRule) {
		t.Errorf("a policy of %d rules: %v", MaxRules+1, err)
	}
}

func TestPolicyAllows(t *testing.T) {
	p := mustPolicy(t, "pypi.org", "*.pythonhosted.org", "api.example.com:8443")
	for _, c := range []struct {
		host string
		port uint16
		want bool
	}{
		{"pypi.org", 443, true}, {"PyPI.org.", 80, true}, {"pypi.org", 8080, false},
		{"files.pythonhosted.org", 443, true}, {"a.b.pythonhosted.org", 443, true},
		{"pythonhosted.org", 443, false}, {"evilpythonhosted.org", 443, false},
		{"api.example.com", 8443, true}, {"api.example.com", 443, false},
		{"www.pypi.org", 443, false}, {"pypi.org.evil.com", 443, false},
	} {
		if got := p.Allows(c.host, c.port); got != c.want {
			t.Errorf("Allows(%s, %d) = %v, want %v", c.host, c.port, got, c.want)
		}
	}
	if (Policy{}).Allows("pypi.org", 443) || !(Policy{}).Empty() || (Policy{}).String() != "no network" {
		t.Error("the zero policy allows something")
	}
}

func TestPolicyCovers(t *testing.T) {
	tenant := mustPolicy(t, "pypi.org", "*.example.com", "api.other.com:8443")
	for _, narrow := range [][]string{
		{}, {"pypi.org"}, {"pypi.org:443"}, {"a.example.com"}, {"*.example.com"}, {"*.a.example.com:80"},
		{"api.other.com:8443"},
	} {
		if err := tenant.Covers(mustPolicy(t, narrow...)); err != nil {
			t.Errorf("%v: %v", narrow, err)
		}
	}
	for _, narrow := range [][]string{
		{"example.com"}, {"*.other.com"}, {"pypi.org:8443"}, {"api.other.com"}, {"pypi.org", "files.pythonhosted.org"},
		{"*.xexample.com"},
	} {
		err := tenant.Covers(mustPolicy(t, narrow...))
		if err == nil || !strings.Contains(err.Error(), narrow[len(narrow)-1]) {
			t.Errorf("%v: %v; want refused, naming the rule", narrow, err)
		}
	}
	if err := (Policy{}).Covers(mustPolicy(t, "pypi.org")); err == nil || !strings.Contains(err.Error(), "no network") {
		t.Errorf("narrowing no network: %v", err)
	}
}
