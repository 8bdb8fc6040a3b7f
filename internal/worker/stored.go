package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/quota"
)

// StoredQuota is what the worker needs of the tenants' quotas (*quota.Counters): the
// bytes stored for a tenant per day, checked before a run's files are stored and
// counted after (see jobs/quota's stored.go).
type StoredQuota interface {
	CheckStored(ctx context.Context, tenant string) error
	AddStored(ctx context.Context, tenant string, n int64) error
}

// storedSpent returns why nothing more may be stored for tenant today, or "". A
// quota that cannot be read does not hold files back: a Redis hiccup must not lose a
// finished run's outputs.
func (r *Runner) storedSpent(ctx context.Context, tenant string) string {
	if r.cfg.Stored == nil {
		return ""
	}
	err := r.cfg.Stored.CheckStored(ctx, tenant)
	var over *quota.Exceeded
	switch {
	case errors.As(err, &over):
		return fmt.Sprintf("the tenant's stored bytes of the day (CODEINTERP_QUOTA_STORED_BYTES_DAY, %g) are spent", over.Limit)
	case err != nil:
		r.cfg.Logger.Warn("check stored-bytes quota; storing anyway", "tenant", tenant, "err", err)
	}
	return ""
}

// countStored counts files just stored for tenant.
func (r *Runner) countStored(ctx context.Context, tenant string, files []jobs.File) {
	if r.cfg.Stored == nil {
		return
	}
	var n int64
	for _, f := range files {
		n += f.Size
	}
	if err := r.cfg.Stored.AddStored(context.WithoutCancel(ctx), tenant, n); err != nil {
		r.cfg.Logger.Warn("count stored bytes", "tenant", tenant, "err", err)
	}
}
