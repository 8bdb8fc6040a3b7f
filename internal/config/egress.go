package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/codeinterp/codeinterp/internal/egress"
)

// EgressPolicies are the tenants' egress allow-lists (CODEINTERP_TENANT_EGRESS). A
// tenant not listed has no egress at all, which is the default.
type EgressPolicies map[string]egress.Policy

// For returns tenant's policy, and whether it has one.
func (p EgressPolicies) For(tenant string) (egress.Policy, bool) {
	pol, ok := p[tenant]
	return pol, ok
}

// Egress reads CODEINTERP_TENANT_EGRESS: "tenant:rule rule;tenant:rule", rules
// separated by spaces (a rule's own ports are separated by commas:
// "api.example.com:443,8443"), each as internal/egress.ParseRule reads it.
func (c Config) EgressPolicies() (EgressPolicies, error) {
	out := EgressPolicies{}
	var errs []error
	for _, entry := range strings.Split(c.TenantEgress, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		tenant, list, ok := strings.Cut(entry, ":")
		tenant = strings.TrimSpace(tenant)
		rules := strings.Fields(list)
		if !ok || tenant == "" || len(rules) == 0 {
			errs = append(errs, fmt.Errorf("CODEINTERP_TENANT_EGRESS %q: want tenant:rule rule (rules such as pypi.org *.pythonhosted.org api.example.com:8443)", entry))
			continue
		}
		if _, dup := out[tenant]; dup {
			errs = append(errs, fmt.Errorf("CODEINTERP_TENANT_EGRESS: tenant %q is listed twice", tenant))
			continue
		}
		pol, err := egress.ParsePolicy(rules)
		if err != nil {
			errs = append(errs, fmt.Errorf("CODEINTERP_TENANT_EGRESS: tenant %q: %w", tenant, err))
			continue
		}
		out[tenant] = pol
	}
	return out, errors.Join(errs...)
}
