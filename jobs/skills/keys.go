package skills

import "github.com/codeinterp/codeinterp/jobs"

// Every Redis key of the catalog, under the configured prefix P:
//
//	P skill:<tenant>:<name>      hash: version → the version's JSON (jobs.Skill)
//	P skillv:<tenant>:<name>     sorted set: the hash's versions, scored by number
//	P skills:<tenant>            set: the tenant's skill names
//	P skillbytes:<tenant>        bytes of skill tars the tenant holds
//	P tskills:<tenant>/<thread>  hash: skill name → version attached to the thread

func (c *Catalog) skillKey(tenant, name string) string {
	return c.prefix + "skill:" + tenant + ":" + name
}
func (c *Catalog) versionsKey(tenant, name string) string {
	return c.prefix + "skillv:" + tenant + ":" + name
}
func (c *Catalog) namesKey(tenant string) string      { return c.prefix + "skills:" + tenant }
func (c *Catalog) bytesKey(tenant string) string      { return c.prefix + "skillbytes:" + tenant }
func (c *Catalog) threadKey(tk jobs.ThreadKey) string { return c.prefix + "tskills:" + string(tk) }
