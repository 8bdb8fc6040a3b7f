package service

import (
	"context"

	"github.com/codeinterp/codeinterp/jobs/quota"
	"github.com/codeinterp/codeinterp/jobs/records"
)

// Usage is what a tenant has used, and where it stands against its quotas.
type Usage struct {
	records.Usage
	SkillBytes  int64 // bytes of skills held now
	StoredToday int64 // bytes workers stored today (UTC)
	Quotas      quota.Limits
}

// Usage returns the tenant's usage counters, current use and quotas.
func (s *Service) Usage(ctx context.Context, tenant string) (Usage, error) {
	u, err := s.cfg.Records.Usage(ctx, tenant)
	if err != nil {
		return Usage{}, err
	}
	if u.UploadsToday, err = s.cfg.Quotas.Uploaded(ctx, tenant); err != nil {
		return Usage{}, err
	}
	out := Usage{Usage: u, Quotas: s.cfg.Quotas.Limits(tenant)}
	if out.StoredToday, err = s.cfg.Quotas.StoredToday(ctx, tenant); err != nil {
		return Usage{}, err
	}
	if s.cfg.Skills != nil {
		if out.SkillBytes, err = s.cfg.Skills.Held(ctx, tenant); err != nil {
			return Usage{}, err
		}
	}
	return out, nil
}

// UsageAll returns the usage of every tenant that has any, for metrics: the counters,
// current use and uploads of today (not the skill bytes), in three round trips to
// Redis however many tenants there are, so a scrape costs the same for 2 or 2,000.
func (s *Service) UsageAll(ctx context.Context) (map[string]Usage, error) {
	all, err := s.cfg.Records.UsageAll(ctx)
	if err != nil {
		return nil, err
	}
	tenants := make([]string, 0, len(all))
	for t := range all {
		tenants = append(tenants, t)
	}
	up, err := s.cfg.Quotas.UploadedAll(ctx, tenants)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Usage, len(all))
	for t, u := range all {
		u.UploadsToday = up[t]
		out[t] = Usage{Usage: u, Quotas: s.cfg.Quotas.Limits(t)}
	}
	return out, nil
}
