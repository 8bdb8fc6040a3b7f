package jobs

import (
	"strings"
	"testing"
)

// Ids are unique, sortable by time, and their random part is not a sequence: two
// ids made in the same millisecond share their time prefix and nothing more.
func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	var prev string
	for range 1000 {
		id := NewID()
		if !ExecutionPrefix.Of(id) || len(id) != 3+26 || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
		if prev != "" && id[3:13] < prev[3:13] {
			t.Fatalf("%s sorts before the earlier %s", id, prev)
		}
		if prev != "" && id[3:13] == prev[3:13] && strings.HasPrefix(id[13:], prev[13:20]) {
			t.Fatalf("ids of one millisecond look sequential: %s after %s", id, prev)
		}
		prev = id
	}
	if d := DeliveryID("ex_abc"); d != "whd_abc" {
		t.Fatalf("delivery id %q", d)
	}
}
