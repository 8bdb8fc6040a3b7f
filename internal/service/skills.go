package service

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/quota"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/skills"
	"github.com/codeinterp/codeinterp/sandbox"
)

// UploadSkill stores an archive (tar, tar.gz or zip) as a version of the tenant's
// skill name: version ("" for the next) is a positive integer. The archive is checked
// (see skillarchive.go) and stored normalised; its bytes count against the tenant's
// uploads of the day (whether or not it is accepted), and the stored tar against the
// tenant's skill bytes until it is deleted.
func (s *Service) UploadSkill(ctx context.Context, tenant, name, version string, body io.Reader) (jobs.Skill, error) {
	if name == "" {
		return jobs.Skill{}, Invalid("name", "give the skill a name (?name=quarterly-report, or a form field)")
	}
	if err := sandbox.CheckSkillName(name); err != nil {
		return jobs.Skill{}, Invalid("name", "%v", err)
	}
	v, err := parseSkillVersion("version", version)
	if err != nil {
		return jobs.Skill{}, err
	}
	if err := s.cfg.Quotas.Submit(ctx, tenant); err != nil {
		return jobs.Skill{}, asQuota(err, "")
	}
	lim := s.cfg.SkillLimits
	in, n, err := spoolSkill(body, lim.MaxBytes)
	if err != nil {
		return jobs.Skill{}, err
	}
	defer in.Close()
	// The bytes are charged before the archive is read, and kept when the client is
	// refused: checking an archive costs the service, so a refused one is no free
	// retry. Only the service's own failures give them back.
	if err := s.cfg.Quotas.Upload(ctx, tenant, n); err != nil {
		return jobs.Skill{}, asQuota(err, "file")
	}
	refund := func() { _ = s.cfg.Quotas.Refund(context.WithoutCancel(ctx), tenant, n) }
	m, err := checkSkillArchive(in, n, lim)
	if err != nil {
		return jobs.Skill{}, err
	}
	out, err := os.CreateTemp("", "codeinterp-skill-*.tar")
	if err != nil {
		refund()
		return jobs.Skill{}, err
	}
	os.Remove(out.Name())
	defer out.Close()
	sum := sha256.New()
	if err := writeSkillTar(in, n, m, io.MultiWriter(out, sum)); err != nil {
		var refused *Error
		if !errors.As(err, &refused) {
			refund()
		}
		return jobs.Skill{}, err
	}
	size, err := out.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = out.Seek(0, io.SeekStart)
	}
	if err != nil {
		refund()
		return jobs.Skill{}, err
	}
	sk := jobs.Skill{Name: name, Version: v, Digest: hex.EncodeToString(sum.Sum(nil)), Size: size,
		Files: m.files, Unpacked: m.bytes, Created: s.cfg.Now().UTC()}
	// Recorded first: that fixes the version and charges the bytes atomically; a
	// failed store takes the record back.
	sk, err = s.cfg.Skills.Add(ctx, tenant, sk, s.cfg.Quotas.Limits(tenant).SkillBytes)
	var over *quota.Exceeded
	switch {
	case errors.Is(err, skills.ErrExists):
		return jobs.Skill{}, &Error{Code: CodeConflict, Field: "version", Message: fmt.Sprintf("%s@%d exists; versions are immutable (omit version for the next one)", name, v)}
	case errors.Is(err, skills.ErrTooManyVersions):
		most := s.cfg.Skills.MaxVersions()
		return jobs.Skill{}, &Error{Code: CodeConflict, Field: "name", Message: fmt.Sprintf("skill %s has %d versions, the most CODEINTERP_SKILL_MAX_VERSIONS allows; delete old ones first (DELETE /v1/skills/%s@1)", name, most, name)}
	case errors.As(err, &over):
		return jobs.Skill{}, QuotaExceeded(over, "file")
	case err != nil:
		refund()
		return jobs.Skill{}, err
	}
	if _, err := s.cfg.SkillStore.Put(ctx, jobs.SkillKey(tenant, name, sk.Version), out, size, "application/x-tar"); err != nil {
		_, _ = s.cfg.Skills.Delete(context.WithoutCancel(ctx), tenant, name, sk.Version)
		refund()
		return jobs.Skill{}, err
	}
	if err := s.cfg.Records.AddUsage(ctx, tenant, records.Spent{BytesStored: size}); err != nil {
		s.cfg.Logger.Warn("count skill bytes", "tenant", tenant, "err", err)
	}
	return sk, nil
}

// ListSkills returns every version of the tenant's skills, by name, oldest first.
func (s *Service) ListSkills(ctx context.Context, tenant string) ([]jobs.Skill, error) {
	return s.cfg.Skills.List(ctx, tenant)
}

// DeleteSkill deletes a skill of the tenant: every version, or one (version, or ref
// "name@version"). Executions accepted before keep the version they resolved, if
// their worker fetched it already; threads drop it from their next execution.
func (s *Service) DeleteSkill(ctx context.Context, tenant, ref, version string) error {
	name, v, err := parseSkillRef("name", ref)
	if err != nil {
		return err
	}
	if version != "" {
		if v != 0 {
			return Invalid("version", "give the version in the path or in ?version=, not both")
		}
		if v, err = parseSkillVersion("version", version); err != nil {
			return err
		}
	}
	deleted, err := s.cfg.Skills.Delete(ctx, tenant, name, v)
	if errors.Is(err, skills.ErrNotFound) {
		if v != 0 {
			return NotFound(fmt.Sprintf("skill %s@%d", name, v))
		}
		return NotFound("skill " + name)
	}
	if err != nil {
		return err
	}
	for _, dv := range deleted {
		if _, err := s.cfg.SkillStore.DeletePrefix(ctx, jobs.SkillKey(tenant, name, dv)); err != nil {
			s.cfg.Logger.Warn("delete skill archive", "tenant", tenant, "skill", name, "version", dv, "err", err)
		}
	}
	return nil
}

// SkillsHeld returns the bytes of skills the tenant holds.
func (s *Service) SkillsHeld(ctx context.Context, tenant string) (int64, error) {
	return s.cfg.Skills.Held(ctx, tenant)
}

// parseSkillRef reads "name" or "name@version" given in field.
func parseSkillRef(field, ref string) (string, int, error) {
	name, ver, pinned := strings.Cut(ref, "@")
	if err := sandbox.CheckSkillName(name); err != nil {
		return "", 0, Invalid(field, "%v", err)
	}
	if !pinned {
		return name, 0, nil
	}
	v, err := parseSkillVersion(field, ver)
	if err == nil && v == 0 {
		err = Invalid(field, "name a version after @, as in %s@2", name)
	}
	return name, v, err
}

// parseSkillVersion reads a version: "" is 0 (the next, or the latest), else 1 to 2^31-1.
func parseSkillVersion(field, s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < 1 {
		return 0, Invalid(field, "a version is a positive integer, not %q", s)
	}
	return int(v), nil
}

// skillPlan is what a submission attaches: the versions resolved, and the changes to
// its thread's attached skills.
type skillPlan struct {
	skills []jobs.Skill
	attach map[string]int // name → version, attached to the thread from now on
	drop   []string       // attached to the thread, but deleted since
}

// resolveSkills resolves the skills named on a submission, and those its thread has
// attached, to versions. A name alone is the latest version; a thread keeps the
// version it resolved until an execution names the skill again. A skill named but
// unknown is a 400 naming skills[i]; one the thread had attached but that was deleted
// since is detached.
func (s *Service) resolveSkills(ctx context.Context, tenant, thread string, refs []string) (skillPlan, error) {
	var plan skillPlan
	lim := cmp.Or(s.cfg.SkillLimits.PerExecution, 8)
	if len(refs) > lim {
		return plan, Invalid("skills", "names %d skills; an execution attaches at most %d", len(refs), lim)
	}
	type want struct {
		version int
		field   string // "" for the thread's own
	}
	wants := map[string]want{}
	for i, ref := range refs {
		field := fmt.Sprintf("skills[%d]", i)
		name, v, err := parseSkillRef(field, ref)
		if err != nil {
			return plan, err
		}
		if _, dup := wants[name]; dup {
			return plan, Invalid(field, "names skill %s a second time", name)
		}
		wants[name] = want{version: v, field: field}
	}
	if thread != "" && s.cfg.Skills != nil {
		had, err := s.cfg.Skills.Attached(ctx, jobs.NewThreadKey(tenant, thread))
		if err != nil {
			return plan, err
		}
		for name, v := range had {
			if _, named := wants[name]; !named {
				wants[name] = want{version: v}
			}
		}
	}
	if len(wants) == 0 {
		return plan, nil
	}
	if s.cfg.Skills == nil {
		return plan, Invalid("skills", "skills are not enabled on this server")
	}
	if len(wants) > lim {
		return plan, Invalid("skills", "the thread has %d skills attached with these; an execution attaches at most %d", len(wants), lim)
	}
	plan.attach = map[string]int{}
	var unpacked int64
	for name, w := range wants {
		sk, err := s.cfg.Skills.Get(ctx, tenant, name, w.version)
		switch {
		case errors.Is(err, skills.ErrNotFound) && w.field == "":
			plan.drop = append(plan.drop, name)
			continue
		case errors.Is(err, skills.ErrNotFound) && w.version != 0:
			return plan, Invalid(w.field, "the tenant has no skill %s@%d (GET /v1/skills lists them)", name, w.version)
		case errors.Is(err, skills.ErrNotFound):
			return plan, Invalid(w.field, "the tenant has no skill %s (upload it with POST /v1/skills)", name)
		case err != nil:
			return plan, err
		}
		if w.field != "" {
			plan.attach[name] = sk.Version
		}
		unpacked += sk.Unpacked
		plan.skills = append(plan.skills, sk)
	}
	if ws := s.cfg.Limits.WorkspaceBytes; ws > 0 && unpacked > ws {
		return plan, TooLarge("skills", "the skills attached unpack to %d bytes; a sandbox holds %d", unpacked, ws)
	}
	slices.SortFunc(plan.skills, func(a, b jobs.Skill) int { return strings.Compare(a.Name, b.Name) })
	return plan, nil
}

// keepThreadSkills records, after a thread's execution was accepted, the skills the
// thread keeps attached. A failure is logged: the execution itself has them.
func (s *Service) keepThreadSkills(ctx context.Context, ex *jobs.Execution, plan skillPlan) {
	if ex.ThreadID == "" || (len(plan.attach) == 0 && len(plan.drop) == 0) {
		return
	}
	if err := s.cfg.Skills.Attach(ctx, jobs.NewThreadKey(ex.Tenant, ex.ThreadID), plan.attach, plan.drop); err != nil {
		s.cfg.Logger.Warn("attach skills to thread", "thread", ex.ThreadID, "err", err)
	}
}
