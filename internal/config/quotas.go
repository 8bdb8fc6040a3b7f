package config

import "github.com/codeinterp/codeinterp/jobs/quota"

// Quotas returns the per-tenant quotas: the CODEINTERP_QUOTA_* defaults with the
// CODEINTERP_TENANT_QUOTAS overrides.
func (c Config) Quotas() (quota.Table, error) {
	return quota.ParseOverrides(quota.Limits{
		Rate: c.QuotaRate, Burst: c.QuotaBurst, Active: c.QuotaActive, ThreadQueue: c.QuotaThreadQueue,
		Streams: c.QuotaStreams, UploadBytesDay: c.QuotaUploadBytesDay,
		StoredBytesDay: c.QuotaStoredBytesDay, SkillBytes: c.QuotaSkillBytes,
		MCPSessions: c.QuotaMCPSessions,
	}, c.TenantQuotas)
}
