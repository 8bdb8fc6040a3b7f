package service

import (
	"fmt"

	"github.com/codeinterp/codeinterp/internal/egress"
	"github.com/codeinterp/codeinterp/jobs"
)

// NetworkRequest is an execution's ask for egress: {} for everything its tenant may
// reach, or {"allow": [...]} for less. Without it an execution has no network.
type NetworkRequest struct {
	Allow *[]string `json:"allow"`
}

// EgressPolicies says what each tenant may reach; a tenant without a policy has no
// egress. *config.EgressPolicies provides it.
type EgressPolicies interface {
	For(tenant string) (egress.Policy, bool)
}

// network resolves a request's network against its tenant's policy: the rules in
// force for the execution, or nil for no network.
func (s *Service) network(tenant string, req *NetworkRequest, thread string) (*jobs.Network, error) {
	if req == nil {
		return nil, nil
	}
	if thread != "" {
		return nil, Invalid("network", "egress is for one-off executions for now (issue 23: a thread keeping its policy comes next); omit thread_id")
	}
	var tenantPolicy egress.Policy
	ok := false
	if s.cfg.Egress != nil {
		tenantPolicy, ok = s.cfg.Egress.For(tenant)
	}
	if !ok {
		return nil, Invalid("network", "egress is not enabled for this tenant: the operator lists the hosts a tenant may reach (CODEINTERP_TENANT_EGRESS)")
	}
	if req.Allow == nil {
		return &jobs.Network{Allow: rules(tenantPolicy)}, nil
	}
	if len(*req.Allow) > egress.MaxRules {
		return nil, Invalid("network.allow", "has %d rules; at most %d", len(*req.Allow), egress.MaxRules)
	}
	var narrow egress.Policy
	for i, text := range *req.Allow {
		r, err := egress.ParseRule(text)
		if err != nil {
			return nil, Invalid(fmt.Sprintf("network.allow[%d]", i), "%v", err)
		}
		if err := tenantPolicy.Covers(egress.Policy{Allow: []egress.Rule{r}}); err != nil {
			return nil, Invalid(fmt.Sprintf("network.allow[%d]", i), "%v", err)
		}
		narrow.Allow = append(narrow.Allow, r)
	}
	if narrow.Empty() {
		return nil, Invalid("network.allow", "is empty: omit network for no network at all")
	}
	return &jobs.Network{Allow: rules(narrow)}, nil
}

func rules(p egress.Policy) []string {
	out := make([]string, len(p.Allow))
	for i, r := range p.Allow {
		out[i] = r.String()
	}
	return out
}
