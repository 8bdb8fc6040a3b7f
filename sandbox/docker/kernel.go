package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/codeinterp/codeinterp/sandbox"
)

// maxEventLine bounds one JSON line from the kernel. The driver sends stream text in
// chunks of at most 64 KiB, so only forged or broken output comes near it.
const maxEventLine = 8 << 20

// wireEvent is one line the kernel driver writes. See deploy/sandbox/driver.py.
type wireEvent struct {
	Ev        string         `json:"ev"`
	ID        string         `json:"id"`
	PID       int            `json:"pid"`
	Name      string         `json:"name"`
	Text      string         `json:"text"`
	Type      string         `json:"type"`
	File      string         `json:"file"`
	Status    string         `json:"status"`
	ExitCode  int            `json:"exit_code"`
	Error     *sandbox.Error `json:"error"`
	Outputs   []string       `json:"outputs"`
	Workspace []listingEntry `json:"workspace"`
	CPUMS     float64        `json:"cpu_ms"`
}

// listingEntry is one [path, size, mtime in ms] of the driver's workspace listing.
type listingEntry sandbox.FileInfo

func (e *listingEntry) UnmarshalJSON(b []byte) error {
	var raw [3]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	name, _ := raw[0].(string)
	size, _ := raw[1].(float64)
	mtime, _ := raw[2].(float64)
	*e = listingEntry{Name: name, Size: int64(size), ModTime: time.UnixMilli(int64(mtime)).UTC()}
	return nil
}

// wireRequest is one line sent to the kernel driver.
type wireRequest struct {
	Op       string            `json:"op"`
	ID       string            `json:"id,omitempty"`
	Language string            `json:"language,omitempty"`
	Code     string            `json:"code,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
}

// kernel is a running driver process, attached through a `docker exec` stream.
type kernel struct {
	execID string
	conn   io.WriteCloser
	close  func()
	events chan wireEvent // closed when the driver's stdout ends
	pid    int

	mu   sync.Mutex
	diag bytes.Buffer // the driver's own stderr, kept for error messages
}

// startKernel execs the driver in a running sandbox and waits for it to say ready.
func (d *Runtime) startKernel(ctx context.Context, containerID string, preload bool) (*kernel, error) {
	env := []string{}
	if preload {
		env = append(env, "CODEINTERP_PRELOAD=1")
	}
	created, err := d.cli.ContainerExecCreate(ctx, containerID, container.ExecOptions{
		User:         codeUser,
		WorkingDir:   "/workspace",
		Env:          env,
		Cmd:          []string{"python3", "/opt/codeinterp/driver.py"},
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
	k := &kernel{execID: created.ID, conn: hj.Conn, close: hj.Close, events: make(chan wireEvent, 64)}
	out, outW := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(outW, diagWriter{k}, hj.Reader)
		outW.CloseWithError(cmpErr(err, io.EOF))
	}()
	go k.decode(out)

	select {
	case ev, ok := <-k.events:
		if !ok || ev.Ev != "ready" {
			hj.Close()
			return nil, fmt.Errorf("kernel did not start: %s", k.diagnostics())
		}
		k.pid = ev.PID
		return k, nil
	case <-ctx.Done():
		hj.Close()
		return nil, fmt.Errorf("wait for kernel: %w", ctx.Err())
	}
}

func (k *kernel) decode(r io.Reader) {
	defer close(k.events)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, maxEventLine)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				k.noteDiag("kernel stream: " + err.Error())
			}
			return
		}
		var ev wireEvent
		if json.Unmarshal(line, &ev) != nil {
			continue // not ours: the code wrote to the protocol descriptor
		}
		k.events <- ev
	}
}

// readLine reads one newline-terminated line of at most max bytes.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, fmt.Errorf("event line longer than %d bytes", max)
		}
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

func (k *kernel) send(req wireRequest) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := k.conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write to kernel: %w", err)
	}
	return nil
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
