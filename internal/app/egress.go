package app

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/internal/egress"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/egressreg"
)

// EgressProxy builds the egress proxy of cmd/egress over rdb alone: it holds no
// storage or task-queue credentials, only what it needs to know who a sandbox
// address is and to write ledgers.
func EgressProxy(cfg config.Config, rdb redis.UniversalClient, log *slog.Logger) (*egress.Proxy, error) {
	guard, err := cfg.Egress()
	if err != nil {
		return nil, err
	}
	hosts, err := readHosts(cfg.EgressHostsFile)
	if err != nil {
		return nil, err
	}
	reg := egressreg.New(rdb, egressreg.Config{Prefix: cfg.KeyPrefix})
	return &egress.Proxy{
		Identify:    registryIdentifier{reg: reg, log: log},
		Ledger:      registryLedger{reg: reg, log: log},
		Guard:       guard,
		Resolve:     hosts.resolve,
		IdleTimeout: cfg.EgressIdle,
	}, nil
}

// registryIdentifier is egress.Identifier over the registry workers fill.
type registryIdentifier struct {
	reg *egressreg.Registry
	log *slog.Logger
}

func (r registryIdentifier) Identify(ctx context.Context, remote netip.Addr) (egress.Identity, bool) {
	id, ok, err := r.reg.Lookup(ctx, remote)
	if err != nil {
		r.log.Warn("egress: look up a sandbox address", "addr", remote, "err", err)
		return egress.Identity{}, false
	}
	if !ok {
		return egress.Identity{}, false
	}
	policy, err := egress.ParsePolicy(id.Allow)
	if err != nil { // workers register checked policies: refuse rather than guess
		r.log.Warn("egress: a registered policy does not parse", "tenant", id.Tenant, "err", err)
		return egress.Identity{}, false
	}
	return egress.Identity{Tenant: id.Tenant, Thread: id.Thread, Execution: id.Execution, Policy: policy}, true
}

// registryLedger is egress.Ledger over the registry: entries go to the execution
// the address was registered for.
type registryLedger struct {
	reg *egressreg.Registry
	log *slog.Logger
}

func (r registryLedger) Record(id egress.Identity, e jobs.EgressEntry) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	at, err := r.reg.Append(ctx, id.Execution, e)
	if err != nil {
		r.log.Warn("egress: ledger entry", "execution", id.Execution, "err", err)
	}
	return at
}

func (r registryLedger) Update(id egress.Identity, slot int64, e jobs.EgressEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.reg.Update(ctx, id.Execution, slot, e); err != nil {
		r.log.Warn("egress: ledger entry", "execution", id.Execution, "err", err)
	}
}

// hostsTable is CODEINTERP_EGRESS_HOSTS_FILE: names resolved before DNS.
type hostsTable map[string][]netip.Addr

// readHosts reads a hosts(5) file: an address, then names, per line; # comments.
func readHosts(path string) (hostsTable, error) {
	t := hostsTable{}
	if path == "" {
		return t, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("CODEINTERP_EGRESS_HOSTS_FILE: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		a, err := netip.ParseAddr(fields[0])
		if err != nil || len(fields) < 2 {
			return nil, fmt.Errorf("CODEINTERP_EGRESS_HOSTS_FILE line %d: want an address and names", n)
		}
		for _, name := range fields[1:] {
			name = strings.TrimSuffix(strings.ToLower(name), ".")
			t[name] = append(t[name], a)
		}
	}
	return t, sc.Err()
}

func (t hostsTable) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, ok := t[host]; ok {
		return a, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// RedisOnly connects to Redis alone, for a process that needs nothing else (the
// egress proxy).
func RedisOnly(cfg config.Config, log *slog.Logger) (*redis.Client, error) {
	opts, err := redisOptions(cfg, log)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(opts), nil
}
