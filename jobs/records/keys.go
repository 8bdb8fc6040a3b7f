package records

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/codeinterp/codeinterp/jobs"
)

// Every Redis key of the store, under the configured prefix P:
//
//	P ex:<id>                       hash: status, json — one record
//	P idem:<tenant>:<sha256 of key> hash: id, hash — an Idempotency-Key
//	P ten:<tenant>:ex               zset (score 0, by id): the tenant's records
//	P t:<tenant>/<thread>:ex        zset (score 0, by id): the thread's records
//	P t:<tenant>/<thread>:meta      hash: the thread's state (sandbox, files, activity)
//	P t:<tenant>/<thread>:profile   string: the profile the thread was created with
//	P ten:<tenant>:active           zset: the tenant's queued or running executions and counted operations, by creation (ms)
//	P ten:<tenant>:threads          zset: the tenant's threads by last activity
//	P active                        zset: every thread by last activity (the janitor's)
//	P live:<tenant>                 zset: the tenant's threads with a sandbox, by last use
//	P ev:<id>                       stream: an execution's events
//	P done                          channel: ids of records that ended
//	P cancel                        channel: ids of running executions to interrupt
//	P lock:<name>                   a janitor's once-per-period lock
//	P usage:<tenant>                hash: the tenant's usage counters
//	P usage:tenants                 set: tenants with usage
//	P manifest:<image>              string (JSON): what a worker read of a profile image's manifest
//	P copies                        zset: storage prefixes of copies made for readers, by when (ms; copies.go)
//
// The per-thread keys share "P t:<thread key>:" with jobs/threadq's, which owns the
// q, own and inflight ones.

func (s *Store) recordKey(id string) string           { return s.prefix + "ex:" + id }
func (s *Store) tenantIndex(tenant string) string     { return s.prefix + "ten:" + tenant + ":ex" }
func (s *Store) activeIndex(tenant string) string     { return s.prefix + "ten:" + tenant + ":active" }
func (s *Store) threadIndex(tk jobs.ThreadKey) string { return s.prefix + "t:" + string(tk) + ":ex" }
func (s *Store) threadMeta(tk jobs.ThreadKey) string  { return s.prefix + "t:" + string(tk) + ":meta" }
func (s *Store) threadProfile(tk jobs.ThreadKey) string {
	return s.prefix + "t:" + string(tk) + ":profile"
}
func (s *Store) manifestKey(image string) string { return s.prefix + "manifest:" + image }
func (s *Store) tenantThreadsKey(tenant string) string {
	return s.prefix + "ten:" + tenant + ":threads"
}
func (s *Store) activeKey() string             { return s.prefix + "active" }
func (s *Store) liveKey(tenant string) string  { return s.prefix + "live:" + tenant }
func (s *Store) eventsKey(id string) string    { return s.prefix + "ev:" + id }
func (s *Store) doneChannel() string           { return s.prefix + "done" }
func (s *Store) cancelChannel() string         { return s.prefix + "cancel" }
func (s *Store) usageKey(tenant string) string { return s.prefix + "usage:" + tenant }
func (s *Store) usageTenantsKey() string       { return s.prefix + "usage:tenants" }
func (s *Store) lockKey(name string) string    { return s.prefix + "lock:" + name }
func (s *Store) copiesKey() string             { return s.prefix + "copies" }
func (s *Store) noIdemKey() string             { return s.prefix + "idem:none" }
func (s *Store) idemKey(tenant, key string) string {
	sum := sha256.Sum256([]byte(key))
	return s.prefix + "idem:" + tenant + ":" + hex.EncodeToString(sum[:])
}

// Patterns the expiry sweep scans: listing indexes by id, and sets by score.
func (s *Store) indexPatterns() []string { return []string{s.prefix + "ten:*:ex", s.prefix + "t:*:ex"} }

// activePattern matches every tenant's active executions, for the janitor's sweep.
func (s *Store) activePattern() string { return s.prefix + "ten:*:active" }
func (s *Store) scoredPatterns() []string {
	return []string{s.prefix + "live:*", s.prefix + "ten:*:threads"}
}

// activeTenant returns the tenant whose active index key is.
func (s *Store) activeTenant(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, s.prefix+"ten:")
	if !ok {
		return "", false
	}
	tenant, ok := strings.CutSuffix(rest, ":active")
	return tenant, ok && tenant != ""
}
