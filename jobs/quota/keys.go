package quota

import "time"

// Every Redis key of the counters, under the configured prefix P:
//
//	P quota:rate:<tenant>             hash: a token bucket of submissions
//	P quota:up:<tenant>:<yyyy-mm-dd>  bytes uploaded that UTC day (kept two days)
//	P quota:st:<tenant>:<yyyy-mm-dd>  bytes workers stored that UTC day (kept two days)

func (c *Counters) bucketKey(tenant string) string { return c.prefix + "quota:rate:" + tenant }

func (c *Counters) uploadKey(tenant string, day time.Time) string {
	return c.prefix + "quota:up:" + tenant + ":" + day.Format("2006-01-02")
}

func (c *Counters) storedKey(tenant string, day time.Time) string {
	return c.prefix + "quota:st:" + tenant + ":" + day.Format("2006-01-02")
}
