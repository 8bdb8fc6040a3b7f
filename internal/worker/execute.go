package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// start marks ex running, if it is still queued (not canceled meanwhile).
func (r *Runner) start(ctx context.Context, ex *jobs.Execution) (bool, error) {
	now := r.cfg.Now()
	ex.Status, ex.StartedAt, ex.Worker, ex.Attempt = jobs.Running, &now, r.cfg.Worker, ex.Attempt+1
	ok, found, err := r.transition(ctx, ex, jobs.Queued)
	if err != nil {
		return false, err
	}
	if !ok {
		r.cfg.Logger.Info("execution no longer queued; not running it", "execution", ex.ID, "status", found)
	}
	return ok, nil
}

// execute runs the code and records the outcome; once the code may have started,
// every failure is recorded on the execution. before, if not nil, sees the outcome
// just before it is recorded (and a waiting client told). The error it returns says
// only that the sandbox itself broke, so the caller should not use it again.
func (r *Runner) execute(ctx context.Context, sb sandbox.Sandbox, ex *jobs.Execution, before func(context.Context, sandbox.Outcome)) (sandbox.Outcome, error) {
	ctx, done := r.track(ctx, ex.ID)
	defer done()
	lim, b := r.sizeOf(ex)
	stdout, stderr := newSpool(int64(lim.Output), r.cfg.MaxLog), newSpool(int64(lim.Output), r.cfg.MaxLog)
	defer stdout.close()
	defer stderr.close()
	events := r.newStream(ctx, ex)
	// The runtime keeps results within the request's bounds; so does the worker, whatever
	// the runtime does.
	results := sandbox.NewResultBudget(b.MaxResults, b.MaxResultBytes)
	out, err := sb.Run(ctx, sandbox.Request{
		ID: ex.ID, Language: ex.Language, Code: ex.Code, Env: ex.Env,
		Timeout:    time.Duration(ex.TimeoutMS) * time.Millisecond,
		MaxResults: b.MaxResults, MaxResultBytes: b.MaxResultBytes,
	}, func(ev sandbox.Event) {
		switch ev.Kind {
		case sandbox.Stdout:
			stdout.write(ev.Text)
			events.text(jobs.EventStdout, ev.Text)
		case sandbox.Stderr:
			stderr.write(ev.Text)
			events.text(jobs.EventStderr, ev.Text)
		case sandbox.Result:
			if ev.Rich.Valid() && results.Admit(ev.Rich) {
				events.result(ev.Rich)
			}
		}
	})
	// Whatever the runtime checked, the outcome comes from the user's process: check it
	// again (paths, sizes, counts, exit code, error sizes).
	out = out.Clean()
	// A canceled run was canceled by its user, unless the worker is stopping (or the
	// task ran past its deadline).
	workerStopped := ctx.Err() != nil && !errors.Is(context.Cause(ctx), errUserCanceled)
	// Record the outcome even if the worker is being stopped.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err != nil {
		_ = r.finish(ctx, ex, jobs.Failed, r.internalError(ex, err))
		return out, err
	}
	ex.Stdout, ex.Stderr = out.Stdout, out.Stderr
	ex.StdoutTruncated, ex.StderrTruncated = out.StdoutTruncated, out.StderrTruncated
	ex.Results, ex.ResultsTruncated = keepResults(out.Results, b)
	ex.ResultsTruncated = ex.ResultsTruncated || out.ResultsTruncated
	ex.ExitCode = &out.ExitCode
	if out.CPUSeconds > 0 {
		ms := int64(out.CPUSeconds * 1000)
		ex.CPUMS = &ms
	}
	ex.Sandbox.KernelRestarted = ex.Sandbox.KernelRestarted || out.KernelRestarted
	ex.Notes = append(ex.Notes, out.Notes...)
	status, failure := jobs.Status(out.Status), out.Error
	if workerStopped && out.Status == sandbox.Canceled {
		status, failure = jobs.Failed, jobs.ErrWorkerStopped.With("the worker stopped while the code ran; the code was interrupted and will not be run again")
	}
	// Fit the record before collecting: inline output cut to fit is then stored whole
	// as a log, like output cut at the inline cap. Room is left for the files' list.
	fitRecord(ex, b.MaxRecordBytes-min(b.MaxRecordBytes/4, recordReserve))
	if err := r.collect(ctx, sb, ex, out, stdout, stderr); err != nil {
		status, failure = jobs.Failed, r.internalError(ex, err)
	}
	for _, f := range ex.Files {
		r.publish(ctx, ex, jobs.EventFile, map[string]any{"name": f.Name, "size": f.Size, "content_type": f.ContentType, "sha256": f.SHA256})
	}
	if before != nil {
		before(ctx, out)
	}
	_ = r.finish(ctx, ex, status, failure)
	return out, nil
}

func (r *Runner) putInputs(ctx context.Context, sb sandbox.Sandbox, ex *jobs.Execution) error {
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

// publish streams an event of a running execution. Streaming is best effort: the
// record, not the stream, is the source of truth.
func (r *Runner) publish(ctx context.Context, ex *jobs.Execution, typ jobs.EventType, data any) {
	if err := r.cfg.Records.Publish(context.WithoutCancel(ctx), ex.ID, typ, data); err != nil {
		r.cfg.Logger.Warn("stream event", "execution", ex.ID, "err", err)
	}
}

// keepResults returns the results within the budgets, and whether any were dropped.
func keepResults(rs []sandbox.Rich, b Budgets) ([]sandbox.Rich, bool) {
	budget := sandbox.NewResultBudget(b.MaxResults, b.MaxResultBytes)
	for i, r := range rs {
		if !budget.Admit(r) {
			return rs[:i], true
		}
	}
	return rs, false
}
