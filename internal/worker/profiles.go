package worker

import (
	"cmp"
	"context"
	"fmt"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// profileOf returns the profile called name ("": the default profile, as in records
// older than profiles). A name this worker's configuration does not know is an
// error: the API and the workers disagree on the profiles.
func (r *Runner) profileOf(name string) (jobs.Profile, error) {
	p, ok := r.cfg.Profiles.Get(cmp.Or(name, jobs.DefaultProfile))
	if !ok {
		return jobs.Profile{}, fmt.Errorf("profile %q is not configured on worker %s", name, r.cfg.Worker)
	}
	return p, nil
}

// sizeOf returns the limits of ex's sandbox and the budgets that follow from them;
// an unknown profile gets the default profile's (ex never got a sandbox then).
func (r *Runner) sizeOf(ex *jobs.Execution) (sandbox.Limits, Budgets) {
	p, err := r.profileOf(ex.Profile)
	if err != nil {
		p = r.cfg.Profiles.Default()
	}
	l := p.Limits.WithDefaults()
	return l, r.budgets.withDefaults(l)
}

// threadProfile returns the profile of thread th: the one it was created with, which
// its items name and the API records with the thread.
func (r *Runner) threadProfile(ctx context.Context, th *thread) (jobs.Profile, error) {
	name, err := r.cfg.Records.ThreadProfile(ctx, th.key)
	if err != nil {
		return jobs.Profile{}, err
	}
	return r.profileOf(name)
}

// ManifestReader reads what a sandbox image holds; *docker.Runtime provides it.
type ManifestReader interface {
	// Manifest returns the image's manifest, or nil, nil if it has none.
	Manifest(ctx context.Context, image string) (*sandbox.Manifest, error)
}
