package docker_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// floodProtocol starts, once the run is over, a thread of the kernel that writes
// 2 MiB event lines to the kernel's protocol descriptor (the original stdout the
// driver kept for itself) for ever.
const floodProtocol = afterDone + `import os
_line = b'{"ev": "flood", "text": "' + b"A" * (2 << 20) + b'"}\n'
def _flood():
    fd = _drv._proto.fileno()
    while True:
        view = memoryview(_line)
        while view:
            view = view[os.write(fd, view):]
after_done(_flood)`

// A thread's code floods the kernel's protocol descriptor between runs, then the
// thread is reset (its sandbox let go and adopted again), round after round: the
// worker holds none of the flood, and nothing of a kernel it let go keeps running.
// Not parallel: it counts the process's goroutines and measures its heap.
func TestDockerKernelFloodBetweenRuns(t *testing.T) {
	ctx := context.Background()
	prefix := fmt.Sprintf("citest-flood%d", os.Getpid())
	d := newDocker(t, prefix)
	t.Cleanup(func() { removeInstallation(t, prefix) })
	// Kernels of sandboxes the package's earlier tests left to the engine's removal
	// are not this test's to wait for.
	before := kernelGoroutines()
	spec := sandbox.Spec{Tenant: "acme", Thread: "flood", Fence: 1}
	sb, err := d.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	base := heapInUse()
	for round := 1; round <= 3; round++ {
		runCode(t, sb, floodProtocol)
		// The worker had every chance to take the flood in: its decoder stopped
		// reading (nobody waits for the kernel's events; or, before, its buffer of
		// events was full), or it holds more than it ever should.
		eventually(t, 2*time.Minute, "the kernel's decoder to stop reading", func() bool {
			return decoderParked(before) || heapInUse()-base > maxHeld
		})
		if grown := heapInUse() - base; grown > maxHeld {
			t.Fatalf("round %d: the worker holds %d MiB more while the code floods between runs", round, grown>>20)
		}
		sb.Release()
		kernelsEnded(t, "the let-go kernel's goroutines", before)
		spec.Fence++
		if sb, err = d.Find(ctx, spec); err != nil || sb == nil {
			t.Fatalf("round %d: adopt again: %v, %v", round, sb, err)
		}
	}
	if out := runCode(t, sb, "print('ok')"); out.Stdout != "ok\n" {
		t.Fatalf("after the floods: %+v", out)
	}
	removeWithin(t, sb, 2*time.Minute)
	kernelsEnded(t, "the removed kernel's goroutines", before)
}

// kernelsEnded waits (a minute at most) until no goroutine serves a kernel's
// stream but those in before, and shows those left when some are.
func kernelsEnded(t *testing.T, what string, before map[string]string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var left []string
		for id, stack := range kernelGoroutines() {
			if _, old := before[id]; !old {
				left = append(left, stack)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not end within a minute:\n\n%s", what, strings.Join(left, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// maxHeld bounds what the flood may cost the worker's heap: nothing, give or take a
// collection's slack, while nobody waits for the kernel's events.
const maxHeld = 32 << 20

// heapInUse is the heap the process holds after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// kernelGoroutines returns the stacks of the goroutines that serve a kernel's stream
// (its decoder and the copy from the exec's connection), by goroutine header
// ("goroutine 42").
func kernelGoroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		s := string(g)
		if strings.Contains(s, "sandbox/docker.(*kernel).decode") || strings.Contains(s, "sandbox/docker.(*Runtime).startKernel.func") {
			id, _, _ := strings.Cut(s, " [")
			out[id] = s
		}
	}
	return out
}

// decoderParked reports whether the decoders of the kernels not in before are all
// parked in a channel operation of their own (waiting for a waiter, or to hand over
// an event), rather than reading their stream or decoding.
func decoderParked(before map[string]string) bool {
	found := false
	for id, g := range kernelGoroutines() {
		if _, old := before[id]; old || !strings.Contains(g, "(*kernel).decode") {
			continue
		}
		header, frames, _ := strings.Cut(g, "\n")
		if !(strings.Contains(header, "[select") || strings.Contains(header, "[chan send")) ||
			!strings.HasPrefix(frames, "github.com/codeinterp/codeinterp/sandbox/docker.") {
			return false
		}
		found = true
	}
	return found
}
