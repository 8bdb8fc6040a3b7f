package config

import (
	"strings"
	"testing"
)

func TestEgressPolicies(t *testing.T) {
	c, err := Load(map[string]string{"CODEINTERP_DEV_MODE": "true",
		"CODEINTERP_TENANT_EGRESS": "acme: pypi.org *.pythonhosted.org api.example.com:8443,443 ; globex:data.example"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.EgressPolicies()
	acme, ok := p.For("acme")
	if !ok || !acme.Allows("files.pythonhosted.org", 443) || !acme.Allows("api.example.com", 8443) || acme.Allows("data.example", 443) {
		t.Fatalf("acme: %v", acme)
	}
	if _, ok := p.For("initech"); ok {
		t.Fatal("a tenant not listed has egress")
	}
	for _, bad := range []string{"acme", "acme:", "acme:10.0.0.1", "acme:a.example;acme:b.example", ":a.example"} {
		if _, err := Load(map[string]string{"CODEINTERP_DEV_MODE": "true", "CODEINTERP_TENANT_EGRESS": bad}); err == nil || !strings.Contains(err.Error(), "CODEINTERP_TENANT_EGRESS") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
