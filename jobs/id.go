package jobs

import (
	"strings"

	"github.com/oklog/ulid/v2"
)

// NewID returns a new execution id: "ex_" and a lowercase ULID, so ids sort by
// creation time and carry 80 random bits.
func NewID() string { return "ex_" + strings.ToLower(ulid.Make().String()) }
