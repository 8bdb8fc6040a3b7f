package jobs

import (
	"strconv"
	"time"
)

// Skill is one version of a tenant's skill: a named bundle of files, stored once as a
// normalised tar of regular files and directories, and attached read-only to
// executions and threads at skills/<name>/.
type Skill struct {
	Name     string    `json:"name"`
	Version  int       `json:"version"`
	Digest   string    `json:"digest"`   // hex SHA-256 of the stored tar: what caches key on
	Size     int64     `json:"size"`     // bytes of the stored tar, counted against the tenant's storage
	Files    int       `json:"files"`    // regular files in it
	Unpacked int64     `json:"unpacked"` // bytes of its files
	Created  time.Time `json:"created"`
}

// Ref is how clients name the version: "<name>@<version>".
func (s Skill) Ref() string { return s.Name + "@" + strconv.Itoa(s.Version) }

// SkillKey is where a skill version's tar is stored, in the skills bucket (which has
// no expiry rule: skills live until deleted).
func SkillKey(tenant, name string, version int) string {
	return tenant + "/" + name + "/" + strconv.Itoa(version) + ".tar"
}
