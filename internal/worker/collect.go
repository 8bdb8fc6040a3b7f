package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// collect stores the files the run created or changed, and the full stdout/stderr
// when the inline copies were cut, and lists them on ex.
func (r *Runner) collect(ctx context.Context, sb sandbox.Sandbox, ex *jobs.Execution, outputs []string, stdout, stderr *spool) error {
	ex.Files = ex.Files[:0]
	for _, name := range outputs {
		f, err := r.storeOutput(ctx, sb, ex, name)
		if errors.Is(err, sandbox.ErrNoFile) || errors.Is(err, sandbox.ErrNotRegular) {
			continue // gone or replaced by a link since the run reported it
		}
		if err != nil {
			return err
		}
		ex.Files = append(ex.Files, f)
	}
	for _, log := range []struct {
		name      string
		truncated bool
		spool     *spool
	}{{"stdout.log", ex.StdoutTruncated, stdout}, {"stderr.log", ex.StderrTruncated, stderr}} {
		if !log.truncated {
			continue
		}
		f, err := r.store(ctx, ex, log.name, log.spool.open)
		if err != nil {
			return err
		}
		ex.Files = append(ex.Files, f)
	}
	return nil
}

// opener opens an artifact's body afresh for each attempt to store it.
type opener func() (io.ReadCloser, int64, error)

func (r *Runner) storeOutput(ctx context.Context, sb sandbox.Sandbox, ex *jobs.Execution, name string) (jobs.File, error) {
	return r.store(ctx, ex, name, func() (io.ReadCloser, int64, error) {
		rc, info, err := sb.OpenFile(ctx, name)
		return rc, info.Size, err
	})
}

// store puts one artifact, retrying briefly: a storage hiccup should not lose a
// finished run's files.
func (r *Runner) store(ctx context.Context, ex *jobs.Execution, name string, open opener) (jobs.File, error) {
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return jobs.File{}, ctx.Err()
			case <-time.After(time.Duration(attempt) * 500 * time.Millisecond):
			}
		}
		var f jobs.File
		if f, err = r.storeOnce(ctx, ex, name, open); err == nil {
			return f, nil
		}
		if errors.Is(err, sandbox.ErrNoFile) || errors.Is(err, sandbox.ErrNotRegular) {
			return jobs.File{}, err
		}
	}
	return jobs.File{}, fmt.Errorf("store %s: %w", name, err)
}

func (r *Runner) storeOnce(ctx context.Context, ex *jobs.Execution, name string, open opener) (jobs.File, error) {
	body, size, err := open()
	if err != nil {
		return jobs.File{}, err
	}
	defer body.Close()
	ct := contentType(name)
	obj, err := r.cfg.Artifacts.Put(ctx, jobs.ArtifactKey(ex, name), body, size, ct)
	if err != nil {
		return jobs.File{}, err
	}
	return jobs.File{Name: name, Key: obj.Key, Size: obj.Size, ContentType: ct, SHA256: obj.SHA256}, nil
}
