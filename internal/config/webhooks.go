package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/codeinterp/codeinterp/jobs/webhook"
)

// Webhooks holds the webhook settings: each tenant's signing secret and the addresses
// webhooks may reach although private.
type Webhooks struct {
	Secrets map[string]string
	Guard   webhook.Guard
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
	for _, entry := range strings.Split(c.WebhookAllow, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		p, err := netip.ParsePrefix(entry)
		if err != nil {
			a, aerr := netip.ParseAddr(entry)
			if aerr != nil {
				return w, fmt.Errorf("CODEINTERP_WEBHOOK_ALLOW %q: want a CIDR or an address", entry)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		w.Guard.Allow = append(w.Guard.Allow, p)
	}
	for _, entry := range strings.Split(c.WebhookPorts, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		p, err := strconv.ParseUint(entry, 10, 16)
		if err != nil || p == 0 {
			return w, fmt.Errorf("CODEINTERP_WEBHOOK_PORTS %q: want port numbers", entry)
		}
		w.Guard.Ports = append(w.Guard.Ports, uint16(p))
	}
	return w, nil
}
