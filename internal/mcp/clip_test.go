package mcp

import (
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	t.Parallel()
	if got := clip("short", "short", 5, 100, ""); got != "short" {
		t.Fatalf("a text within budget changed: %q", got)
	}
	long := strings.Repeat("a", 500) + "MIDDLE" + strings.Repeat("z", 500)
	got := clip(long, long, int64(len(long)), 100, "")
	if !strings.HasPrefix(got, strings.Repeat("a", 50)) || !strings.HasSuffix(got, strings.Repeat("z", 50)) ||
		strings.Contains(got, "MIDDLE") || !strings.Contains(got, "[... 906 bytes left out ...]") {
		t.Fatalf("head and tail not kept around a marker: %q", got)
	}
	if len(got) > 100+64 {
		t.Fatalf("clipped to %d bytes for a budget of 100", len(got))
	}

	// A head cut by the worker, a tail read from the whole log: the count covers both.
	got = clip("first line\n", "last line\n", 1<<20, 16, "stdout.log")
	if !strings.HasPrefix(got, "first li") || !strings.HasSuffix(got, "]\nst line\n") ||
		!strings.Contains(got, "1048560 bytes left out; the whole output is stdout.log") {
		t.Fatalf("clip of a stored head and tail: %q", got)
	}

	// Cuts never split a UTF-8 sequence.
	euros := strings.Repeat("€", 100) // 3 bytes each
	for budget := 1; budget < 20; budget++ {
		if got := clip(euros, euros, int64(len(euros)), budget, ""); !utf8.ValidString(got) {
			t.Fatalf("budget %d: invalid UTF-8 %q", budget, got)
		}
	}
}

func TestReadTail(t *testing.T) {
	t.Parallel()
	r := &chunked{s: strings.Repeat("x", 1000) + "the end", chunk: 7}
	got, err := readTail(r, 7)
	if err != nil || got != "the end" {
		t.Fatalf("readTail = %q, %v", got, err)
	}
	if got, _ := readTail(strings.NewReader("ab"), 10); got != "ab" {
		t.Fatalf("readTail of a short text = %q", got)
	}
}

// chunked reads s in chunks of a few bytes, as a network stream would.
type chunked struct {
	s     string
	chunk int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.chunk)], c.s)
	c.s = c.s[n:]
	return n, nil
}
