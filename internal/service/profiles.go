package service

import (
	"context"
	"errors"
	"sort"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/sandbox"
)

// profile returns the profile a submission runs in: a thread's own (a thread keeps
// the profile it was created with), else the one named, else the tenant's default.
// A profile that does not exist and one the tenant may not use get the same answer,
// so a tenant learns nothing of other tenants' profiles.
func (s *Service) profile(ctx context.Context, tenant, name, thread string) (jobs.Profile, error) {
	if name != "" && !s.cfg.Profiles.Allowed(tenant, name) {
		if len(name) > 32 {
			name = name[:32] + "…"
		}
		return jobs.Profile{}, Invalid("profile", "unknown profile %q, or not one this tenant may use (GET /v1/runtimes lists yours)", name)
	}
	if thread != "" {
		if err := ValidThread("thread_id", thread); err != nil {
			return jobs.Profile{}, err
		}
		cur, err := s.cfg.Records.ThreadProfile(ctx, jobs.NewThreadKey(tenant, thread))
		if err != nil {
			return jobs.Profile{}, err
		}
		if cur != "" {
			if name != "" && name != cur {
				return jobs.Profile{}, threadProfileError(thread, cur)
			}
			name = cur
		}
	}
	if name == "" {
		name = s.cfg.Profiles.TenantDefault(tenant)
	}
	p, ok := s.cfg.Profiles.Get(name)
	if !ok {
		// The thread's profile was removed from the configuration since.
		return jobs.Profile{}, Invalid("profile", "the thread's profile %q is no longer offered; use another thread", name)
	}
	return p, nil
}

func threadProfileError(thread, profile string) *Error {
	return Invalid("profile", "thread %s runs in profile %q: a thread keeps the profile it was created with (omit profile, or use another thread)", thread, profile)
}

// asProfileMismatch turns the records' refusal of a record naming another profile
// than its thread's (a race between two first submissions) into the client's error.
func asProfileMismatch(err error) error {
	var pm *records.ProfileMismatch
	if errors.As(err, &pm) {
		return threadProfileError(pm.Thread, pm.Profile)
	}
	return err
}

// limitsOf returns the bounds of a request in profile p.
func (s *Service) limitsOf(p jobs.Profile) Limits {
	l := s.cfg.Limits
	l.DefaultTimeoutMS, l.MaxTimeoutMS = p.DefaultTimeoutMS, p.MaxTimeoutMS
	if p.Limits.Workspace > 0 {
		l.WorkspaceBytes = p.Limits.Workspace
	}
	return l
}

// Runtimes is what a tenant may run: the languages, and the profiles it may use
// with what each profile's image holds.
type Runtimes struct {
	Languages      []sandbox.Language
	DefaultProfile string
	Profiles       []RuntimeProfile
	// Egress lists the hosts the tenant's executions may reach with network; empty:
	// none (no egress).
	Egress []string
}

// RuntimeProfile is one profile a tenant may use.
type RuntimeProfile struct {
	Profile jobs.Profile
	// Manifest is what a worker read of the profile's image; Known is false until
	// one did (then Manifest is nil), and Manifest stays nil for an image without one.
	Known    bool
	Manifest *sandbox.Manifest
}

// Runtimes returns what tenant may run. Manifests come from the workers (they read
// them from the images); before any worker did, a profile's is not Known.
func (s *Service) Runtimes(ctx context.Context, tenant string) (*Runtimes, error) {
	profiles := s.cfg.Profiles.For(tenant)
	images := make([]string, 0, len(profiles))
	for _, p := range profiles {
		images = append(images, p.Image)
	}
	published, err := s.cfg.Records.Manifests(ctx, images)
	if err != nil {
		return nil, err
	}
	rt := &Runtimes{Languages: sandbox.Languages, DefaultProfile: s.cfg.Profiles.TenantDefault(tenant), Egress: []string{}}
	if s.cfg.Egress != nil {
		if pol, ok := s.cfg.Egress.For(tenant); ok {
			rt.Egress = rules(pol)
		}
	}
	for _, p := range profiles {
		m, known := published[p.Image]
		rp := RuntimeProfile{Profile: p, Known: known, Manifest: m.Manifest}
		if rp.Manifest != nil {
			pkgs := append([]sandbox.ManifestPackage(nil), rp.Manifest.Packages...)
			sort.SliceStable(pkgs, func(i, j int) bool { return pkgs[i].Name < pkgs[j].Name })
			cp := *rp.Manifest
			cp.Packages = pkgs
			rp.Manifest = &cp
		}
		rt.Profiles = append(rt.Profiles, rp)
	}
	return rt, nil
}
