// Package service holds codeinterp's use cases, independent of any transport:
// submitting an execution (validation, idempotency, inputs, the record, dispatch),
// reading and awaiting it, canceling, listing, thread operations, uploads. The HTTP
// API (internal/api) is a thin echo adapter over it; an MCP endpoint is another.
//
// Failures a client caused are *[Error]s with a [Code] and the field at fault; any
// other error is the service's own. It talks to Redis through jobs/records and
// jobs/threadq and to storage through the interface it declares; it must not import
// a sandbox runtime or an HTTP framework.
package service

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/codeinterp/codeinterp/internal/netguard"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/quota"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/skills"
	"github.com/codeinterp/codeinterp/jobs/threadq"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/storage"
)

// Storage is what the use cases need of artifact storage; *storage.Store provides it.
type Storage interface {
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) (storage.Object, error)
	Open(ctx context.Context, key string) (io.ReadCloser, storage.Object, error)
	OpenTail(ctx context.Context, key string, n int64) (io.ReadCloser, storage.Object, error)
	Stat(ctx context.Context, key string) (storage.Object, error)
	PresignGet(ctx context.Context, key, filename string) (string, time.Time, error)
	Retention() time.Duration
	DeletePrefix(ctx context.Context, prefix string) (int, error)
}

// Queue is what submitting needs of the task queue; *jobs.Enqueuer provides it.
type Queue interface {
	Enqueue(ctx context.Context, ex *jobs.Execution) error
}

// Limits bound what one request may ask for.
type Limits struct {
	MaxUploadBytes   int64 // one uploaded file
	WorkspaceBytes   int64 // all input files of one execution
	DefaultTimeoutMS int64
	MaxTimeoutMS     int64
}

// Config wires a [Service].
type Config struct {
	Records *records.Store
	Threads *threadq.Queue
	Waiter  *records.Waiter
	Queue   Queue
	Store   Storage
	// Quotas enforces the per-tenant quotas shared across API replicas.
	Quotas *quota.Counters
	// Limits bound requests; the timeouts and workspace are those of the default
	// profile, and Profiles' own apply to a request in another.
	Limits Limits
	// Profiles are the sandbox profiles and who may use them; zero: the default
	// profile alone, from Limits.
	Profiles jobs.Profiles
	// Webhooks: the tenants that may use them (those with a signing secret) and the
	// addresses they may target.
	WebhookTenants map[string]bool
	WebhookGuard   netguard.Guard
	// Egress is what each tenant's executions may reach (nil: nobody has egress).
	Egress EgressPolicies
	// Fetch is how input files given by URL are downloaded.
	Fetch Fetch
	// Bodies bounds the bytes of request bodies and fetched files this process
	// holds at once; the API shares it. Default 256 MiB.
	Bodies *Budget
	Logger *slog.Logger
	NewID  func() string
	Now    func() time.Time

	// Skills is the catalog of skills; SkillStore keeps their archives (a bucket
	// without expiry).
	Skills      *skills.Catalog
	SkillStore  Storage
	SkillLimits SkillLimits
}

// Service runs the use cases.
type Service struct {
	cfg     Config
	fetcher *http.Client // input files given by URL, through the fetches' guard
}

// New returns a Service. It does no I/O.
func New(cfg Config) *Service {
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Profiles.IsZero() {
		cfg.Profiles = jobs.NewProfiles(jobs.Profile{
			DefaultTimeoutMS: cfg.Limits.DefaultTimeoutMS, MaxTimeoutMS: cfg.Limits.MaxTimeoutMS,
			Limits: sandbox.Limits{Workspace: cfg.Limits.WorkspaceBytes},
		}, nil, nil)
	}
	if cfg.NewID == nil {
		cfg.NewID = jobs.NewID
	}
	cfg.Fetch.MaxFiles = cmp.Or(cfg.Fetch.MaxFiles, 16)
	cfg.Fetch.Timeout = cmp.Or(cfg.Fetch.Timeout, time.Minute)
	if cfg.Bodies == nil {
		cfg.Bodies = NewBudget(256 << 20)
	}
	return &Service{cfg: cfg, fetcher: cfg.Fetch.Guard.Client(cfg.Fetch.Timeout)}
}

// Bodies is the budget of bytes of request bodies and fetched files this process
// holds at once.
func (s *Service) Bodies() *Budget { return s.cfg.Bodies }

// Render renders ex for a client, with freshly presigned download URLs.
func (s *Service) Render(ctx context.Context, ex *jobs.Execution) (*jobs.View, error) {
	return jobs.Render(ctx, ex, s.cfg.Store)
}
