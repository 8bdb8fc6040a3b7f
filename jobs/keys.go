package jobs

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ThreadKey names a tenant's thread across tenants: "<tenant>/<thread>". Neither part
// may contain "/" (the API's validation guarantees it).
type ThreadKey string

// NewThreadKey returns the key of a tenant's thread; a one-off's is "<tenant>/-".
func NewThreadKey(tenant, thread string) ThreadKey {
	return ThreadKey(tenant + "/" + cmp.Or(thread, "-"))
}

// Split returns the tenant and thread of k.
func (k ThreadKey) Split() (tenant, thread string) {
	tenant, thread, _ = strings.Cut(string(k), "/")
	return tenant, thread
}

// Storage keys. Every key starts with the tenant, so one tenant's keys can never name
// another's objects: <tenant>/<thread or "oneoff">/<execution>/...

func executionPrefix(ex *Execution) string {
	return ex.Tenant + "/" + cmp.Or(ex.ThreadID, "oneoff") + "/" + ex.ID + "/"
}

// InputKey is where the API stores an input file of ex before the run.
func InputKey(ex *Execution, name string) string { return executionPrefix(ex) + "inputs/" + name }

// ArtifactKey is where a produced file of ex (outputs/..., or a full log) is stored.
// A long name can make an invalid key: see CheckKey.
func ArtifactKey(ex *Execution, name string) string { return executionPrefix(ex) + name }

// Storage key limits: S3 takes keys of at most 1024 bytes of UTF-8, and MinIO keeps
// each "/"-separated part as a file or directory name, of at most 255 bytes.
const (
	MaxKeyLen     = 1024
	MaxKeySegment = 255
)

// ErrBadKey means a storage key is one the store would refuse.
var ErrBadKey = errors.New("invalid storage key")

// CheckKey says why key cannot be a storage key, or returns nil.
func CheckKey(key string) error {
	switch {
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: %d bytes, over %d", ErrBadKey, len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: not UTF-8", ErrBadKey)
	}
	for part := range strings.SplitSeq(key, "/") {
		if len(part) > MaxKeySegment {
			return fmt.Errorf("%w: a part of %d bytes, over %d", ErrBadKey, len(part), MaxKeySegment)
		}
	}
	return nil
}

// UploadKey is where POST /v1/files stores an upload; clients see it as "uploads/<id>/<name>".
func UploadKey(tenant, object string) string { return tenant + "/" + object }

// SnapshotKey is where the latest workspace snapshot of thread k is stored.
func SnapshotKey(k ThreadKey) string {
	tenant, thread := k.Split()
	return tenant + "/" + thread + "/snapshot.tar"
}
