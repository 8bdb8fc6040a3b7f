package egressreg

import "net/netip"

// Every Redis key of the registry, under the configured prefix P:
//
//	P egress:addr:<ip>     string (JSON Identity): the sandbox at that address, with a TTL
//	P egress:ledger:<id>   list (JSON Entry): an execution's ledger, at most MaxEntries
//	P egress:dropped:<id>  counter: entries not kept past MaxEntries

func (r *Registry) addrKey(a netip.Addr) string {
	return r.prefix + "egress:addr:" + a.Unmap().String()
}
func (r *Registry) ledgerKey(id string) string  { return r.prefix + "egress:ledger:" + id }
func (r *Registry) droppedKey(id string) string { return r.prefix + "egress:dropped:" + id }
