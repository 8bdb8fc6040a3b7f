package docker

import (
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingReader counts the reads of a stream no one writes to until the test does.
type countingReader struct {
	*io.PipeReader
	reads atomic.Int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	r.reads.Add(1)
	return r.PipeReader.Read(p)
}

// decoding returns a kernel whose decoder reads a pipe, the pipe's writer and its
// reader. Hanging up closes the writer, as the connection's end ends the copy.
func decoding(t *testing.T) (*kernel, *io.PipeWriter, *countingReader) {
	t.Helper()
	pr, pw := io.Pipe()
	r := &countingReader{PipeReader: pr}
	k := newKernel("", nil, func() { pw.CloseWithError(io.ErrClosedPipe) })
	go k.decode(r)
	t.Cleanup(k.close)
	return k, pw, r
}

// ended waits for k's decoder to end (it closes k.events), failing after a minute.
func ended(t *testing.T, k *kernel) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case _, ok := <-k.events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the decoder did not end")
		}
	}
}

// Between runs nobody listens, and nothing of the stream is read: a writer blocks.
// Closing the kernel ends the decoder, and with it the blocked write (in the runtime,
// the copy from the exec's connection, which its hang-up alone would not end).
func TestStreamReadOnlyWhileListened(t *testing.T) {
	pr, pw := io.Pipe()
	r := &countingReader{PipeReader: pr}
	k := newKernel("", nil, func() {})
	go k.decode(r)
	wrote := make(chan error, 1)
	go func() { _, err := pw.Write([]byte(`{"ev": "stream"}` + "\n")); wrote <- err }()
	k.close()
	ended(t, k)
	if err := <-wrote; err == nil {
		t.Fatal("a line was read while nobody listened")
	}
	if n := r.reads.Load(); n != 0 {
		t.Fatalf("%d reads of a stream nobody listened to", n)
	}
}

// One waiter follows another while a line is read (the kernel's "ready" is taken,
// then a run listens before its waiter stopped): the line goes to the one listening
// when it is whole, bounded by what that one expects.
func TestStreamHandover(t *testing.T) {
	k, pw, r := decoding(t)
	stopReady := k.listen(maxControlLine)
	eventually(t, func() bool { return r.reads.Load() > 0 }) // reading for the first
	stopReady()
	stopRun := k.listen(maxRunLine)
	defer stopRun()
	big := `{"ev": "result", "text": "` + strings.Repeat("a", maxControlLine) + "\"}\n"
	go func() { _, _ = pw.Write([]byte(big)) }()
	if ev, ok := <-k.events; !ok || ev.Ev != "result" {
		t.Fatalf("the run's waiter got %+v, %v; diagnostics %q", ev, ok, k.diagnostics())
	}
}

// eventually polls cond until it holds, failing the test after a minute.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(time.Millisecond)
	}
}

// A line longer than its waiter expects ends the stream, and says why.
func TestStreamLineLimit(t *testing.T) {
	k, pw, _ := decoding(t)
	defer k.listen(1024)()
	go func() { _, _ = pw.Write([]byte(`{"ev": "ready", "text": "` + strings.Repeat("a", 2048) + "\"}\n")) }()
	ended(t, k)
	if d := k.diagnostics(); !strings.Contains(d, "longer than 1024 bytes") {
		t.Fatalf("diagnostics %q", d)
	}
}
