// Package skills is the Redis catalog of tenants' skills: the versions of each skill
// (digest, sizes, when made), the bytes each tenant holds in skills (charged and
// credited atomically with adding and deleting a version, against its quota), and
// the skills attached to each thread. The skills' files are objects in storage,
// stored and deleted by the service; this package knows nothing of S3, HTTP or
// sandboxes. Every Redis key it uses is in keys.go.
package skills
