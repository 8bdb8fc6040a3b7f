package worker

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/storage"
)

// SkillSource is where skill archives are read from: the skills' bucket.
type SkillSource interface {
	Open(ctx context.Context, key string) (io.ReadCloser, storage.Object, error)
}

// errSkill marks a skill the user's request cannot have (a failure of the request,
// not of the service): the sandbox's skills/ is the code's own.
type errSkill struct{ err error }

func (e errSkill) Error() string { return e.err.Error() }
func (e errSkill) Unwrap() error { return e.err }

// attachSkills puts ex's skills into sb from the host's cache, skipping those have
// records at the same digest (a warm thread's sandbox: then it costs nothing), and
// records in have what it put. A skill deleted since the execution was accepted is
// left out, with a note.
func (r *Runner) attachSkills(ctx context.Context, sb sandbox.Sandbox, ex *jobs.Execution, have map[string]string) error {
	for _, sk := range ex.Skills {
		if have != nil && have[sk.Name] == sk.Digest {
			continue
		}
		f, err := r.skillCache.open(ctx, sk, func(ctx context.Context) (io.ReadCloser, error) {
			rc, _, err := r.cfg.Skills.Open(ctx, jobs.SkillKey(ex.Tenant, sk.Name, sk.Version))
			return rc, err
		})
		if errors.Is(err, storage.ErrNotFound) {
			ex.Notes = append(ex.Notes, fmt.Sprintf("skill %s was deleted before the run; it is not attached", sk.Ref()))
			continue
		}
		if err != nil {
			return fmt.Errorf("skill %s: %w", sk.Ref(), err)
		}
		err = sb.PutSkill(ctx, sk.Name, f)
		f.Close()
		if errors.Is(err, sandbox.ErrSkillsInUse) {
			return errSkill{err}
		}
		if err != nil {
			return fmt.Errorf("attach skill %s: %w", sk.Ref(), err)
		}
		if have != nil {
			have[sk.Name] = sk.Digest
		}
	}
	return nil
}

// skillFailure is how a failure to attach skills shows on an execution: the user's
// when the sandbox's skills/ was the code's own, the service's otherwise.
func (r *Runner) skillFailure(ex *jobs.Execution, err error) *sandbox.Error {
	var us errSkill
	if errors.As(err, &us) {
		return jobs.ErrSkillError.With(us.Error())
	}
	return r.internalError(ex, err)
}
