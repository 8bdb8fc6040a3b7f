package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/codeinterp/codeinterp/internal/netguard"
)

// Webhooks holds the webhook settings: each tenant's signing secret and the addresses
// webhooks may reach although private.
type Webhooks struct {
	Secrets map[string]string
	Guard   netguard.Guard
}

// Webhooks parses CODEINTERP_WEBHOOK_SECRETS ("tenant:secret,…") and
// CODEINTERP_WEBHOOK_ALLOW (CIDRs or addresses, "10.1.0.0/16,127.0.0.1").
func (c Config) Webhooks() (Webhooks, error) {
	w := Webhooks{Secrets: map[string]string{}}
	for _, entry := range strings.Split(c.WebhookSecrets, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		tenant, secret, ok := strings.Cut(entry, ":")
		if !ok || tenant == "" || len(secret) < 16 {
			return w, fmt.Errorf("CODEINTERP_WEBHOOK_SECRETS: want tenant:secret pairs with secrets of at least 16 characters")
		}
		w.Secrets[tenant] = secret
	}
	var err error
	w.Guard, err = guardOf("CODEINTERP_WEBHOOK_ALLOW", c.WebhookAllow, "CODEINTERP_WEBHOOK_PORTS", c.WebhookPorts)
	return w, err
}

// Fetches returns the egress guard of input files given by URL: their own allow-list,
// CODEINTERP_FETCH_ALLOW, and ports, CODEINTERP_FETCH_PORTS (an internal webhook
// receiver the operator trusts is not thereby readable by every tenant).
func (c Config) Fetches() (netguard.Guard, error) {
	return guardOf("CODEINTERP_FETCH_ALLOW", c.FetchAllow, "CODEINTERP_FETCH_PORTS", c.FetchPorts)
}

// Egress returns the egress proxy's guard: no ports beyond what each tenant's
// allow-list names, and CODEINTERP_EGRESS_NET_ALLOW's exceptions (an internal package
// mirror, which the policy must then allow by name as well).
func (c Config) Egress() (netguard.Guard, error) {
	return guardOf("CODEINTERP_EGRESS_NET_ALLOW", c.EgressAllow, "", "")
}

// guardOf parses an allow-list (CIDRs or addresses, "10.1.0.0/16,127.0.0.1") and a
// list of ports ("443,8443"), named allowVar and portsVar in errors.
func guardOf(allowVar, allow, portsVar, ports string) (netguard.Guard, error) {
	var g netguard.Guard
	for _, entry := range strings.Split(allow, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		p, err := netip.ParsePrefix(entry)
		if err != nil {
			a, aerr := netip.ParseAddr(entry)
			if aerr != nil {
				return g, fmt.Errorf("%s %q: want a CIDR or an address", allowVar, entry)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		g.Allow = append(g.Allow, p)
	}
	for _, entry := range strings.Split(ports, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		p, err := strconv.ParseUint(entry, 10, 16)
		if err != nil || p == 0 {
			return g, fmt.Errorf("%s %q: want port numbers", portsVar, entry)
		}
		g.Ports = append(g.Ports, uint16(p))
	}
	return g, nil
}
