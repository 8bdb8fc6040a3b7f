package worker

import (
	"io"
	"strings"
	"testing"
)

func TestSpoolKeepsWholeStreamAndCaps(t *testing.T) {
	s := newSpool(10, 25) // spills to a file after 10 bytes, keeps 25
	defer s.close()
	for range 4 {
		s.write("0123456789")
	}
	if s.file == nil {
		t.Fatal("did not spill to a file past the in-memory size")
	}
	for attempt := range 2 { // opened once per storage attempt
		rc, size, err := s.open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		if !strings.HasPrefix(string(b), "0123456789012345678901234\n[codeinterp: 15 more bytes") || int64(len(b)) != size {
			t.Fatalf("attempt %d: %q (size %d)", attempt, b, size)
		}
	}
}
