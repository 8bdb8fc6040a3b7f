package egressreg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
)

// Identity is who is behind a sandbox address: the tenant, the thread (empty for a
// one-off), the execution running now (ledger entries go to it), and the allow-list
// rules in force for it.
type Identity struct {
	Tenant    string   `json:"tenant"`
	Thread    string   `json:"thread,omitempty"`
	Execution string   `json:"execution"`
	Allow     []string `json:"allow"`
}

// MaxEntries bounds an execution's ledger: past it entries are counted, not kept.
const MaxEntries = 200

// Registry is the Redis store; safe for concurrent use.
type Registry struct {
	rdb    redis.UniversalClient
	prefix string
	ttl    time.Duration
}

// Config configures a Registry.
type Config struct {
	Prefix string
	// LedgerTTL is how long a ledger is kept after its last entry: until its
	// execution's worker has read it; default 1 h.
	LedgerTTL time.Duration
}

// New returns a registry on rdb. It does no I/O.
func New(rdb redis.UniversalClient, cfg Config) *Registry {
	ttl := cfg.LedgerTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	return &Registry{rdb: rdb, prefix: cfg.Prefix, ttl: ttl}
}

// Register says who is at addr, for ttl (the longest the execution may run, and a
// margin: an address the worker never forgot stops granting anything by itself).
func (r *Registry) Register(ctx context.Context, addr netip.Addr, id Identity, ttl time.Duration) error {
	if !addr.IsValid() || id.Tenant == "" || id.Execution == "" {
		return fmt.Errorf("egress register: want an address, a tenant and an execution")
	}
	b, err := json.Marshal(id)
	if err != nil {
		return err
	}
	if err := r.rdb.Set(ctx, r.addrKey(addr), b, ttl).Err(); err != nil {
		return fmt.Errorf("egress register %s: %w", addr, err)
	}
	return nil
}

// Forget removes addr: its sandbox went, or stopped having egress.
func (r *Registry) Forget(ctx context.Context, addr netip.Addr) error {
	if err := r.rdb.Del(ctx, r.addrKey(addr)).Err(); err != nil {
		return fmt.Errorf("egress forget %s: %w", addr, err)
	}
	return nil
}

// Lookup returns who is at addr; false if nobody (registered and not expired) is.
func (r *Registry) Lookup(ctx context.Context, addr netip.Addr) (Identity, bool, error) {
	b, err := r.rdb.Get(ctx, r.addrKey(addr)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Identity{}, false, nil
	}
	if err != nil {
		return Identity{}, false, fmt.Errorf("egress lookup %s: %w", addr, err)
	}
	var id Identity
	if err := json.Unmarshal(b, &id); err != nil {
		return Identity{}, false, fmt.Errorf("egress lookup %s: %w", addr, err)
	}
	return id, true, nil
}

// appendScript keeps at most ARGV[1] entries and counts the rest, atomically, so
// concurrent connections of one execution never keep more. It returns the entry's
// index, or -1 when it was not kept.
var appendScript = redis.NewScript(`
local at = -1
if redis.call('LLEN', KEYS[1]) < tonumber(ARGV[1]) then
  at = redis.call('RPUSH', KEYS[1], ARGV[2]) - 1
else
  redis.call('INCR', KEYS[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return at`)

// Append adds an entry to an execution's ledger and returns its index (-1: past
// MaxEntries, counted only).
func (r *Registry) Append(ctx context.Context, execution string, e jobs.EgressEntry) (int64, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return -1, err
	}
	at, err := appendScript.Run(ctx, r.rdb, []string{r.ledgerKey(execution), r.droppedKey(execution)},
		MaxEntries, b, r.ttl.Milliseconds()).Int64()
	if err != nil {
		return -1, fmt.Errorf("egress ledger of %s: %w", execution, err)
	}
	return at, nil
}

// updateScript replaces an entry if the ledger still exists (it may have expired).
var updateScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 and tonumber(ARGV[1]) < redis.call('LLEN', KEYS[1]) then
  redis.call('LSET', KEYS[1], ARGV[1], ARGV[2])
end
return 1`)

// Update replaces the entry at index (from Append): a connection's final counts.
func (r *Registry) Update(ctx context.Context, execution string, index int64, e jobs.EgressEntry) error {
	if index < 0 {
		return nil
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := updateScript.Run(ctx, r.rdb, []string{r.ledgerKey(execution)}, index, b).Err(); err != nil {
		return fmt.Errorf("egress ledger of %s: %w", execution, err)
	}
	return nil
}

// Ledger returns an execution's entries in order, and how many were not kept.
func (r *Registry) Ledger(ctx context.Context, execution string) ([]jobs.EgressEntry, int64, error) {
	var list *redis.StringSliceCmd
	var dropped *redis.StringCmd
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		list = p.LRange(ctx, r.ledgerKey(execution), 0, -1)
		dropped = p.Get(ctx, r.droppedKey(execution))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, fmt.Errorf("read the egress ledger of %s: %w", execution, err)
	}
	var out []jobs.EgressEntry
	for _, s := range list.Val() {
		var e jobs.EgressEntry
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			return nil, 0, fmt.Errorf("read the egress ledger of %s: %w", execution, err)
		}
		out = append(out, e)
	}
	n, _ := dropped.Int64()
	return out, n, nil
}
