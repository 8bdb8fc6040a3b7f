package docker

import (
	"context"
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

// A kernel that does not take its input (a wedged driver: nobody reads the pipe)
// cannot hold a sender past its context: the write ends, and the kernel is hung up
// on, since half a line may have gone out.
func TestSendBoundedByContext(t *testing.T) {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pr.Close() })
	hungUp := make(chan struct{})
	k := newKernel("", pw, func() { close(hungUp); pw.CloseWithError(io.ErrClosedPipe) })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	sent := make(chan error, 1)
	go func() { sent <- k.send(ctx, wireRequest{Op: "exec", ID: "x", Code: "print(1)"}) }()
	select {
	case err := <-sent:
		if err == nil || !strings.Contains(err.Error(), "not taken in time") {
			t.Fatalf("send to a kernel that reads nothing: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("send outlived its context by a minute")
	}
	select {
	case <-hungUp:
	default:
		t.Fatal("the kernel was not hung up on")
	}
	select {
	case <-k.closed:
	default:
		t.Fatal("the kernel was not closed")
	}

	// A kernel that takes its input is not hung up on.
	pr2, pw2 := io.Pipe()
	go func() { _, _ = io.Copy(io.Discard, pr2) }()
	k2 := newKernel("", pw2, func() { t.Error("a kernel that took its input was hung up on") })
	if err := k2.send(context.Background(), wireRequest{Op: "exec", ID: "y"}); err != nil {
		t.Fatal(err)
	}
	pw2.Close()
}
