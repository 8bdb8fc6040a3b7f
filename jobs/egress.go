package jobs

// EgressEntry is one line of an execution's egress ledger (issue 23): one
// connection or plain HTTP request the code tried through the egress proxy, allowed
// or not, as the API shows it. The egress proxy writes it, workers read it into the
// execution's result.
type EgressEntry struct {
	Host     string `json:"host"`
	Port     uint16 `json:"port"`
	Method   string `json:"method"` // CONNECT, or a plain HTTP request's method
	Allowed  bool   `json:"allowed"`
	Reason   string `json:"reason,omitempty"` // why it was refused or cut
	BytesOut int64  `json:"bytes_out"`        // sent upstream
	BytesIn  int64  `json:"bytes_in"`         // received from upstream
	Secret   string `json:"secret,omitempty"` // the name of a secret injected, never its value
}

// Network is the egress an execution asked for and may use: the allow-list rules in
// force for it (its tenant's whole policy, or the narrower list the request gave),
// as their text.
type Network struct {
	Allow []string `json:"allow"`
}
