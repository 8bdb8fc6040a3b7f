// Package journal records every operation a process performs on sandboxes, one JSON
// line each, so a fault test can prove from the sandboxes' side that no two workers
// acted on a thread's sandbox at once and that fencing tokens never went back.
//
// A [Journal] decorates a [sandbox.Runtime] (a worker's) or a [sandbox.Host] (a
// janitor's): each call on the runtime, the host or a sandbox they return appends an
// [Entry] once the call returns — for OpenFile and Snapshot once the stream is closed,
// since the sandbox is in use until then. [Check] reads entries back and finds overlaps
// and tokens going down.
//
// It is a test instrument, off unless CODEINTERP_SANDBOX_JOURNAL names a file. It owns
// no runtime and must not import a runtime client, Redis, HTTP or S3.
package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Operations recorded.
const (
	OpCreate      = "create"       // Runtime.Create
	OpCreateBlank = "create_blank" // Runtime.CreateBlank
	OpFind        = "find"         // Runtime.Find: adopting a thread's sandbox (Sandbox empty: none found)
	OpAttach      = "attach"       // Host.Open: a janitor's handle
	OpAssign      = "assign"
	OpFence       = "fence"
	OpRun         = "run"
	OpPut         = "put"
	OpSkill       = "skill"
	OpOpen        = "open" // OpenFile, until the stream is closed
	OpFiles       = "files"
	OpPause       = "pause"
	OpResume      = "resume"
	OpSnapshot    = "snapshot" // until the stream is closed
	OpRestore     = "restore"
	OpRemove      = "remove"
	OpRelease     = "release"
	OpWipe        = "wipe" // Sandbox.Wipe of a recyclable one-off sandbox
)

// Entry is one operation on one sandbox.
type Entry struct {
	Op      string `json:"op"`
	Sandbox string `json:"sandbox,omitempty"` // the runtime's id; empty when none was made or found
	Tenant  string `json:"tenant,omitempty"`  // the thread the sandbox serves, when known
	Thread  string `json:"thread,omitempty"`
	Worker  string `json:"worker"`          // the process acting
	Token   int64  `json:"token,omitempty"` // the fencing token the handle acts under (0: none)
	Run     string `json:"run,omitempty"`   // a run's request id (the execution id)
	Outcome string `json:"outcome,omitempty"`
	Begin   int64  `json:"begin"` // wall clock, Unix ns
	End     int64  `json:"end"`
	Err     string `json:"err,omitempty"`
	Fenced  bool   `json:"fenced,omitempty"` // refused with sandbox.ErrFenced: a stale owner stopped
}

// OK reports whether the operation succeeded.
func (e Entry) OK() bool { return e.Err == "" }

// Journal appends entries to one file. It is safe for concurrent use; each entry is
// one write of one line to a file opened for appending, so a process killed at any
// moment leaves whole lines, and several processes may share a file.
type Journal struct {
	path   string
	worker string
	now    func() time.Time
	// OnError, if set, is told of a failed write (the operation itself goes on).
	OnError func(error)

	mu sync.Mutex
	f  *os.File
}

// New returns a journal of worker's operations appended to path. The file is opened
// on the first entry.
func New(path, worker string) *Journal {
	return &Journal{path: path, worker: worker, now: time.Now}
}

// Close closes the file; later entries open it again.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// pending is an operation under way.
type pending struct {
	j *Journal
	e Entry
}

// begin starts recording an operation; end it with its error.
func (j *Journal) begin(e Entry) *pending {
	e.Worker, e.Begin = j.worker, j.now().UnixNano()
	return &pending{j: j, e: e}
}

func (p *pending) end(err error) {
	p.e.End = p.j.now().UnixNano()
	if err != nil {
		p.e.Err, p.e.Fenced = err.Error(), errors.Is(err, sandbox.ErrFenced)
	}
	p.j.write(p.e)
}

func (j *Journal) write(e Entry) {
	line, err := json.Marshal(e)
	if err == nil {
		err = j.append(append(line, '\n'))
	}
	if err != nil && j.OnError != nil {
		j.OnError(fmt.Errorf("sandbox journal %s: %w", j.path, err))
	}
}

func (j *Journal) append(line []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		j.f = f
	}
	_, err := j.f.Write(line)
	return err
}
