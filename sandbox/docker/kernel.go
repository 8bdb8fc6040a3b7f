package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/codeinterp/codeinterp/sandbox"
)

// wireEvent is one line the kernel driver writes. See deploy/sandbox/driver.py. The
// user's code can write any line, so each field is read leniently (a field of the
// wrong type is left zero) and checked where it is used.
type wireEvent struct {
	Ev        string             `json:"ev"`
	ID        string             `json:"id"`
	Name      string             `json:"name"`
	Text      string             `json:"text"`
	Type      string             `json:"type"`
	File      string             `json:"file"`
	Status    string             `json:"status"`
	ExitCode  wireInt            `json:"exit_code"`
	Error     *sandbox.Error     `json:"error"`
	Outputs   []string           `json:"outputs"`
	Workspace []listingEntry     `json:"workspace"`
	Skipped   map[string]wireInt `json:"skipped"`
	CPUMS     float64            `json:"cpu_ms"`
	OK        bool               `json:"ok"`     // wiped, put
	Reason    string             `json:"reason"` // wiped, put: when not OK
	Failed    wireInt            `json:"failed"` // put: entries not written
	Errors    []string           `json:"errors"` // put: the first few, "path: why"
	Tar       []byte             `json:"tar"`    // got: a read's answer, base64 on the wire
}

// wireInt is a number the kernel sent: anything else is 0 and a number is clamped to
// 32 bits, so that one odd field never loses the whole event (sys.exit(2**70) must
// still end the run).
type wireInt int64

func (n *wireInt) UnmarshalJSON(b []byte) error {
	var f float64
	if json.Unmarshal(b, &f) != nil {
		f = 0
	}
	*n = wireInt(min(max(f, math.MinInt32), math.MaxInt32))
	return nil
}

// listingEntry is one [path, size, mtime in ms] of the driver's workspace listing;
// a malformed one has no name, and is dropped.
type listingEntry sandbox.FileInfo

func (e *listingEntry) UnmarshalJSON(b []byte) error {
	var raw [3]any
	if json.Unmarshal(b, &raw) != nil {
		*e = listingEntry{}
		return nil
	}
	name, _ := raw[0].(string)
	size, _ := raw[1].(float64)
	mtime, _ := raw[2].(float64)
	*e = listingEntry{Name: name, Size: int64(min(max(size, 0), math.MaxInt64/2)),
		ModTime: time.UnixMilli(int64(min(max(mtime, 0), 1<<50))).UTC()}
	return nil
}

// wireRequest is one line sent to the kernel driver.
type wireRequest struct {
	Op       string            `json:"op"`
	ID       string            `json:"id,omitempty"`
	Language string            `json:"language,omitempty"`
	Code     string            `json:"code,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Tar      []byte            `json:"tar,omitempty"`   // put: a tar archive, base64 on the wire
	Names    []string          `json:"names,omitempty"` // get: the files to read
	Each     int64             `json:"each,omitempty"`  // get: sandbox.ReadLimits, 0 never sent
	Total    int64             `json:"total,omitempty"`
	Max      int64             `json:"max,omitempty"` // get: the largest answer to send
}

// kernel is a running driver process, attached through a `docker exec` stream.
type kernel struct {
	execID string
	conn   io.WriteCloser
	hangUp func() // closes the exec's connection
	// events carries what the driver says, to whoever listens (stream.go); it is
	// closed when the decoder ends: the stream ended or broke, or the kernel closed.
	events    chan wireEvent
	closed    chan struct{}
	closeOnce sync.Once
	woken     chan struct{} // a listener arrived

	mu   sync.Mutex
	diag bytes.Buffer // the driver's own stderr, kept for error messages
	ear  *listener    // who listens now; nil: nobody, and nothing is read
}

func newKernel(execID string, conn io.WriteCloser, hangUp func()) *kernel {
	return &kernel{execID: execID, conn: conn, hangUp: hangUp, events: make(chan wireEvent),
		closed: make(chan struct{}), woken: make(chan struct{}, 1)}
}

// close hangs up on the kernel; its decoder ends, whatever it was doing. The process
// itself is ended by a reset or the removal. Safe to call more than once.
func (k *kernel) close() {
	k.closeOnce.Do(func() {
		close(k.closed)
		k.hangUp()
	})
}

// kernelEnv is how a kernel starts: with the libraries imported, or as a zygote
// (deploy/sandbox/zygote.py), which always imports them.
type kernelEnv struct{ preload, zygote bool }

func kernelMode(spec sandbox.Spec) kernelEnv {
	return kernelEnv{preload: spec.Preload || spec.Recyclable, zygote: spec.Recyclable}
}

// startKernel execs the driver in a running sandbox and waits for it to say ready.
// With a fencing token, the kernel starts only if no newer owner fenced the sandbox
// (fence.go).
func (d *Runtime) startKernel(ctx context.Context, containerID string, mode kernelEnv, token int64) (*kernel, error) {
	// Waiting for a slot is bounded by the caller alone: behind a burst of starts
	// (dozens of sandboxes made at once under gVisor, seconds each) the wait may be
	// long, and counting it against the start's own time failed starts that had
	// barely begun.
	select {
	case d.starts <- struct{}{}:
		defer func() { <-d.starts }()
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for a kernel start slot: %w", ctx.Err())
	}
	// A start that never says ready (an exec the engine never runs) must not hold a
	// start slot, or the thread's runner, for ever.
	ctx, cancel := context.WithTimeout(ctx, d.cfg.StartTimeout)
	defer cancel()
	env := []string{}
	if mode.preload {
		env = append(env, "CODEINTERP_PRELOAD=1")
	}
	if mode.zygote {
		env = append(env, "CODEINTERP_ZYGOTE=1")
	}
	created, err := d.cli.ContainerExecCreate(ctx, containerID, container.ExecOptions{
		User:         codeUser,
		WorkingDir:   "/workspace",
		Env:          env,
		Cmd:          fenced(token, "python3", "/opt/codeinterp/driver.py"),
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return nil, fmt.Errorf("create kernel exec: %w", err)
	}
	hj, err := d.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("attach kernel exec: %w", err)
	}
	k := newKernel(created.ID, hj.Conn, hj.Close)
	out, outW := io.Pipe()
	go func() {
		// Ends when the connection is closed, or when the decoder closes out.
		_, err := stdcopy.StdCopy(outW, diagWriter{k}, hj.Reader)
		outW.CloseWithError(cmpErr(err, io.EOF))
	}()
	go k.decode(out)
	stop := k.listen(maxControlLine)
	defer stop()

	select {
	case ev, ok := <-k.events:
		if !ok || ev.Ev != "ready" {
			k.close()
			// Say why: a kill (137) is another process's reset or the memory limit.
			if code, err := d.execExitCode(ctx, created.ID); err == nil {
				return nil, fmt.Errorf("kernel did not start (exit status %d): %s", code, k.diagnostics())
			}
			return nil, fmt.Errorf("kernel did not start: %s", k.diagnostics())
		}
		return k, nil
	case <-ctx.Done():
		k.close()
		return nil, fmt.Errorf("wait for kernel: %w", ctx.Err())
	}
}

// send writes one request line, within ctx. The kernel's input is a pipe: a driver
// that stops reading it (wedged, or frozen by a starved host) would hold the write,
// and with it the sandbox's lock and the caller, for ever. A write that ctx cuts
// short leaves half a line, so the kernel is hung up on then; the caller drops it.
func (k *kernel) send(ctx context.Context, req wireRequest) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, k.close)
	_, err = k.conn.Write(append(b, '\n'))
	if !stop() {
		return fmt.Errorf("write to kernel: not taken in time (%w)", context.Cause(ctx))
	}
	if err != nil {
		return fmt.Errorf("write to kernel: %w", err)
	}
	return nil
}

// sendWithin sends req within d of now, whatever ctx says: a canceled run must still
// be able to send its interrupt.
func (k *kernel) sendWithin(ctx context.Context, d time.Duration, req wireRequest) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	return k.send(ctx, req)
}

// askLocked sends req to the sandbox's kernel, between runs, and returns its answer:
// the first event of type answer carrying req's id, which is random, so the code,
// which shares the kernel's output, cannot answer in its stead. Other events (what
// the code wrote after its run, or forgeries) are skipped. A kernel that ends is
// dropped from the sandbox. The caller holds s.mu.
func (s *Sandbox) askLocked(ctx context.Context, k *kernel, req wireRequest, answer string) (wireEvent, error) {
	stop := k.listen(answerLimit(answer))
	defer stop()
	if err := k.send(ctx, req); err != nil {
		k.close()
		s.kernel = nil
		return wireEvent{}, err
	}
	for {
		select {
		case ev, ok := <-k.events:
			if !ok {
				k.close()
				s.kernel = nil
				return wireEvent{}, fmt.Errorf("the kernel ended: %s", k.diagnostics())
			}
			if ev.Ev == answer && ev.ID == req.ID {
				return ev, nil
			}
		case <-ctx.Done():
			return wireEvent{}, ctx.Err()
		}
	}
}

func (k *kernel) noteDiag(s string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.diag.Len() < 16<<10 {
		k.diag.WriteString(s)
	}
}

func (k *kernel) diagnostics() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.diag.Len() == 0 {
		return "no output"
	}
	return k.diag.String()
}

type diagWriter struct{ k *kernel }

func (w diagWriter) Write(p []byte) (int, error) {
	w.k.noteDiag(string(p))
	return len(p), nil
}

func cmpErr(err, fallback error) error {
	if err == nil {
		return fallback
	}
	return err
}
