package service

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/codeinterp/codeinterp/internal/egress"
)

type policies map[string][]string

func (p policies) For(tenant string) (egress.Policy, bool) {
	rules, ok := p[tenant]
	if !ok {
		return egress.Policy{}, false
	}
	pol, err := egress.ParsePolicy(rules)
	if err != nil {
		panic(err)
	}
	return pol, true
}

func TestNetworkRequest(t *testing.T) {
	s := New(Config{Egress: policies{"acme": {"pypi.org", "*.pythonhosted.org", "api.example.com:8443"}}})
	list := func(rules ...string) *NetworkRequest { return &NetworkRequest{Allow: &rules} }

	if n, err := s.network("acme", nil, ""); n != nil || err != nil {
		t.Fatalf("no network asked: %+v %v", n, err)
	}
	n, err := s.network("acme", &NetworkRequest{}, "")
	if err != nil || !slices.Equal(n.Allow, []string{"pypi.org", "*.pythonhosted.org", "api.example.com:8443"}) {
		t.Fatalf("the tenant's whole policy: %+v %v", n, err)
	}
	n, err = s.network("acme", list("files.pythonhosted.org", "PyPI.org:443"), "")
	if err != nil || !slices.Equal(n.Allow, []string{"files.pythonhosted.org", "pypi.org:443"}) {
		t.Fatalf("narrowed: %+v %v", n, err)
	}
	for _, c := range []struct {
		tenant string
		req    *NetworkRequest
		thread string
		field  string
	}{
		{"globex", &NetworkRequest{}, "", "network"},                              // no policy: no egress
		{"acme", &NetworkRequest{}, "t1", "network"},                              // threads: not yet
		{"acme", list("pypi.org", "evil.example"), "", "network.allow[1]"},        // outside the tenant's
		{"acme", list("api.example.com"), "", "network.allow[0]"},                 // its default ports are not allowed
		{"acme", list("10.0.0.1"), "", "network.allow[0]"},                        // an address
		{"acme", list(), "", "network.allow"},                                     // empty: say no network by omitting it
		{"acme", list(make([]string, egress.MaxRules+1)...), "", "network.allow"}, // too many
	} {
		_, err := s.network(c.tenant, c.req, c.thread)
		var se *Error
		if !errors.As(err, &se) || se.Code != CodeInvalid || se.Field != c.field || strings.TrimSpace(se.Message) == "" {
			t.Errorf("%s %+v thread %q: %v; want invalid %s", c.tenant, c.req, c.thread, err, c.field)
		}
	}
}
