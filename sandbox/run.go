package sandbox

import "time"

// Request is one piece of code to run.
type Request struct {
	ID       string   // unique per run; echoed in the kernel's events
	Language Language // Python (default) or Bash
	Code     string
	Env      map[string]string
	Timeout  time.Duration // 0: no timeout beyond ctx
}

// Status is how a run ended.
type Status string

// Run outcomes. Every one of them is a result, not an error: errors are kept for
// failures of the service itself.
const (
	Succeeded Status = "succeeded"
	Failed    Status = "failed"
	TimedOut  Status = "timed_out"
	Canceled  Status = "canceled"
)

// Error describes why the user's code failed.
type Error struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback"`
}

// Rich is one rich output, as a notebook shows it. Images are files in the workspace.
type Rich struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	File string `json:"file,omitempty"`
}

// EventKind says what an [Event] carries.
type EventKind string

// Event kinds streamed while code runs.
const (
	Stdout EventKind = "stdout"
	Stderr EventKind = "stderr"
	Result EventKind = "result"
)

// Event is output produced while code runs, delivered in order.
type Event struct {
	Kind EventKind
	Text string // Stdout, Stderr
	Rich Rich   // Result
}

// Outcome is what a run produced, besides its streamed events.
type Outcome struct {
	Status   Status
	ExitCode int
	Error    *Error
	// Stdout and Stderr hold the first Limits.Output bytes of each stream; the whole
	// streams are delivered as events.
	Stdout, Stderr                   string
	StdoutTruncated, StderrTruncated bool
	Results                          []Rich
	// Outputs are the files under outputs/ that the run created or changed, as
	// workspace-relative paths. Read them with [Sandbox.OpenFile].
	Outputs []string
	// Workspace lists the regular files in the workspace after the run (at most 1000).
	Workspace []FileInfo
	// KernelRestarted says the kernel had died or been killed since the previous run,
	// so Python state from earlier runs is gone.
	KernelRestarted bool
}
