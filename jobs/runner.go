package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/storage"
)

// Sandbox is what a run needs of a sandbox; *sandbox.Sandbox provides it.
type Sandbox interface {
	PutFiles(ctx context.Context, files []sandbox.File) error
	Run(ctx context.Context, req sandbox.Request, onEvent func(sandbox.Event)) (sandbox.Outcome, error)
	OpenFile(ctx context.Context, name string) (io.ReadCloser, sandbox.FileInfo, error)
	Remove(ctx context.Context) error
}

// Artifacts is what runs need of storage; *storage.Store provides it.
type Artifacts interface {
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) (storage.Object, error)
	Open(ctx context.Context, key string) (io.ReadCloser, storage.Object, error)
}

// RunnerConfig configures a [Runner].
type RunnerConfig struct {
	Records    *Records
	Artifacts  Artifacts
	NewSandbox func(ctx context.Context, spec sandbox.Spec) (Sandbox, error)
	Limits     sandbox.Limits
	Worker     string // this worker's id, recorded on executions and sandboxes
	MaxLog     int64  // bytes of a full stdout/stderr kept as an artifact; default 64 MiB
	Logger     *slog.Logger
	Now        func() time.Time
}

// Runner is the asynq handler for [TypeRun]: it runs one-off executions, each in a
// fresh sandbox that is removed afterwards.
type Runner struct{ cfg RunnerConfig }

// NewRunner returns a Runner. It does no I/O.
func NewRunner(cfg RunnerConfig) *Runner {
	cfg.MaxLog = cmp.Or(cfg.MaxLog, 64<<20)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Runner{cfg: cfg}
}

// ProcessTask runs the execution named by the task. It returns an error only when the
// run should be retried: the sandbox could not be prepared and the code never started.
func (r *Runner) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var p runPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.ID == "" {
		return fmt.Errorf("bad %s payload %q: %w", t.Type(), t.Payload(), asynq.SkipRetry)
	}
	ex, err := r.cfg.Records.Get(ctx, "", p.ID)
	if errors.Is(err, ErrNotFound) {
		r.cfg.Logger.Warn("execution record gone; dropping task", "execution", p.ID)
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case ex.Status.Terminal():
		return nil // a duplicate delivery
	case ex.Status == Running:
		// An earlier attempt started the code and its worker died. Code is not
		// idempotent, so it is not run again.
		return r.finish(ctx, ex, Failed, &sandbox.Error{
			Name:  "WorkerLost",
			Value: "the worker running this execution stopped before it finished; it was not re-run because the code may already have had effects",
		})
	}
	err = r.run(ctx, ex)
	if err == nil {
		return nil
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	if retried < maxRetry && ctx.Err() == nil {
		return err
	}
	return r.finish(ctx, ex, Failed, sandboxError(err))
}

// run prepares a sandbox and runs ex in it. An error means the code did not start.
func (r *Runner) run(ctx context.Context, ex *Execution) (err error) {
	sb, err := r.cfg.NewSandbox(ctx, sandbox.Spec{
		Tenant: ex.Tenant, Thread: ex.ThreadID, Owner: r.cfg.Worker, Limits: r.cfg.Limits,
	})
	if err != nil {
		return fmt.Errorf("create sandbox: %w", err)
	}
	defer func() {
		// Removal must happen even when the worker is shutting down.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if rerr := sb.Remove(cctx); rerr != nil {
			r.cfg.Logger.Error("remove sandbox", "execution", ex.ID, "err", rerr)
		}
	}()
	if err := r.putInputs(ctx, sb, ex); err != nil {
		return err
	}

	now := r.cfg.Now()
	ex.Status, ex.StartedAt, ex.Worker, ex.Attempt = Running, &now, r.cfg.Worker, ex.Attempt+1
	ok, found, err := r.cfg.Records.Transition(ctx, ex, Queued)
	if err != nil {
		return err
	}
	if !ok {
		r.cfg.Logger.Info("execution no longer queued; not running it", "execution", ex.ID, "status", found)
		return nil
	}
	// From here on the code may run: no error may reach asynq, or it would run twice.
	r.execute(ctx, sb, ex)
	return nil
}

func (r *Runner) putInputs(ctx context.Context, sb Sandbox, ex *Execution) error {
	var files []sandbox.File
	for _, in := range ex.Inputs {
		rc, obj, err := r.cfg.Artifacts.Open(ctx, in.Key)
		if err != nil {
			return fmt.Errorf("open input %s: %w", in.Name, err)
		}
		defer rc.Close()
		files = append(files, sandbox.File{Name: in.Name, Size: obj.Size, Body: rc})
	}
	if err := sb.PutFiles(ctx, files); err != nil {
		return fmt.Errorf("put inputs: %w", err)
	}
	return nil
}

// execute runs the code and records the outcome. It never returns an error: once
// the code may have started, every failure is recorded on the execution.
func (r *Runner) execute(ctx context.Context, sb Sandbox, ex *Execution) {
	stdout, stderr := newSpool(int64(r.limits().Output), r.cfg.MaxLog), newSpool(int64(r.limits().Output), r.cfg.MaxLog)
	defer stdout.close()
	defer stderr.close()
	out, err := sb.Run(ctx, sandbox.Request{
		ID: ex.ID, Language: ex.Language, Code: ex.Code, Env: ex.Env,
		Timeout: time.Duration(ex.TimeoutMS) * time.Millisecond,
	}, func(ev sandbox.Event) {
		switch ev.Kind {
		case sandbox.Stdout:
			stdout.write(ev.Text)
		case sandbox.Stderr:
			stderr.write(ev.Text)
		}
	})
	workerStopped := ctx.Err() != nil // shutting down, or past the task's deadline
	// Record the outcome even if the worker is being stopped.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err != nil {
		_ = r.finish(ctx, ex, Failed, sandboxError(err))
		return
	}
	ex.Stdout, ex.Stderr = out.Stdout, out.Stderr
	ex.StdoutTruncated, ex.StderrTruncated = out.StdoutTruncated, out.StderrTruncated
	ex.Results, ex.ExitCode = out.Results, &out.ExitCode
	ex.Sandbox.KernelRestarted = out.KernelRestarted
	status, failure := Status(out.Status), out.Error
	if workerStopped && out.Status == sandbox.Canceled {
		status, failure = Failed, &sandbox.Error{Name: "WorkerStopped", Value: "the worker stopped while the code ran; the code was interrupted and will not be run again"}
	}
	if err := r.collect(ctx, sb, ex, out.Outputs, stdout, stderr); err != nil {
		status, failure = Failed, sandboxError(err)
	}
	_ = r.finish(ctx, ex, status, failure)
}

func (r *Runner) limits() sandbox.Limits { return r.cfg.Limits.WithDefaults() }

// finish records the end of ex. A record that already ended is left alone.
func (r *Runner) finish(ctx context.Context, ex *Execution, status Status, failure *sandbox.Error) error {
	now := r.cfg.Now()
	ex.Status, ex.Error, ex.FinishedAt = status, failure, &now
	if ex.StartedAt != nil {
		d := now.Sub(*ex.StartedAt).Milliseconds()
		ex.DurationMS = &d
	}
	ok, found, err := r.cfg.Records.Transition(ctx, ex, Queued, Running)
	if err != nil {
		r.cfg.Logger.Error("record execution outcome", "execution", ex.ID, "err", err)
		return err
	}
	if !ok {
		r.cfg.Logger.Info("execution already ended", "execution", ex.ID, "status", found)
	}
	return nil
}

// sandboxError is how a failure of the service itself shows on an execution.
func sandboxError(err error) *sandbox.Error {
	return &sandbox.Error{Name: "SandboxError", Value: err.Error()}
}
