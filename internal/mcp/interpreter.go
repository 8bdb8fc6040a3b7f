package mcp

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codeinterp/codeinterp/internal/service"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// runInput is code_interpreter's arguments.
type runInput struct {
	Code     string      `json:"code" jsonschema:"The code to run. In Python the value of the last expression is shown, as in a notebook cell; print() what else you want to see."`
	Language string      `json:"language,omitempty" jsonschema:"python (the default), bash or javascript (Node.js). All run in the same workspace; javascript starts a fresh process each call, so only its files persist."`
	ThreadID string      `json:"thread_id,omitempty" jsonschema:"The thread (sandbox) to run in. Leave it out to use this session's own thread, which keeps variables and files between calls. Give an id to share a thread across sessions."`
	Files    []inputFile `json:"files,omitempty" jsonschema:"Files to put into the working directory before the code runs."`
	Profile  string      `json:"profile,omitempty" jsonschema:"The sandbox profile (size and image) to run in, as GET /v1/runtimes lists them; leave it out for your default. A thread keeps the profile it started with."`
	Skills   []string    `json:"skills,omitempty" jsonschema:"Skills to attach, read-only under skills/<name>/: a name (its latest version) or name@version, uploaded earlier with POST /v1/skills. A thread keeps them for later calls."`
	TimeoutS float64     `json:"timeout_s,omitempty" jsonschema:"Seconds the code may run before it is stopped (the default is the service's, usually 30)."`
}

// inputFile is a file to put in the workspace: inline, an earlier upload, or a URL.
type inputFile struct {
	Name          string  `json:"name" jsonschema:"Where to put the file, relative to the working directory, e.g. data.csv or inputs/sales.xlsx."`
	ContentBase64 *string `json:"content_base64,omitempty" jsonschema:"The file's bytes, base64-encoded."`
	Object        string  `json:"object,omitempty" jsonschema:"Instead of content_base64: an upload made earlier through the HTTP API (POST /v1/files), as it answered: uploads/..."`
	URL           string  `json:"url,omitempty" jsonschema:"Instead of content_base64: a public http(s) URL the service downloads the file from (no redirects; internal addresses are refused)."`
}

// execution is code_interpreter's structured result: the whole execution.
type execution struct {
	ExecutionID     string       `json:"execution_id"`
	ThreadID        string       `json:"thread_id" jsonschema:"The thread the code ran in; pass it as thread_id to continue there from another session."`
	Status          string       `json:"status" jsonschema:"succeeded, failed (an exception or a non-zero exit), timed_out or canceled"`
	Stdout          string       `json:"stdout"`
	Stderr          string       `json:"stderr"`
	StdoutTruncated bool         `json:"stdout_truncated,omitempty" jsonschema:"stdout is cut; the whole of it is the file stdout.log"`
	StderrTruncated bool         `json:"stderr_truncated,omitempty" jsonschema:"stderr is cut; the whole of it is the file stderr.log"`
	Results         []richResult `json:"results" jsonschema:"Rich results: the last expression's value (text/plain, text/html) and figures (image/png, a file)."`
	Error           *execError   `json:"error,omitempty"`
	ExitCode        *int         `json:"exit_code,omitempty"`
	DurationMS      *int64       `json:"duration_ms,omitempty"`
	KernelRestarted bool         `json:"kernel_restarted" jsonschema:"The interpreter started afresh for this run: variables from earlier runs are gone (files stay)."`
	Files           []fileLink   `json:"files" jsonschema:"Files the code wrote under outputs/ (and the whole logs when cut), with download URLs."`
	Notes           []string     `json:"notes,omitempty"`
}

type richResult struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	File string `json:"file,omitempty"`
}

type execError struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback,omitempty"`
}

type fileLink struct {
	Name        string    `json:"name"`
	Size        int64     `json:"size"`
	ContentType string    `json:"content_type"`
	SHA256      string    `json:"sha256,omitempty"`
	URL         string    `json:"url" jsonschema:"A presigned download URL."`
	ExpiresAt   time.Time `json:"expires_at"`
}

const interpreterDescription = `Run Python, bash or JavaScript (Node.js) code in a sandboxed, stateful interpreter, like a Jupyter notebook: variables, imports and files persist across calls in this session. Python comes with numpy, pandas and matplotlib; there is no network access.

Returns stdout and stderr as text (long output keeps its beginning and end), the value of the last expression, each matplotlib figure as an image (plt.show() or leaving a figure open is enough), and each file written under outputs/ as a download link. If the code raises an exception or times out, the result is an error carrying the traceback: fix the code and call again; earlier state is still there.`

// serviceFaults are the error names of executions the service failed, not the code.
var serviceFaults = map[string]bool{
	string(jobs.ErrWorkerLost): true, string(jobs.ErrWorkerStopped): true, string(jobs.ErrSandboxError): true,
}

func (s *server) addInterpreter(srv *mcp.Server) {
	in, err := jsonschema.For[runInput](nil)
	if err != nil {
		panic(err)
	}
	var langs []any
	for _, l := range sandbox.Languages {
		langs = append(langs, string(l))
	}
	in.Properties["language"].Enum = langs
	in.Properties["timeout_s"].ExclusiveMinimum = ptr(0.0)
	mcp.AddTool(srv, &mcp.Tool{Name: "code_interpreter", Title: "Code interpreter", Description: interpreterDescription, InputSchema: in,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(false)}}, s.interpret)
}

func ptr[T any](v T) *T { return &v }

// interpret is code_interpreter: submit, report progress while the execution waits
// and runs, then shape its result for a model. Canceling the call cancels the
// execution.
func (s *server) interpret(ctx context.Context, req *mcp.CallToolRequest, in runInput) (*mcp.CallToolResult, *execution, error) {
	tenant, thread, err := target(req, in.ThreadID)
	if err != nil {
		return nil, nil, err
	}
	sub := service.SubmitRequest{ThreadID: &thread, Language: sandbox.Language(in.Language), Code: &in.Code,
		Profile: in.Profile, Skills: in.Skills}
	if in.TimeoutS != 0 {
		// Out of range stays out of range (the service says so, naming the limit):
		// converting a float64 past int64 gives anything.
		ms := int64(-1)
		if in.TimeoutS > 0 && in.TimeoutS < 1e9 {
			ms = int64(math.Ceil(in.TimeoutS * 1000))
		}
		sub.TimeoutMS = &ms
	}
	for _, f := range in.Files {
		sub.Files = append(sub.Files, service.InputFile{Name: f.Name, ContentBase64: f.ContentBase64, Object: f.Object, URL: f.URL})
	}
	ex, err := s.svc.Submit(ctx, tenant, sub, service.Idempotency{})
	if err != nil {
		return nil, nil, s.callError("code_interpreter", err)
	}
	ex, err = s.await(ctx, req, tenant, ex)
	if err != nil {
		if ctx.Err() != nil {
			// The client canceled the call (or went away): cancel the execution too.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if _, cerr := s.svc.Cancel(cctx, tenant, ex.ID); cerr != nil {
				s.log.Warn("cancel execution of a canceled tool call", "execution", ex.ID, "err", cerr)
			}
			return nil, nil, ctx.Err()
		}
		return nil, nil, s.callError("code_interpreter", err)
	}
	if !ex.Status.Terminal() {
		return nil, nil, fmt.Errorf("execution %s is still %s after %s; it goes on: interrupt it, or run more code after it", ex.ID, ex.Status, s.maxWait(ex))
	}
	if ex.Error != nil && serviceFaults[ex.Error.Name] {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("the service failed to run execution %s (%s: %s); run it again", ex.ID, ex.Error.Name, ex.Error.Value)}
	}
	view, err := s.svc.Render(ctx, ex)
	if err != nil {
		return nil, nil, s.callError("code_interpreter", err)
	}
	out := structured(view, thread)
	res := &mcp.CallToolResult{Content: s.content(ctx, ex, view), IsError: ex.Status != jobs.Succeeded}
	return res, out, nil
}

func (s *server) maxWait(ex *jobs.Execution) time.Duration {
	return time.Duration(ex.TimeoutMS)*time.Millisecond + s.cfg.MaxWait
}

// await waits for the execution to end, sending a progress notification every
// Progress while it waits if the client asked for them: its place in the thread's
// queue while queued, the time it has run while running.
func (s *server) await(ctx context.Context, req *mcp.CallToolRequest, tenant string, ex *jobs.Execution) (*jobs.Execution, error) {
	token := req.Params.GetProgressToken()
	deadline := time.Now().Add(s.maxWait(ex))
	var step float64
	for !ex.Status.Terminal() && time.Now().Before(deadline) {
		if token != nil {
			step++
			msg := s.progressMessage(ctx, ex)
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: step, Message: msg}); err != nil {
				s.log.Debug("progress notification", "execution", ex.ID, "err", err)
			}
		}
		next, err := s.svc.Get(ctx, tenant, ex.ID, min(s.cfg.Progress, time.Until(deadline)))
		if err != nil {
			return ex, err
		}
		ex = next
	}
	return ex, nil
}

func (s *server) progressMessage(ctx context.Context, ex *jobs.Execution) string {
	if ex.Status == jobs.Running && ex.StartedAt != nil {
		return fmt.Sprintf("running for %.1f s", time.Since(*ex.StartedAt).Seconds())
	}
	pos, err := s.svc.Position(ctx, ex)
	switch {
	case err != nil || pos < 0:
		return "queued"
	case pos == 0:
		return "queued: next on its thread (queue position 0)"
	}
	return fmt.Sprintf("queued: %d ahead on its thread (queue position %d)", pos, pos)
}

// structured is the execution as the tool's structured result.
func structured(v *jobs.View, thread string) *execution {
	out := &execution{ExecutionID: v.ID, ThreadID: thread, Status: string(v.Status), Stdout: v.Stdout, Stderr: v.Stderr,
		StdoutTruncated: v.StdoutTruncated, StderrTruncated: v.StderrTruncated, ExitCode: v.ExitCode, DurationMS: v.DurationMS,
		KernelRestarted: v.Sandbox.KernelRestarted, Notes: v.Notes, Results: []richResult{}, Files: []fileLink{}}
	for _, r := range v.Results {
		out.Results = append(out.Results, richResult{Type: r.Type, Text: r.Text, File: r.File})
	}
	if v.Error != nil {
		out.Error = &execError{Name: v.Error.Name, Value: v.Error.Value, Traceback: v.Error.Traceback}
	}
	for _, f := range v.Files {
		out.Files = append(out.Files, fileLink{Name: f.Name, Size: f.Size, ContentType: f.ContentType, SHA256: f.SHA256, URL: f.URL, ExpiresAt: f.ExpiresAt})
	}
	return out
}
