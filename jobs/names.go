package jobs

import "github.com/codeinterp/codeinterp/sandbox"

// ErrorName names a failure the service itself reports on an execution's error (the
// user's own exceptions carry their Python names). Clients and adapters match on them.
type ErrorName string

// Error names set by the service.
const (
	// ErrWorkerLost: the worker running the code died; it is never re-run.
	ErrWorkerLost ErrorName = "WorkerLost"
	// ErrWorkerStopped: the worker stopped while the code ran and interrupted it.
	ErrWorkerStopped ErrorName = "WorkerStopped"
	// ErrSandboxError: the sandbox could not be prepared or broke.
	ErrSandboxError ErrorName = "SandboxError"
	// ErrCanceled: canceled before it started.
	ErrCanceled ErrorName = "Canceled"
	// ErrFileNotFound: a thread file operation found no such regular file.
	ErrFileNotFound ErrorName = "NotFound"
	// ErrSkillError: the execution's skills could not be attached because of the
	// workspace (the code keeps a skills/ of its own).
	ErrSkillError ErrorName = "SkillError"
	// ErrQuotaExceeded: a thread operation went past one of its tenant's quotas
	// (a file read, the bytes stored per day).
	ErrQuotaExceeded ErrorName = "QuotaExceeded"
	// ErrEgressUnavailable: the execution asked for egress and this installation's
	// workers have no egress proxy.
	ErrEgressUnavailable ErrorName = "EgressUnavailable"
)

// With returns an execution error of this name with value as its message.
func (n ErrorName) With(value string) *sandbox.Error {
	return &sandbox.Error{Name: string(n), Value: value}
}

// Is reports whether e is an error of this name.
func (n ErrorName) Is(e *sandbox.Error) bool { return e != nil && e.Name == string(n) }

// SandboxState is the state of a thread's sandbox, as the thread's owner records it
// and GET /v1/threads/{id} shows it.
type SandboxState string

// Sandbox states.
const (
	SandboxRunning SandboxState = "running"
	SandboxPaused  SandboxState = "paused"
	SandboxNone    SandboxState = "none"
)
