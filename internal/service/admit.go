package service

import "context"

// Admit takes one of the tenant's submissions per second (the rate quota) for a
// request that costs the service like one without submitting anything: an MCP
// session opened. Past the quota it returns a quota_exceeded *Error with RetryAfter.
func (s *Service) Admit(ctx context.Context, tenant string) error {
	if err := s.cfg.Quotas.Submit(ctx, tenant); err != nil {
		if o := Outage(err); o != nil {
			return o
		}
		return asQuota(err, "")
	}
	return nil
}
