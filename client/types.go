package client

import (
	"encoding/base64"
	"encoding/json"
	"time"
)

// RunRequest is code to run. See the API reference for limits.
type RunRequest struct {
	ThreadID       string // empty: a one-off sandbox
	Language       string // "python" (default) or "bash"
	Profile        string // sandbox profile; empty: the thread's, else the tenant's default
	Code           string
	Files          []InputFile
	TimeoutMS      int
	Env            map[string]string
	WebhookURL     string
	Metadata       any
	IdempotencyKey string // makes retrying the submission safe
}

// InputFile is a file placed in the workspace before the code runs: inline Content,
// or an Object returned by Upload.
type InputFile struct {
	Name    string
	Content []byte
	Object  string
}

func (r RunRequest) body() map[string]any {
	b := map[string]any{"code": r.Code}
	if r.ThreadID != "" {
		b["thread_id"] = r.ThreadID
	}
	if r.Language != "" {
		b["language"] = r.Language
	}
	if r.Profile != "" {
		b["profile"] = r.Profile
	}
	if r.TimeoutMS > 0 {
		b["timeout_ms"] = r.TimeoutMS
	}
	if len(r.Env) > 0 {
		b["env"] = r.Env
	}
	if r.WebhookURL != "" {
		b["webhook_url"] = r.WebhookURL
	}
	if r.Metadata != nil {
		b["metadata"] = r.Metadata
	}
	var files []map[string]string
	for _, f := range r.Files {
		if f.Object != "" {
			files = append(files, map[string]string{"name": f.Name, "object": f.Object})
		} else {
			files = append(files, map[string]string{"name": f.Name, "content_base64": base64.StdEncoding.EncodeToString(f.Content)})
		}
	}
	if files != nil {
		b["files"] = files
	}
	return b
}

// Execution is an execution as the API shows it.
type Execution struct {
	ID              string   `json:"id"`
	ThreadID        *string  `json:"thread_id"`
	Language        string   `json:"language"`
	Profile         string   `json:"profile"`
	Status          string   `json:"status"`
	Stdout          string   `json:"stdout"`
	Stderr          string   `json:"stderr"`
	StdoutTruncated bool     `json:"stdout_truncated"`
	StderrTruncated bool     `json:"stderr_truncated"`
	Results         []Result `json:"results"`
	// ResultsTruncated: results past the per-execution budget were dropped.
	ResultsTruncated bool        `json:"results_truncated"`
	Error            *ExecError  `json:"error"`
	ExitCode         *int        `json:"exit_code"`
	Files            []File      `json:"files"`
	Sandbox          SandboxInfo `json:"sandbox"`
	CreatedAt        time.Time   `json:"created_at"`
	StartedAt        *time.Time  `json:"started_at"`
	FinishedAt       *time.Time  `json:"finished_at"`
	DurationMS       *int64      `json:"duration_ms"`
	CPUMS            *int64      `json:"cpu_ms"` // CPU time of the code
	// Notes say what the service left out or changed (files not collected, …).
	Notes    []string        `json:"notes,omitempty"`
	Metadata json.RawMessage `json:"metadata"`
	Webhook  *WebhookState   `json:"webhook,omitempty"`
}

// Done reports whether the execution has ended.
func (e *Execution) Done() bool {
	switch e.Status {
	case "succeeded", "failed", "timed_out", "canceled":
		return true
	}
	return false
}

// Result is a rich output: a value's text/plain or text/html form, or an image file.
type Result struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	File string `json:"file,omitempty"`
}

// ExecError is why the code failed.
type ExecError struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback"`
}

// File is a file the code produced, downloadable from URL until ExpiresAt.
type File struct {
	Name        string    `json:"name"`
	Size        int64     `json:"size"`
	ContentType string    `json:"content_type"`
	SHA256      string    `json:"sha256"`
	URL         string    `json:"url"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// SandboxInfo says how the execution's sandbox was obtained.
type SandboxInfo struct {
	Reused          bool `json:"reused"`
	Resumed         bool `json:"resumed"`
	KernelRestarted bool `json:"kernel_restarted"`
}

// WebhookState is the delivery state of an execution's webhook.
type WebhookState struct {
	State      string `json:"state"`
	Attempts   int    `json:"attempts"`
	LastStatus int    `json:"last_status"`
	LastError  string `json:"last_error"`
}

// ListOptions filters List.
type ListOptions struct {
	ThreadID, Status, Cursor string
	Limit                    int
}

// Page is one page of List.
type Page struct {
	Items      []Execution `json:"items"`
	NextCursor string      `json:"next_cursor"`
}

// Thread is a thread as the API shows it.
type Thread struct {
	ID           string       `json:"id"`
	Sandbox      string       `json:"sandbox"`
	LastActiveAt *time.Time   `json:"last_active_at"`
	Queued       int          `json:"queued"`
	Files        []ThreadFile `json:"files"`
}

// ThreadFile is a file in a thread's workspace.
type ThreadFile struct {
	Name       string    `json:"name"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
}

// ThreadSummary is an entry of Threads.
type ThreadSummary struct {
	ID           string    `json:"id"`
	LastActiveAt time.Time `json:"last_active_at"`
}

// Upload is a file stored with Upload, to reference from executions.
type Upload struct {
	Object    string    `json:"object"`
	Size      int64     `json:"size"`
	SHA256    string    `json:"sha256"`
	ExpiresAt time.Time `json:"expires_at"`
}

// StoredFile is a file put into a thread's workspace.
type StoredFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}
