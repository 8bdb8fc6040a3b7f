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
// when the inline copies were cut, and lists them on ex. The outputs are read in one
// pass (one round trip to the sandbox, none when the run wrote none). An output file
// larger than the workspace (only a sparse file can be) is skipped, and so is every
// file past Budgets.CollectBytes in all, and one whose storage key would be invalid
// (a name too long); ex.Notes says which. The outcome's paths come from the user's
// process: they are clean workspace paths (out was cleaned), and the sandbox reads
// them without following links.
func (r *Runner) collect(ctx context.Context, sb sandbox.Sandbox, ex *jobs.Execution, out sandbox.Outcome, stdout, stderr *spool) error {
	ex.Files = ex.Files[:0]
	lim, b := r.sizeOf(ex)
	c := collection{workspace: lim.Workspace, left: b.CollectBytes}
	if why := r.storedSpent(ctx, ex.Tenant); why != "" {
		for _, name := range out.Outputs {
			c.skip(name, why)
		}
		if ex.StdoutTruncated {
			c.skip("stdout.log", why)
		}
		if ex.StderrTruncated {
			c.skip("stderr.log", why)
		}
		ex.Notes = append(ex.Notes, c.notes()...)
		return nil
	}
	defer func() { r.countStored(ctx, ex.Tenant, ex.Files) }()
	var names []string
	for _, name := range out.Outputs {
		if err := jobs.CheckKey(jobs.ArtifactKey(ex, name)); err != nil {
			c.skip(name, "its storage key would be invalid ("+err.Error()+")")
			continue
		}
		names = append(names, name)
	}
	if err := r.collectOutputs(ctx, sb, ex, names, &c); err != nil {
		return err
	}
	ex.Notes = append(ex.Notes, c.notes()...)
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

// collectOutputs stores the named output files, read from the sandbox in one pass;
// a file whose store failed is read again, alone, for the retries of store.
func (r *Runner) collectOutputs(ctx context.Context, sb sandbox.Sandbox, ex *jobs.Execution, names []string, c *collection) error {
	if len(names) == 0 {
		return nil
	}
	var again []string
	err := sb.ReadFiles(ctx, names, sandbox.ReadLimits{Each: c.workspace, Total: max(c.left, 1)}, func(info sandbox.FileInfo, body io.Reader, err error) error {
		switch {
		case errors.Is(err, sandbox.ErrTooLarge):
			if c.fits(info.Name, info.Size) { // the sandbox held it back for a reason of its own
				c.skip(info.Name, "not read")
			}
			return nil
		case err != nil:
			return nil // gone, or replaced by a link or a FIFO, since the run reported it
		case !c.fits(info.Name, info.Size):
			return nil
		}
		f, err := r.storeOnce(ctx, ex, info.Name, func() (io.ReadCloser, int64, error) { return io.NopCloser(body), info.Size, nil })
		if err != nil {
			again = append(again, info.Name)
			return nil
		}
		c.left -= f.Size
		ex.Files = append(ex.Files, f)
		return nil
	})
	if err != nil {
		return err
	}
	for _, name := range again {
		f, err := r.storeOutput(ctx, sb, ex, name, c.fits)
		if errors.Is(err, sandbox.ErrNoFile) || errors.Is(err, sandbox.ErrNotRegular) || errors.Is(err, errSkipped) {
			continue
		}
		if err != nil {
			return err
		}
		c.left -= f.Size
		ex.Files = append(ex.Files, f)
	}
	return nil
}

// maxSkipNotes bounds the notes about skipped output files; one more sums up the rest.
const maxSkipNotes = 10

// collection is what one run's output collection may still store, and what it skipped.
type collection struct {
	workspace, left int64
	skipped         []string // a note per skipped file
}

// fits reports whether an output file of size bytes may be stored, noting why not.
func (c *collection) fits(name string, size int64) bool {
	switch {
	case size > c.workspace:
		c.skip(name, fmt.Sprintf("%d bytes, over the %d-byte workspace", size, c.workspace))
	case size > c.left:
		c.skip(name, fmt.Sprintf("%d bytes, over the %d bytes left of what one run may collect", size, max(c.left, 0)))
	default:
		return true
	}
	return false
}

// skip notes that an output file is not stored, and why.
func (c *collection) skip(name, why string) {
	if len(name) > maxNoteName { // a name may take 1 KiB; the note need not
		name = prefix(name, maxNoteName) + "…"
	}
	c.skipped = append(c.skipped, name+" skipped: "+why)
}

// maxNoteName bounds a file name in a note.
const maxNoteName = 200

func (c *collection) notes() []string {
	if len(c.skipped) <= maxSkipNotes {
		return c.skipped
	}
	return append(c.skipped[:maxSkipNotes:maxSkipNotes], fmt.Sprintf("%d more output files skipped", len(c.skipped)-maxSkipNotes))
}

// opener opens an artifact's body afresh for each attempt to store it.
type opener func() (io.ReadCloser, int64, error)

// errSkipped means a file was not stored because fits refused its size.
var errSkipped = errors.New("file skipped")

// storeOutput stores a workspace file, unless fits refuses its size.
func (r *Runner) storeOutput(ctx context.Context, sb sandbox.Sandbox, ex *jobs.Execution, name string, fits func(name string, size int64) bool) (jobs.File, error) {
	return r.store(ctx, ex, name, func() (io.ReadCloser, int64, error) {
		rc, info, err := sb.OpenFile(ctx, name)
		if err == nil && !fits(name, info.Size) {
			rc.Close()
			return nil, 0, errSkipped
		}
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
		if errors.Is(err, sandbox.ErrNoFile) || errors.Is(err, sandbox.ErrNotRegular) || errors.Is(err, errSkipped) {
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
