package worker

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/threadq"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/storage"
)

// Artifacts is what runs need of storage; *storage.Store provides it.
type Artifacts interface {
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) (storage.Object, error)
	Open(ctx context.Context, key string) (io.ReadCloser, storage.Object, error)
	DeletePrefix(ctx context.Context, prefix string) (int, error)
}

// Config configures a [Runner].
type Config struct {
	Records   *records.Store
	Threads   *threadq.Queue
	Artifacts Artifacts
	Runtime   sandbox.Runtime
	// Limits are the default profile's: they make it when Profiles is zero, and
	// set the budgets' defaults.
	Limits sandbox.Limits
	// Profiles are the sandbox profiles executions and threads name; zero: the
	// default profile alone, of Limits and the runtime's image.
	Profiles jobs.Profiles
	// Manifests, if set, reads each profile image's manifest at start, published
	// for GET /v1/runtimes.
	Manifests ManifestReader
	// WarmPool is how many blank sandboxes (kernel up, libraries imported) of the
	// default profile the worker keeps ready for new threads; 0 disables the pool.
	// Other profiles' pools are sized by their Profile.WarmPool; the default
	// profile's Profile.WarmPool is not read (this is).
	WarmPool int
	// OneOffPool is how many recyclable sandboxes (a zygote kernel, libraries
	// imported) of the default profile the worker keeps ready for one-offs; 0
	// disables that pool. Other profiles': Profile.OneOffPool, as for WarmPool.
	OneOffPool int
	// Recycle lets a one-off's sandbox, once wiped (sandbox.Sandbox.Wipe), serve
	// further one-offs of the same tenant in the same profile, never another
	// tenant's or profile's; false: every one-off gets a sandbox no code ran in,
	// removed afterwards.
	Recycle bool
	// RecyclePerTenant and RecycleMax bound the wiped sandboxes kept idle, per
	// tenant and in all, every profile's counted alike (default 4 and 8);
	// RecycleIdle is how long one stays idle before it is removed (default 1 min).
	RecyclePerTenant, RecycleMax int
	RecycleIdle                  time.Duration
	// MaxSandboxes caps the sandboxes on this worker's host: past it, the least
	// recently used idle sandbox this worker holds is snapshotted and removed to make
	// room. MaxPerTenant does the same per tenant, across the fleet. 0: no cap.
	MaxSandboxes int
	MaxPerTenant int
	Worker       string // this worker's id: unique per process, recorded on executions and sandboxes
	Concurrency  int    // thread executions run at once; default 4
	// Stored, if set, bounds the bytes stored for each tenant per day (output files,
	// logs, copies of thread files); nil: no bound.
	Stored StoredQuota
	// Egress registers sandboxes with egress for the egress proxy and reads their
	// executions' ledgers; nil: executions that ask for egress fail.
	Egress EgressRegistry
	// OneOffShare is how many one-offs one tenant runs at once on this worker (of
	// the task server's Concurrency slots); default half of Concurrency, at least 1.
	OneOffShare int
	MaxLog      int64 // bytes of a full stdout/stderr kept as an artifact; default 64 MiB
	Budgets     Budgets
	// Beat is the heartbeat interval; default a third of the queue's heartbeat TTL.
	Beat time.Duration
	// Linger is how long a blocking wait (for wake-ups and offers) lasts before it is
	// renewed; default 30 s.
	Linger time.Duration
	// ActiveEvery is how often a thread's activity is refreshed while one of its
	// items runs, so the janitor never takes a long run for idleness; default 10 s.
	// Keep it well under the janitor's idle pause time.
	ActiveEvery time.Duration
	Logger      *slog.Logger
	Now         func() time.Time

	// Skills reads skill archives; SkillCache is the host's cache of them.
	Skills     SkillSource
	SkillCache SkillCacheConfig
}

// Runner runs executions on a worker: one-off ones as asynq tasks ([jobs.TypeRun]),
// and the threads this worker owns, each in its warm sandbox. A worker with a free
// slot takes threads offered to all, and the API wakes a thread's owner directly;
// both waits block in Redis, so neither polls.
type Runner struct {
	cfg     Config
	queue   *threadq.Queue
	budgets Budgets // as configured: zero fields follow each profile's limits

	mu    sync.Mutex
	owned map[jobs.ThreadKey]*thread // threads this worker serves
	// reclaim serialises this worker's claims of a thread it already serves (a
	// heartbeat's and an item's end's, lease.go), each with the renew that records
	// it: between a claim and its renew, the other would find the thread owned by
	// this worker under a lease it does not know yet, and give the thread up.
	reclaim sync.Mutex
	// warmPools hold blank sandboxes for new threads, oneOffPools recyclable ones no
	// code ran in yet, by profile name (profiles with a size > 0 alone); recycled
	// holds wiped ones of a tenant, idle.
	warmPools, oneOffPools map[string]*pool
	recycled               *recycled

	running    map[string]*runningRun  // executions running here, by id, for cancel
	slots      *slots                  // bounds concurrent thread items, fairly across tenants
	oneOffs    *oneOffShares           // bounds each tenant's one-offs running here
	freed      chan struct{}           // signaled when a slot frees
	runCtx     context.Context         // parent of thread runners; canceled at shutdown
	stopRun    context.CancelCauseFunc //
	bg         sync.WaitGroup          // background loops
	runners    sync.WaitGroup          // thread runners
	stopBG     context.CancelFunc      //
	stopped    chan struct{}           // closed by Shutdown
	skillCache *skillCache             // the host's skill archives

	// beatFailed and sweepFrom hold the sweep back after Redis was out of reach (see
	// sweep); only Start and the heartbeat loop use them.
	beatFailed bool
	sweepFrom  time.Time
}

// NewRunner returns a Runner. It does no I/O and starts nothing; see Start.
func NewRunner(cfg Config) *Runner {
	cfg.MaxLog = cmp.Or(cfg.MaxLog, 64<<20)
	cfg.Concurrency = cmp.Or(cfg.Concurrency, 4)
	cfg.OneOffShare = cmp.Or(cfg.OneOffShare, max(1, cfg.Concurrency/2))
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	cfg.Linger = cmp.Or(cfg.Linger, 30*time.Second)
	cfg.Beat = cmp.Or(cfg.Beat, cfg.Threads.HeartbeatTTL()/3)
	cfg.ActiveEvery = cmp.Or(cfg.ActiveEvery, 10*time.Second)
	cfg.RecyclePerTenant = cmp.Or(cfg.RecyclePerTenant, 4)
	cfg.RecycleMax = cmp.Or(cfg.RecycleMax, 8)
	cfg.RecycleIdle = cmp.Or(cfg.RecycleIdle, time.Minute)
	if cfg.Profiles.IsZero() {
		cfg.Profiles = jobs.NewProfiles(jobs.Profile{Limits: cfg.Limits}, nil, nil)
	}
	budgets := cfg.Budgets
	cfg.Budgets = cfg.Budgets.withDefaults(cfg.Limits.WithDefaults())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Runner{
		cfg: cfg, queue: cfg.Threads, budgets: budgets,
		owned: map[jobs.ThreadKey]*thread{}, running: map[string]*runningRun{},
		slots: newSlots(cfg.Concurrency), freed: make(chan struct{}, 1), stopped: make(chan struct{}),
		skillCache: newSkillCache(cfg.SkillCache),
		recycled:   &recycled{perTenant: cfg.RecyclePerTenant, max: cfg.RecycleMax},
		oneOffs:    newOneOffShares(cfg.OneOffShare),
	}
	r.warmPools, r.oneOffPools = r.newPools()
	return r
}

// withDefaults fills the zero fields of b, some of which follow the sandbox limits l.
func (b Budgets) withDefaults(l sandbox.Limits) Budgets {
	return Budgets{
		MaxResults:     cmp.Or(b.MaxResults, 100),
		MaxResultBytes: cmp.Or(b.MaxResultBytes, 4<<20),
		StreamBytes:    cmp.Or(b.StreamBytes, 2*int64(l.Output)),
		CollectBytes:   cmp.Or(b.CollectBytes, l.Workspace),
		MaxRecordBytes: cmp.Or(b.MaxRecordBytes, 16<<20),
	}
}
