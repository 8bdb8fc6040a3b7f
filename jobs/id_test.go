package jobs

import "testing"

// Ids are unique and sort in creation order, even within one millisecond.
func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	var prev string
	for range 1000 {
		id := NewID()
		if !ExecutionPrefix.Of(id) || len(id) != 3+26 || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
		if prev != "" && id <= prev {
			t.Fatalf("%s sorts before the earlier %s", id, prev)
		}
		prev = id
	}
	if d := DeliveryID("ex_abc"); d != "whd_abc" {
		t.Fatalf("delivery id %q", d)
	}
}
