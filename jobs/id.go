package jobs

import (
	"crypto/rand"
	"io"
	"strings"
	"sync"

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
	// ErrorRefPrefix names an internal error: the reference a client is shown instead
	// of the error's words, and the operator finds in the logs beside them.
	ErrorRefPrefix IDPrefix = "err_"
)

// New returns a new id with this prefix.
func (p IDPrefix) New() string { return string(p) + newULID() }

// Of reports whether id has this prefix.
func (p IDPrefix) Of(id string) bool { return strings.HasPrefix(id, string(p)) }

// entropy draws ids' random bits from crypto/rand: ids appear in URLs and stand for
// their owner's resources, so they must not be guessable (ulid.Make's default source
// is math/rand seeded with the time). Within one millisecond each id adds a random
// step of up to 2^32 to the last, so ids still sort in creation order.
var entropy = struct {
	sync.Mutex
	r io.Reader
}{r: ulid.Monotonic(rand.Reader, 0)}

func newULID() string {
	entropy.Lock()
	defer entropy.Unlock()
	return strings.ToLower(ulid.MustNew(ulid.Now(), entropy.r).String())
}

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
