// Package storage keeps artifacts (output files, full logs, uploads, workspace
// snapshots) in one S3 bucket (MinIO) and hands out presigned download URLs.
//
// Keys are chosen by callers; this package knows nothing of executions, tenants or
// HTTP. Objects expire through a bucket lifecycle rule set by [Store.Init], and
// [Store.DeleteBefore] sweeps what the rule has not yet removed.
package storage
