package mcp

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// clip returns a text of total bytes that the model sees in at most about budget
// bytes: whole when it fits, otherwise its first half budget and its last, around a
// marker saying how much was left out and where the whole is. head is a prefix of the
// text and tail a suffix (both may be the whole text); cuts never split a UTF-8
// sequence.
func clip(head, tail string, total int64, budget int, whole string) string {
	if total <= int64(budget) && int64(len(head)) == total {
		return head
	}
	h := min(budget/2, len(head))
	t := min(budget-h, len(tail))
	for h > 0 && h < len(head) && !utf8.RuneStart(head[h]) {
		h--
	}
	from := len(tail) - t
	for from < len(tail) && !utf8.RuneStart(tail[from]) {
		from++
	}
	omitted := total - int64(h) - int64(len(tail)-from)
	marker := fmt.Sprintf("\n[... %d bytes left out ...]\n", omitted)
	if whole != "" {
		marker = fmt.Sprintf("\n[... %d bytes left out; the whole output is %s ...]\n", omitted, whole)
	}
	return head[:h] + marker + tail[from:]
}

// tailWriter keeps the last n bytes written to it.
type tailWriter struct {
	n   int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	if len(p) >= w.n {
		w.buf = append(w.buf[:0], p[len(p)-w.n:]...)
		return len(p), nil
	}
	if drop := len(w.buf) + len(p) - w.n; drop > 0 {
		w.buf = append(w.buf[:0], w.buf[drop:]...)
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// readTail returns the last n bytes of r.
func readTail(r io.Reader, n int) (string, error) {
	w := &tailWriter{n: n, buf: make([]byte, 0, n)}
	_, err := io.Copy(w, r)
	return string(w.buf), err
}
