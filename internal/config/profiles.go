package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/codeinterp/codeinterp/jobs"
)

// profileName is the shape of a profile's name: it appears in requests and keys.
var profileName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// imageRef is a loose check of an image reference: no blanks or control characters.
var imageRef = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,254}$`)

// DefaultProfile returns the default profile: the CODEINTERP_SANDBOX_IMAGE,
// CODEINTERP_TIMEOUT_MS, _MAX_TIMEOUT_MS, the sandbox limits and the
// CODEINTERP_WARM_POOL and _ONEOFF_POOL sizes.
func (c Config) DefaultProfile() jobs.Profile {
	return jobs.Profile{
		Name: jobs.DefaultProfile, Image: c.SandboxImage, Limits: c.Limits(),
		DefaultTimeoutMS: c.TimeoutMS, MaxTimeoutMS: c.MaxTimeoutMS,
		WarmPool: c.WarmPool, OneOffPool: c.OneOffPool,
	}
}

// SandboxProfiles returns the profiles and which tenants may use them:
//
//   - CODEINTERP_PROFILES defines profiles beside the default one,
//     "name:key=value,key=value;name:…". Keys: image, cpus, memory_mb, pids,
//     workspace_mb, output_bytes, timeout_ms, max_timeout_ms; a key not given takes
//     the default profile's value. warm_pool and oneoff_pool size the profile's
//     pools on each worker; not given, 0: the profile has no pools. "default"
//     cannot be redefined here: it is the CODEINTERP_SANDBOX_IMAGE, _TIMEOUT_MS,
//     _MAX_TIMEOUT_MS, _MEMORY_MB, _CPUS, _PIDS, _WORKSPACE_MB, _OUTPUT_BYTES,
//     _WARM_POOL and _ONEOFF_POOL settings.
//   - CODEINTERP_TENANT_PROFILES says who may use which, "tenant:name+name;*:name":
//     a tenant's first profile is the one its requests get when they name none; "*"
//     stands for every tenant not listed. Unset, or for a tenant not listed and no
//     "*", only the default profile.
//
// Every problem is reported, each naming its variable.
func (c Config) SandboxProfiles() (jobs.Profiles, error) {
	def := c.DefaultProfile()
	var errs []error
	bad := func(variable, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", variable, fmt.Sprintf(format, args...)))
	}
	var others []jobs.Profile
	known := map[string]bool{jobs.DefaultProfile: true}
	for _, entry := range strings.Split(c.Profiles, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, fields, ok := strings.Cut(entry, ":")
		name = strings.TrimSpace(name)
		switch {
		case !ok || !profileName.MatchString(name):
			bad("CODEINTERP_PROFILES", "%q: want name:key=value,… with a name of 1 to 32 of a-z 0-9 _ - (starting with a letter or digit)", entry)
			continue
		case name == jobs.DefaultProfile:
			bad("CODEINTERP_PROFILES", "the default profile is set by CODEINTERP_SANDBOX_IMAGE, _TIMEOUT_MS, _MAX_TIMEOUT_MS, _MEMORY_MB, _CPUS, _PIDS, _WORKSPACE_MB and _OUTPUT_BYTES, not here")
			continue
		case known[name]:
			bad("CODEINTERP_PROFILES", "profile %q is defined twice", name)
			continue
		}
		known[name] = true
		p, perrs := parseProfile(def, name, fields)
		errs = append(errs, perrs...)
		others = append(others, p)
	}
	access := map[string][]string{}
	for _, entry := range strings.Split(c.TenantProfiles, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		tenant, list, ok := strings.Cut(entry, ":")
		tenant = strings.TrimSpace(tenant)
		if !ok || tenant == "" || strings.TrimSpace(list) == "" {
			bad("CODEINTERP_TENANT_PROFILES", "%q: want tenant:profile+profile (tenant * for every other tenant)", entry)
			continue
		}
		if _, dup := access[tenant]; dup {
			bad("CODEINTERP_TENANT_PROFILES", "tenant %q is listed twice", tenant)
			continue
		}
		var names []string
		for _, n := range strings.Split(list, "+") {
			n = strings.TrimSpace(n)
			switch {
			case !known[n]:
				bad("CODEINTERP_TENANT_PROFILES", "tenant %q: unknown profile %q (defined: default and those of CODEINTERP_PROFILES)", tenant, n)
			case slices.Contains(names, n):
				bad("CODEINTERP_TENANT_PROFILES", "tenant %q: profile %q listed twice", tenant, n)
			default:
				names = append(names, n)
			}
		}
		access[tenant] = names
	}
	return jobs.NewProfiles(def, others, access), errors.Join(errs...)
}

// parseProfile reads one profile's "key=value,…" on top of the default profile,
// except its pool sizes: a profile has pools only if it asks for them, so adding a
// profile never adds sandboxes to every worker unasked.
func parseProfile(def jobs.Profile, name, fields string) (jobs.Profile, []error) {
	p := def
	p.Name, p.WarmPool, p.OneOffPool = name, 0, 0
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("CODEINTERP_PROFILES %s: %s", name, fmt.Sprintf(format, args...)))
	}
	for _, f := range strings.Split(fields, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		key, value, ok := strings.Cut(f, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || value == "" {
			bad("%q: want key=value", f)
			continue
		}
		if key == "image" {
			if !imageRef.MatchString(value) {
				bad("image %q: want an image reference such as codeinterp/sandbox-slim:latest", value)
			}
			p.Image = value
			continue
		}
		if size, ok := poolKeys[key]; ok {
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 {
				bad("%s=%q: want a whole number, 0 or more", key, value)
				continue
			}
			*size(&p) = n
			continue
		}
		set, known := profileKeys[key]
		if !known {
			bad("unknown key %q (image, cpus, memory_mb, pids, workspace_mb, output_bytes, timeout_ms, max_timeout_ms, warm_pool, oneoff_pool)", key)
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil || n <= 0 {
			bad("%s=%q: want a positive number", key, value)
			continue
		}
		set(&p, n)
	}
	l, check := p.Limits, func(ok bool, format string, args ...any) {
		if !ok {
			bad(format, args...)
		}
	}
	check(l.Memory >= 64<<20, "memory_mb %d: want at least 64", l.Memory>>20)
	check(l.Pids >= 16, "pids %d: want at least 16", l.Pids)
	check(l.Workspace >= 1<<20, "workspace_mb: want at least 1")
	check(l.Output >= 1024, "output_bytes %d: want at least 1024", l.Output)
	check(p.DefaultTimeoutMS <= p.MaxTimeoutMS, "timeout_ms %d: want at most max_timeout_ms (%d)", p.DefaultTimeoutMS, p.MaxTimeoutMS)
	return p, errs
}

// poolKeys point at a profile's pool sizes.
var poolKeys = map[string]func(p *jobs.Profile) *int{
	"warm_pool":   func(p *jobs.Profile) *int { return &p.WarmPool },
	"oneoff_pool": func(p *jobs.Profile) *int { return &p.OneOffPool },
}

// profileKeys set a profile's other numeric keys.
var profileKeys = map[string]func(p *jobs.Profile, n float64){
	"cpus":           func(p *jobs.Profile, n float64) { p.Limits.CPUs = n },
	"memory_mb":      func(p *jobs.Profile, n float64) { p.Limits.Memory = int64(n) << 20 },
	"pids":           func(p *jobs.Profile, n float64) { p.Limits.Pids = int64(n) },
	"workspace_mb":   func(p *jobs.Profile, n float64) { p.Limits.Workspace = int64(n) << 20 },
	"output_bytes":   func(p *jobs.Profile, n float64) { p.Limits.Output = int(n) },
	"timeout_ms":     func(p *jobs.Profile, n float64) { p.DefaultTimeoutMS = int64(n) },
	"max_timeout_ms": func(p *jobs.Profile, n float64) { p.MaxTimeoutMS = int64(n) },
}
