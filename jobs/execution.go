package jobs

import (
	"encoding/json"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Status is where an execution is in its life.
type Status string

// Execution statuses. The last four are terminal.
const (
	Queued    Status = "queued"
	Running   Status = "running"
	Succeeded Status = "succeeded"
	Failed    Status = "failed"
	TimedOut  Status = "timed_out"
	Canceled  Status = "canceled"
)

// Terminal reports whether the execution has ended.
func (s Status) Terminal() bool {
	return s == Succeeded || s == Failed || s == TimedOut || s == Canceled
}

// Kind says what a record is. Thread operations other than code (putting or getting
// a workspace file, deleting the thread) are records too, so they queue in order with
// the thread's executions and reuse their status machinery.
type Kind string

// Record kinds.
const (
	KindExecution    Kind = ""
	KindPutFile      Kind = "put_file"      // Inputs[0] into the workspace
	KindGetFile      Kind = "get_file"      // Path out of the workspace, into Files[0]
	KindDeleteThread Kind = "delete_thread" // remove the sandbox and workspace
	KindPause        Kind = "pause"         // pause an idle sandbox (after a snapshot)
	KindReap         Kind = "reap"          // snapshot an idle sandbox and remove it
	KindReset        Kind = "reset"         // restart the thread's kernel, keep its workspace
)

// Counted reports whether records of kind k count against their tenant's active and
// thread-queue quotas: code and the API's operations do; the service's own (pause,
// reap) never, and neither does a delete, which is how a tenant at its quota frees
// what it holds (it still takes a rate token).
func (k Kind) Counted() bool { return k != KindPause && k != KindReap && k != KindDeleteThread }

// Awaited reports whether the outcome of a record of kind k is read only by the
// caller that waits for it (a file got, a reset, a delete): such records are kept
// briefly (records.Config.OpTTL), and a get nobody waits for any more is canceled.
func (k Kind) Awaited() bool { return k == KindGetFile || k == KindReset || k == KindDeleteThread }

// Execution is the record of one execution: what was asked and what happened. It is
// stored as JSON in Redis; the API shows a view of it.
type Execution struct {
	ID       string           `json:"id"`
	Kind     Kind             `json:"kind,omitempty"`
	Path     string           `json:"path,omitempty"` // KindGetFile: the workspace path wanted
	Tenant   string           `json:"tenant"`
	ThreadID string           `json:"thread_id,omitempty"`
	Language sandbox.Language `json:"language"`
	// Profile names the sandbox profile (Profile) the execution runs in; a
	// thread's items all carry the thread's. Empty in records older than profiles:
	// the default profile.
	Profile string `json:"profile,omitempty"`
	Status  Status `json:"status"`

	// The request.
	Code       string            `json:"code"`
	Env        map[string]string `json:"env,omitempty"`
	Inputs     []Input           `json:"inputs,omitempty"`
	TimeoutMS  int64             `json:"timeout_ms"`
	Metadata   json.RawMessage   `json:"metadata,omitempty"`
	WebhookURL string            `json:"webhook_url,omitempty"`
	Webhook    *WebhookState     `json:"webhook,omitempty"` // delivery, when WebhookURL is set

	// Egress is the network the execution may use: nil, none at all.
	Egress *Network `json:"egress,omitempty"`

	// Skills are the skill versions attached, resolved when the execution was
	// accepted (a thread's attached skills included).
	Skills []Skill `json:"skills,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	Outcome
	Files   []File `json:"files"`
	Attempt int    `json:"attempt,omitempty"` // worker attempts that reached the sandbox
	Worker  string `json:"worker,omitempty"`
}

// Outcome is what happened to an execution, as the record keeps it and the API shows
// it (the View embeds it too).
type Outcome struct {
	Stdout          string         `json:"stdout"`
	Stderr          string         `json:"stderr"`
	StdoutTruncated bool           `json:"stdout_truncated"`
	StderrTruncated bool           `json:"stderr_truncated"`
	Results         []sandbox.Rich `json:"results"`
	// ResultsTruncated says rich results past the worker's budget (a count and a
	// size) were dropped: Results holds the ones before.
	ResultsTruncated bool           `json:"results_truncated"`
	Error            *sandbox.Error `json:"error"`
	ExitCode         *int           `json:"exit_code"`
	Sandbox          SandboxInfo    `json:"sandbox"`
	StartedAt        *time.Time     `json:"started_at"`
	FinishedAt       *time.Time     `json:"finished_at"`
	DurationMS       *int64         `json:"duration_ms"`
	// CPUMS is the CPU time the code used, in milliseconds, as the sandbox's kernel
	// measured it; nil when it did not say (the kernel was killed, or never ran).
	CPUMS *int64 `json:"cpu_ms"`
	// Notes are short sentences about what the service left out or changed: output
	// files not collected, an expired workspace, a record cut to fit.
	Notes []string `json:"notes,omitempty"`
	// Network is the execution's egress ledger: what its code tried to reach through
	// the egress proxy, allowed or not, in order; NetworkTruncated says entries past
	// the ledger's bound were left out. Empty for an execution without egress.
	Network          []EgressEntry `json:"network,omitempty"`
	NetworkTruncated bool          `json:"network_truncated,omitempty"`
}

// DeliveryState is where a webhook delivery is.
type DeliveryState string

// Delivery states.
const (
	DeliveryPending   DeliveryState = "pending"
	DeliveryDelivered DeliveryState = "delivered"
	DeliveryFailed    DeliveryState = "failed"
)

// WebhookState is the delivery state of an execution's webhook.
type WebhookState struct {
	State      DeliveryState `json:"state"`
	Attempts   int           `json:"attempts"`
	LastStatus int           `json:"last_status,omitempty"` // HTTP status of the last attempt
	LastError  string        `json:"last_error,omitempty"`
}

// Input is a file to place in the workspace before the code runs, already stored.
type Input struct {
	Name string `json:"name"` // workspace-relative, clean
	Key  string `json:"key"`  // storage key
	Size int64  `json:"size"`
}

// File is an artifact the execution produced. URLs are presigned when shown.
type File struct {
	Name        string `json:"name"`
	Key         string `json:"key"`
	Size        int64  `json:"size"`
	ContentType string `json:"content_type"`
	SHA256      string `json:"sha256"`
}

// SandboxInfo says how the execution's sandbox was obtained.
type SandboxInfo struct {
	Reused          bool `json:"reused"`
	Resumed         bool `json:"resumed"`
	KernelRestarted bool `json:"kernel_restarted"`
}
