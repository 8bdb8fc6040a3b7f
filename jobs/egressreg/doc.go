// Package egressreg is the Redis meeting point of workers and the egress proxy
// (issue 23): which sandbox address is whose, with what allow-list, right now, and
// each execution's egress ledger. Workers register a sandbox's address when its
// execution starts and forget it when the sandbox goes; the proxy looks addresses up
// and appends ledger entries, which workers read into the execution's result.
//
// It knows nothing of sandboxes' runtimes, HTTP or S3; the policy is kept as the
// rules' text (internal/egress parses it). Every key it uses is in keys.go.
package egressreg
