package sandbox

import "time"

// Request is one piece of code to run.
type Request struct {
	ID       string   // unique per run; echoed in the kernel's events
	Language Language // Python (default), Bash or Javascript
	Code     string
	Env      map[string]string
	Timeout  time.Duration // 0: no timeout beyond ctx
	// MaxResults and MaxResultBytes bound the rich results a run keeps and delivers
	// (bytes as [Rich.Size] counts them): the first result past either is dropped
	// with every later one, and the outcome says ResultsTruncated. 0: no bound.
	MaxResults     int
	MaxResultBytes int
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

// Size is what a rich result counts against a run's result budget.
func (r Rich) Size() int { return len(r.Type) + len(r.Text) + len(r.File) }

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
	// ResultsTruncated says results past Request.MaxResults or MaxResultBytes were
	// dropped: Results holds the ones before.
	ResultsTruncated bool
	// Outputs are the files under outputs/ that the run created or changed, as
	// workspace-relative paths. Read them with [Sandbox.OpenFile].
	Outputs []string
	// Workspace lists the regular files in the workspace after the run (at most 1000).
	Workspace []FileInfo
	// KernelRestarted says the kernel had died or been killed since the previous run,
	// so Python state from earlier runs is gone.
	KernelRestarted bool
	// CPUSeconds is the CPU time the code used, as the kernel measured it (0 when the
	// kernel did not say, e.g. after it was killed).
	CPUSeconds float64
	// Notes are short sentences about what the runtime left out: workspace entries
	// not listed (names no path may hold, special files, a walk cut short), reported
	// paths refused.
	Notes []string
}

// ResultBudget admits a run's rich results in order until one would pass a bound:
// that one and every later one are refused, so the results kept are a prefix of those
// produced. Runtimes use it to honour Request.MaxResults and MaxResultBytes.
type ResultBudget struct {
	maxCount, maxBytes int // 0: no bound
	count, bytes       int
	truncated          bool
}

// NewResultBudget returns the budget of at most maxCount results of at most maxBytes
// in all; 0 means no bound.
func NewResultBudget(maxCount, maxBytes int) *ResultBudget {
	return &ResultBudget{maxCount: maxCount, maxBytes: maxBytes}
}

// Admit reports whether r is kept, and counts it if so.
func (b *ResultBudget) Admit(r Rich) bool {
	if b.truncated ||
		(b.maxCount > 0 && b.count+1 > b.maxCount) ||
		(b.maxBytes > 0 && b.bytes+r.Size() > b.maxBytes) {
		b.truncated = true
		return false
	}
	b.count, b.bytes = b.count+1, b.bytes+r.Size()
	return true
}

// Truncated reports whether a result was refused.
func (b *ResultBudget) Truncated() bool { return b.truncated }
