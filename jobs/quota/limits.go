// Package quota holds the per-tenant quotas of codeinterp and the Redis counters that
// enforce the ones shared across API replicas: a token bucket of submissions per
// second and the bytes a tenant uploads per day. Counts of queued and running
// executions are enforced atomically where records are created (jobs/records);
// concurrent streams are counted per API process (internal/api).
//
// It owns its Redis keys (keys.go); it knows nothing of HTTP, sandboxes or S3.
package quota

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits are one tenant's quotas. Zero means no limit.
type Limits struct {
	Rate           float64 // submissions per second, sustained
	Burst          int     // submissions at once
	Active         int     // executions queued or running at once
	ThreadQueue    int     // items queued on one thread
	Streams        int     // event streams and long-polls open at once, per API process
	UploadBytesDay int64   // bytes stored from uploads and inline files per UTC day
	StoredBytesDay int64   // bytes of output files, logs and file copies workers store per UTC day
	SkillBytes     int64   // bytes of skills held (jobs/skills charges and credits them)
	MCPSessions    int     // MCP sessions open at once, per API process (internal/mcp)
}

// Table is every tenant's quotas: the defaults and per-tenant overrides.
type Table struct {
	Default Limits
	Tenants map[string]Limits
}

// For returns the quotas of tenant.
func (t Table) For(tenant string) Limits {
	if l, ok := t.Tenants[tenant]; ok {
		return l
	}
	return t.Default
}

// ParseOverrides reads per-tenant overrides, "tenant:name=value,name=value;tenant:…",
// on top of the defaults. Names: rate, burst, active, thread_queue, streams,
// upload_bytes_day, stored_bytes_day, skill_bytes, mcp_sessions.
func ParseOverrides(def Limits, s string) (Table, error) {
	t := Table{Default: def, Tenants: map[string]Limits{}}
	for _, entry := range strings.Split(s, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		tenant, fields, ok := strings.Cut(entry, ":")
		if !ok || tenant == "" {
			return t, fmt.Errorf("CODEINTERP_TENANT_QUOTAS %q: want tenant:name=value,…", entry)
		}
		l := def
		for _, f := range strings.Split(fields, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(f), "=")
			n, err := strconv.ParseFloat(value, 64)
			if err != nil || n < 0 {
				return t, fmt.Errorf("CODEINTERP_TENANT_QUOTAS %s: %q is not a non-negative number", tenant, f)
			}
			switch name {
			case "rate":
				l.Rate = n
			case "burst":
				l.Burst = int(n)
			case "active":
				l.Active = int(n)
			case "thread_queue":
				l.ThreadQueue = int(n)
			case "streams":
				l.Streams = int(n)
			case "upload_bytes_day":
				l.UploadBytesDay = int64(n)
			case "stored_bytes_day":
				l.StoredBytesDay = int64(n)
			case "skill_bytes":
				l.SkillBytes = int64(n)
			case "mcp_sessions":
				l.MCPSessions = int(n)
			default:
				return t, fmt.Errorf("CODEINTERP_TENANT_QUOTAS %s: unknown quota %q (rate, burst, active, thread_queue, streams, upload_bytes_day, stored_bytes_day, skill_bytes, mcp_sessions)", tenant, name)
			}
		}
		t.Tenants[tenant] = l
	}
	return t, nil
}

// Exceeded is a quota a request went past.
type Exceeded struct {
	Quota      string // the quota's name, as the configuration names it
	Limit      float64
	RetryAfter int // seconds until trying again may succeed
}

func (e *Exceeded) Error() string {
	return fmt.Sprintf("quota %s exceeded (limit %g)", e.Quota, e.Limit)
}
