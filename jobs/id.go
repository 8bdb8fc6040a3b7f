package jobs

import (
	"crypto/rand"
	"strings"

	"github.com/oklog/ulid/v2"
)

// IDPrefix says what an id names. Ids are a prefix and a lowercase ULID, so they sort
// by creation time and carry 80 random bits.
type IDPrefix string

// Id prefixes.
const (
	ExecutionPrefix IDPrefix = "ex_"  // an execution
	OpPrefix        IDPrefix = "op_"  // a thread operation record (put/get file, delete, pause, reap)
	DeliveryPrefix  IDPrefix = "whd_" // a webhook delivery, one per execution
)

// New returns a new id with this prefix.
func (p IDPrefix) New() string { return string(p) + newULID() }

// Of reports whether id has this prefix.
func (p IDPrefix) Of(id string) bool { return strings.HasPrefix(id, string(p)) }

// newULID draws an id's 80 random bits from crypto/rand: ids appear in URLs and stand
// for their owner's resources, so they must not be guessable (ulid.Make's default
// source is math/rand seeded with the time).
func newULID() string { return strings.ToLower(ulid.MustNew(ulid.Now(), rand.Reader).String()) }

// NewID returns a new execution id.
func NewID() string { return ExecutionPrefix.New() }

// NewOpID returns a new thread operation id.
func NewOpID() string { return OpPrefix.New() }

// NewUploadObject returns the client-visible name of a new upload of a file named
// clean: "uploads/<ulid>/<clean>".
func NewUploadObject(clean string) string { return "uploads/" + newULID() + "/" + clean }

// DeliveryID is the id of execution id's webhook delivery: the same on every retry,
// so receivers can drop a delivery they already processed.
func DeliveryID(executionID string) string {
	return string(DeliveryPrefix) + strings.TrimPrefix(executionID, string(ExecutionPrefix))
}
