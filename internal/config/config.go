// Package config reads codeinterp's configuration from the environment: the only
// place that does. It validates everything at once and reports every problem, so an
// operator fixes a deployment in one pass. README.md has the table of variables.
//
// It only reads and validates: clients are opened by internal/app.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// Config is the configuration of every codeinterp binary; each uses what it needs.
type Config struct {
	RedisURL  string `env:"REDIS_URL" envDefault:"redis://localhost:6379/0"`
	KeyPrefix string `env:"KEY_PREFIX" envDefault:"ci:"`

	S3Endpoint  string        `env:"S3_ENDPOINT" envDefault:"localhost:9000"`
	S3Secure    bool          `env:"S3_SECURE" envDefault:"false"`
	S3AccessKey string        `env:"S3_ACCESS_KEY" envDefault:"codeinterp"`
	S3SecretKey string        `env:"S3_SECRET_KEY" envDefault:"codeinterp-secret"`
	S3Region    string        `env:"S3_REGION" envDefault:"us-east-1"`
	S3Bucket    string        `env:"S3_BUCKET" envDefault:"codeinterp"`
	S3PublicURL string        `env:"S3_PUBLIC_URL"`
	URLTTL      time.Duration `env:"URL_TTL" envDefault:"1h"`
	Retention   time.Duration `env:"RETENTION" envDefault:"168h"`

	// MinIO's root credentials: read by the setup step only (cmd/setup), which makes
	// the bucket-scoped user the services run as. Never give them to the services.
	S3RootUser     string `env:"S3_ROOT_USER"`
	S3RootPassword string `env:"S3_ROOT_PASSWORD"`

	APIAddr         string `env:"API_ADDR" envDefault:":8080"`
	APIKeys         string `env:"API_KEYS"`
	APIKeysFile     string `env:"API_KEYS_FILE"`
	MaxRequestBytes int64  `env:"MAX_REQUEST_BYTES" envDefault:"67108864"`

	TimeoutMS      int64         `env:"TIMEOUT_MS" envDefault:"30000"`
	MaxTimeoutMS   int64         `env:"MAX_TIMEOUT_MS" envDefault:"600000"`
	SandboxImage   string        `env:"SANDBOX_IMAGE" envDefault:"codeinterp/sandbox:latest"`
	SandboxRuntime string        `env:"SANDBOX_RUNTIME" envDefault:"runc"` // OCI runtime registered with Docker: runc, or runsc (gVisor)
	SandboxCgroup  string        `env:"SANDBOX_CGROUP_PARENT"`             // cgroup all sandboxes go under; empty: by the engine's driver; "none": the engine's default
	MemoryMB       int64         `env:"MEMORY_MB" envDefault:"512"`
	CPUs           float64       `env:"CPUS" envDefault:"1"`
	Pids           int64         `env:"PIDS" envDefault:"128"`
	WorkspaceMB    int64         `env:"WORKSPACE_MB" envDefault:"100"`
	OutputBytes    int           `env:"OUTPUT_BYTES" envDefault:"1048576"`
	MaxLogBytes    int64         `env:"MAX_LOG_BYTES" envDefault:"67108864"`
	SandboxPrefix  string        `env:"SANDBOX_PREFIX" envDefault:"codeinterp"`
	InterruptGrace time.Duration `env:"INTERRUPT_GRACE" envDefault:"2s"`
	// SandboxJournal, if set, is a file where workers and janitors append one JSON line
	// per sandbox operation (sandbox/journal): a test instrument for the fault suite.
	SandboxJournal string `env:"SANDBOX_JOURNAL"`

	WorkerID              string `env:"WORKER_ID"`
	WarmPool              int    `env:"WARM_POOL" envDefault:"2"`
	MaxSandboxes          int    `env:"MAX_SANDBOXES" envDefault:"50"`
	MaxSandboxesPerTenant int    `env:"MAX_SANDBOXES_PER_TENANT" envDefault:"20"`

	// One-offs (docs/DESIGN.md, "One-off executions"): a pool of recyclable sandboxes,
	// and wiped sandboxes kept idle for their tenant's next one-off.
	OneOffPool             int           `env:"ONEOFF_POOL" envDefault:"2"`
	OneOffRecycle          bool          `env:"ONEOFF_RECYCLE" envDefault:"true"`
	OneOffRecyclePerTenant int           `env:"ONEOFF_RECYCLE_PER_TENANT" envDefault:"4"`
	OneOffRecycleMax       int           `env:"ONEOFF_RECYCLE_MAX" envDefault:"8"`
	OneOffRecycleIdle      time.Duration `env:"ONEOFF_RECYCLE_IDLE" envDefault:"1m"`

	// Budgets of one execution (issue: no tenant can starve the others).
	MaxResults     int   `env:"MAX_RESULTS" envDefault:"100"`           // rich results kept
	MaxResultBytes int   `env:"MAX_RESULT_BYTES" envDefault:"4194304"`  // bytes of rich results kept inline
	StreamBytes    int64 `env:"STREAM_BYTES" envDefault:"0"`            // event stream bytes; 0: twice OUTPUT_BYTES
	CollectBytes   int64 `env:"COLLECT_BYTES" envDefault:"0"`           // output files collected per run; 0: the workspace size
	MaxRecordBytes int   `env:"MAX_RECORD_BYTES" envDefault:"16777216"` // a stored execution record

	// Connections and requests of the API.
	HTTPReadTimeout   time.Duration `env:"HTTP_READ_TIMEOUT" envDefault:"5m"`
	HTTPWriteTimeout  time.Duration `env:"HTTP_WRITE_TIMEOUT" envDefault:"5m"`
	HTTPIdleTimeout   time.Duration `env:"HTTP_IDLE_TIMEOUT" envDefault:"2m"`
	HTTPHeaderTimeout time.Duration `env:"HTTP_HEADER_TIMEOUT" envDefault:"10s"`
	HTTPHeaderBytes   int           `env:"HTTP_HEADER_BYTES" envDefault:"65536"`
	StreamPool        int           `env:"STREAM_POOL" envDefault:"256"`          // Redis connections for SSE and long-polls, per API process
	InflightBytes     int64         `env:"INFLIGHT_BYTES" envDefault:"268435456"` // request bodies being read at once, per API process
	TransferTimeout   time.Duration `env:"TRANSFER_TIMEOUT" envDefault:"10m"`     // one transfer to or from storage
	RedisFullRatio    float64       `env:"REDIS_FULL_RATIO" envDefault:"0.9"`     // /readyz fails past this share of Redis maxmemory

	// Per-tenant quotas; CODEINTERP_TENANT_QUOTAS overrides them per tenant.
	QuotaRate           float64 `env:"QUOTA_RATE" envDefault:"20"`                      // submissions per second
	QuotaBurst          int     `env:"QUOTA_BURST" envDefault:"40"`                     // submissions at once
	QuotaActive         int     `env:"QUOTA_ACTIVE" envDefault:"200"`                   // executions queued or running
	QuotaThreadQueue    int     `env:"QUOTA_THREAD_QUEUE" envDefault:"100"`             // items queued on one thread
	QuotaStreams        int     `env:"QUOTA_STREAMS" envDefault:"16"`                   // open event streams and long-polls, per API process
	QuotaUploadBytesDay int64   `env:"QUOTA_UPLOAD_BYTES_DAY" envDefault:"10737418240"` // bytes uploaded per UTC day
	QuotaStoredBytesDay int64   `env:"QUOTA_STORED_BYTES_DAY" envDefault:"21474836480"` // bytes workers store per UTC day
	QuotaSkillBytes     int64   `env:"QUOTA_SKILL_BYTES" envDefault:"1073741824"`       // bytes of skills held
	QuotaMCPSessions    int     `env:"QUOTA_MCP_SESSIONS" envDefault:"64"`              // MCP sessions open, per API process
	TenantQuotas        string  `env:"TENANT_QUOTAS"`                                   // tenant:name=value,...;tenant:...

	// Sandbox profiles beside the default one, and which tenants may use which
	// (profiles.go): "name:key=value,…;…" and "tenant:name+name;*:name".
	Profiles       string `env:"PROFILES"`
	TenantProfiles string `env:"TENANT_PROFILES"`

	// Webhook delivery has a queue and workers of its own.
	WebhookConcurrency       int `env:"WEBHOOK_CONCURRENCY" envDefault:"8"`
	WebhookTenantConcurrency int `env:"WEBHOOK_TENANT_CONCURRENCY" envDefault:"2"`

	// The MCP endpoint (/mcp): what a tool result may cost a model, and idle sessions.
	MCPTextBytes      int           `env:"MCP_TEXT_BYTES" envDefault:"16384"`   // stdout, stderr, a traceback: head and tail kept
	MCPImageSide      int           `env:"MCP_IMAGE_SIDE" envDefault:"1024"`    // a figure's longer side, in pixels
	MCPImageBytes     int           `env:"MCP_IMAGE_BYTES" envDefault:"262144"` // a figure's PNG, after downscaling
	MCPSessionTimeout time.Duration `env:"MCP_SESSION_TIMEOUT" envDefault:"1h"` // an idle session is closed (its thread stays)
	// How many figures of a result are fitted, and how large one may be to be decoded
	// (larger ones, and 16-bit ones, are links): a figure is the user's bytes.
	MCPImagePixels int `env:"MCP_IMAGE_PIXELS" envDefault:"4194304"` // decoded to be downscaled
	MCPImages      int `env:"MCP_IMAGES" envDefault:"4"`             // fitted per result; the rest are links

	// Skills (docs/API.md, "Skills"): the bucket they are kept in (no expiry; default
	// "<S3_BUCKET>-skills"), what one upload may hold, how many an execution attaches,
	// and each worker host's cache of their archives.
	S3SkillBucket      string `env:"S3_SKILL_BUCKET"`
	SkillMaxBytes      int64  `env:"SKILL_MAX_BYTES" envDefault:"52428800"`          // an uploaded archive
	SkillMaxUnpacked   int64  `env:"SKILL_MAX_UNPACKED_BYTES" envDefault:"67108864"` // its files, unpacked
	SkillMaxFiles      int    `env:"SKILL_MAX_FILES" envDefault:"2000"`              // its files and directories
	SkillsPerExecution int    `env:"SKILLS_PER_EXECUTION" envDefault:"8"`            // attached to one execution (a thread's included)
	SkillMaxVersions   int    `env:"SKILL_MAX_VERSIONS" envDefault:"100"`            // versions of one skill; more are refused
	SkillCacheDir      string `env:"SKILL_CACHE_DIR"`                                // default <tmp>/codeinterp-skills
	SkillCacheBytes    int64  `env:"SKILL_CACHE_BYTES" envDefault:"1073741824"`      // per worker host

	// The janitor ends executions stuck queued or running this long with no live owner.
	StuckAfter time.Duration `env:"STUCK_AFTER" envDefault:"10m"`

	IdlePause       time.Duration `env:"IDLE_PAUSE" envDefault:"60s"`
	IdleReap        time.Duration `env:"IDLE_REAP" envDefault:"30m"`
	JanitorInterval time.Duration `env:"JANITOR_INTERVAL" envDefault:"15s"`

	HeartbeatTTL      time.Duration `env:"HEARTBEAT_TTL" envDefault:"15s"`
	Concurrency       int           `env:"WORKER_CONCURRENCY" envDefault:"4"`
	OneOffShare       int           `env:"ONEOFF_TENANT_SHARE" envDefault:"0"` // 0: half of WORKER_CONCURRENCY, at least 1
	TaskCheckInterval time.Duration `env:"TASK_CHECK_INTERVAL" envDefault:"20ms"`
	ShutdownTimeout   time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"60s"`
	MetricsAddr       string        `env:"METRICS_ADDR" envDefault:":9091"`

	WebhookSecrets string        `env:"WEBHOOK_SECRETS"`
	WebhookAllow   string        `env:"WEBHOOK_ALLOW"`
	WebhookTimeout time.Duration `env:"WEBHOOK_TIMEOUT" envDefault:"10s"`
	WebhookPorts   string        `env:"WEBHOOK_PORTS"` // if set, the only ports webhooks may use: "443,8443"

	// Input files given by URL, fetched by the API (an egress guard of their own).
	FetchAllow    string        `env:"FETCH_ALLOW"`                     // CIDRs or addresses fetches may reach although private
	FetchPorts    string        `env:"FETCH_PORTS"`                     // if set, the only ports fetches may use
	FetchMaxFiles int           `env:"FETCH_MAX_FILES" envDefault:"16"` // files one request names by URL
	FetchTimeout  time.Duration `env:"FETCH_TIMEOUT" envDefault:"60s"`  // all the URL files of one request

	// The egress proxy (cmd/egress, issue 23).
	TenantEgress    string        `env:"TENANT_EGRESS"`                       // tenant:rule rule;… — the hosts each tenant's executions may reach; unlisted: no network
	EgressProxy     string        `env:"EGRESS_PROXY"`                        // the proxy's container, which workers connect sandboxes with egress to; empty: no egress
	EgressListen    string        `env:"EGRESS_LISTEN" envDefault:":3128"`    // where the proxy listens for sandboxes
	EgressAllow     string        `env:"EGRESS_NET_ALLOW"`                    // CIDRs or addresses egress may reach although private
	EgressHostsFile string        `env:"EGRESS_HOSTS_FILE"`                   // names the proxy resolves before DNS, hosts(5) format
	EgressIdle      time.Duration `env:"EGRESS_IDLE_TIMEOUT" envDefault:"2m"` // a connection quiet both ways this long is closed

	LogLevel  string `env:"LOG_LEVEL" envDefault:"info"`
	LogFormat string `env:"LOG_FORMAT" envDefault:"text"`

	// DevMode allows the demo secrets docker-compose.yml ships (demo.go): for a local
	// demo or tests only.
	DevMode bool `env:"DEV_MODE" envDefault:"false"`
}

// Load reads CODEINTERP_* variables from environ (os.Environ() when nil).
func Load(environ map[string]string) (Config, error) {
	opts := env.Options{Prefix: "CODEINTERP_"}
	if environ != nil {
		opts.Environment = environ
	}
	var c Config
	if err := env.ParseWithOptions(&c, opts); err != nil {
		return c, namedErrors(err, opts.Prefix)
	}
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		c.WorkerID = host
	}
	// A worker id names one process's life: a restarted worker must not inherit the
	// threads (and kernels) of the process before it.
	c.WorkerID += "-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	return c, c.validate()
}

// namedErrors rewrites parse errors to name the variable, not the Go field.
func namedErrors(err error, prefix string) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err
	}
	var errs []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			if f, ok := reflect.TypeFor[Config]().FieldByName(pe.Name); ok {
				e = fmt.Errorf("%s%s: %w", prefix, f.Tag.Get("env"), pe.Err)
			}
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// runtimeName is the shape of a runtime name in Docker's daemon.json; whether the
// engine knows it is checked by the worker's readiness (sandbox/docker's Ping).
var runtimeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func (c Config) validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	_, err := url.Parse(c.RedisURL)
	check(err == nil && strings.HasPrefix(c.RedisURL, "redis"), "CODEINTERP_REDIS_URL %q: want redis://[:password@]host:port/db", redacted(c.RedisURL))
	check(c.S3Endpoint != "" && !strings.Contains(c.S3Endpoint, "/"), "CODEINTERP_S3_ENDPOINT %q: want host:port, without a scheme", c.S3Endpoint)
	if c.S3PublicURL != "" {
		u, err := url.Parse(c.S3PublicURL)
		check(err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https"), "CODEINTERP_S3_PUBLIC_URL %q: want http(s)://host[:port]", c.S3PublicURL)
	}
	check(c.URLTTL >= time.Minute && c.URLTTL <= 7*24*time.Hour, "CODEINTERP_URL_TTL %s: want between 1m and 168h (S3's limit)", c.URLTTL)
	check(c.Retention >= time.Hour, "CODEINTERP_RETENTION %s: want at least 1h", c.Retention)
	check(c.MaxRequestBytes >= 1<<20, "CODEINTERP_MAX_REQUEST_BYTES %d: want at least 1 MiB", c.MaxRequestBytes)
	check(c.TimeoutMS > 0 && c.TimeoutMS <= c.MaxTimeoutMS, "CODEINTERP_TIMEOUT_MS %d: want between 1 and CODEINTERP_MAX_TIMEOUT_MS (%d)", c.TimeoutMS, c.MaxTimeoutMS)
	check(c.MemoryMB >= 64, "CODEINTERP_MEMORY_MB %d: want at least 64", c.MemoryMB)
	check(c.CPUs > 0, "CODEINTERP_CPUS %g: want more than 0", c.CPUs)
	check(c.Pids >= 16, "CODEINTERP_PIDS %d: want at least 16", c.Pids)
	check(c.WorkspaceMB >= 1, "CODEINTERP_WORKSPACE_MB %d: want at least 1", c.WorkspaceMB)
	check(c.OutputBytes >= 1024, "CODEINTERP_OUTPUT_BYTES %d: want at least 1024", c.OutputBytes)
	check(c.MaxLogBytes >= int64(c.OutputBytes), "CODEINTERP_MAX_LOG_BYTES %d: want at least CODEINTERP_OUTPUT_BYTES", c.MaxLogBytes)
	check(c.HeartbeatTTL >= time.Second, "CODEINTERP_HEARTBEAT_TTL %s: want at least 1s", c.HeartbeatTTL)
	check(runtimeName.MatchString(c.SandboxRuntime), "CODEINTERP_SANDBOX_RUNTIME %q: want the name of an OCI runtime registered with Docker, such as runc or runsc", c.SandboxRuntime)
	check(c.WarmPool >= 0 && c.MaxSandboxes >= 0 && c.MaxSandboxesPerTenant >= 0, "CODEINTERP_WARM_POOL, _MAX_SANDBOXES and _MAX_SANDBOXES_PER_TENANT must not be negative")
	check(c.OneOffPool >= 0 && c.OneOffRecyclePerTenant >= 1 && c.OneOffRecycleMax >= c.OneOffRecyclePerTenant,
		"CODEINTERP_ONEOFF_POOL (%d) must not be negative, CODEINTERP_ONEOFF_RECYCLE_PER_TENANT (%d) at least 1 and at most CODEINTERP_ONEOFF_RECYCLE_MAX (%d)",
		c.OneOffPool, c.OneOffRecyclePerTenant, c.OneOffRecycleMax)
	check(c.OneOffRecycleIdle >= time.Second, "CODEINTERP_ONEOFF_RECYCLE_IDLE %s: want at least 1s", c.OneOffRecycleIdle)
	check(c.IdlePause > 0 && c.IdleReap > c.IdlePause, "CODEINTERP_IDLE_REAP (%s) must be longer than CODEINTERP_IDLE_PAUSE (%s), both positive", c.IdleReap, c.IdlePause)
	check(c.JanitorInterval >= 100*time.Millisecond, "CODEINTERP_JANITOR_INTERVAL %s: want at least 100ms", c.JanitorInterval)
	check(c.Concurrency >= 1, "CODEINTERP_WORKER_CONCURRENCY %d: want at least 1", c.Concurrency)
	check(c.OneOffShare >= 0 && c.OneOffShare <= c.Concurrency, "CODEINTERP_ONEOFF_TENANT_SHARE %d: want between 0 (half of CODEINTERP_WORKER_CONCURRENCY) and CODEINTERP_WORKER_CONCURRENCY (%d)", c.OneOffShare, c.Concurrency)
	check(c.MetricsAddr != c.APIAddr, "CODEINTERP_METRICS_ADDR %q: want a listener apart from CODEINTERP_API_ADDR (the metrics name every tenant)", c.MetricsAddr)
	check(c.TaskCheckInterval >= 10*time.Millisecond, "CODEINTERP_TASK_CHECK_INTERVAL %s: want at least 10ms", c.TaskCheckInterval)
	_, err = c.Webhooks()
	check(err == nil, "%v", err)
	check(c.WebhookTimeout >= time.Second, "CODEINTERP_WEBHOOK_TIMEOUT %s: want at least 1s", c.WebhookTimeout)
	_, err = c.Fetches()
	check(err == nil, "%v", err)
	check(c.FetchMaxFiles >= 1 && c.FetchTimeout >= time.Second, "CODEINTERP_FETCH_MAX_FILES (%d) want at least 1, CODEINTERP_FETCH_TIMEOUT (%s) at least 1s", c.FetchMaxFiles, c.FetchTimeout)
	check(c.MaxResults >= 1 && c.MaxResultBytes >= 1024, "CODEINTERP_MAX_RESULTS (%d) want at least 1, CODEINTERP_MAX_RESULT_BYTES (%d) at least 1024", c.MaxResults, c.MaxResultBytes)
	check(c.StreamBytes >= 0 && c.CollectBytes >= 0, "CODEINTERP_STREAM_BYTES and CODEINTERP_COLLECT_BYTES must not be negative")
	check(c.MaxRecordBytes >= 1<<20, "CODEINTERP_MAX_RECORD_BYTES %d: want at least 1 MiB", c.MaxRecordBytes)
	check(c.HTTPReadTimeout >= time.Second && c.HTTPWriteTimeout >= time.Second && c.HTTPIdleTimeout >= time.Second && c.HTTPHeaderTimeout >= 100*time.Millisecond,
		"CODEINTERP_HTTP_*_TIMEOUT: want at least 1s (the header timeout at least 100ms)")
	check(c.HTTPHeaderBytes >= 4096, "CODEINTERP_HTTP_HEADER_BYTES %d: want at least 4096", c.HTTPHeaderBytes)
	check(c.StreamPool >= 1 && c.InflightBytes >= max(c.MaxRequestBytes, c.WorkspaceMB<<20),
		"CODEINTERP_STREAM_POOL (%d) want at least 1, CODEINTERP_INFLIGHT_BYTES (%d) at least CODEINTERP_MAX_REQUEST_BYTES and the workspace size (the largest upload)", c.StreamPool, c.InflightBytes)
	check(c.TransferTimeout >= time.Second, "CODEINTERP_TRANSFER_TIMEOUT %s: want at least 1s", c.TransferTimeout)
	check(c.RedisFullRatio > 0 && c.RedisFullRatio <= 1, "CODEINTERP_REDIS_FULL_RATIO %g: want more than 0, at most 1", c.RedisFullRatio)
	_, err = c.Quotas()
	check(err == nil, "%v", err)
	if _, err := c.EgressPolicies(); err != nil {
		errs = append(errs, err)
	}
	profiles, err := c.SandboxProfiles()
	if err != nil {
		errs = append(errs, err)
	}
	for _, p := range profiles.All()[1:] { // the default profile's output is checked above
		check(c.MaxLogBytes >= int64(p.Limits.Output), "CODEINTERP_MAX_LOG_BYTES %d: want at least the output_bytes of profile %s (%d)", c.MaxLogBytes, p.Name, p.Limits.Output)
	}
	check(c.WebhookConcurrency >= 1 && c.WebhookTenantConcurrency >= 1, "CODEINTERP_WEBHOOK_CONCURRENCY and _TENANT_CONCURRENCY: want at least 1")
	check(c.MCPTextBytes >= 256 && c.MCPImageSide >= 16 && c.MCPImageBytes >= 1024 && c.MCPSessionTimeout >= time.Minute,
		"CODEINTERP_MCP_TEXT_BYTES (%d) want at least 256, _IMAGE_SIDE (%d) at least 16, _IMAGE_BYTES (%d) at least 1024, _SESSION_TIMEOUT (%s) at least 1m",
		c.MCPTextBytes, c.MCPImageSide, c.MCPImageBytes, c.MCPSessionTimeout)
	check(c.MCPImagePixels >= 1<<16 && c.MCPImages >= 1, "CODEINTERP_MCP_IMAGE_PIXELS (%d) want at least 65536, CODEINTERP_MCP_IMAGES (%d) at least 1", c.MCPImagePixels, c.MCPImages)
	check(c.SkillMaxVersions >= 1, "CODEINTERP_SKILL_MAX_VERSIONS (%d) want at least 1", c.SkillMaxVersions)
	check(c.SkillMaxBytes >= 1024 && c.SkillMaxUnpacked >= 1024 && c.SkillMaxFiles >= 1 && c.SkillsPerExecution >= 1 && c.SkillCacheBytes >= c.SkillMaxUnpacked,
		"CODEINTERP_SKILL_MAX_BYTES (%d) and _SKILL_MAX_UNPACKED_BYTES (%d) want at least 1024, _SKILL_MAX_FILES (%d) and _SKILLS_PER_EXECUTION (%d) at least 1, _SKILL_CACHE_BYTES (%d) at least _SKILL_MAX_UNPACKED_BYTES",
		c.SkillMaxBytes, c.SkillMaxUnpacked, c.SkillMaxFiles, c.SkillsPerExecution, c.SkillCacheBytes)
	check(c.StuckAfter >= time.Minute, "CODEINTERP_STUCK_AFTER %s: want at least 1m", c.StuckAfter)
	check(c.LogLevel == "debug" || c.LogLevel == "info" || c.LogLevel == "warn" || c.LogLevel == "error", "CODEINTERP_LOG_LEVEL %q: want debug, info, warn or error", c.LogLevel)
	check(c.LogFormat == "text" || c.LogFormat == "json", "CODEINTERP_LOG_FORMAT %q: want text or json", c.LogFormat)
	errs = append(errs, c.demoSecrets()...)
	return errors.Join(errs...)
}

// redacted hides a URL's password, so a configuration error never prints a secret.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}
