package jobs

import (
	"slices"

	"github.com/codeinterp/codeinterp/sandbox"
)

// DefaultProfile names the profile built from the CODEINTERP_* sandbox defaults
// (image, limits, timeouts, pool sizes).
const DefaultProfile = "default"

// Profile is a size of sandbox an operator offers: the image it runs and its limits.
// An execution or thread names one (Execution.Profile); the worker creates its
// sandbox with the profile's Image and Limits.
type Profile struct {
	Name   string
	Image  string // never shown to tenants
	Limits sandbox.Limits
	// DefaultTimeoutMS is the timeout of a request that gives none; MaxTimeoutMS the
	// largest a request may ask for.
	DefaultTimeoutMS int64
	MaxTimeoutMS     int64
	// WarmPool and OneOffPool are how many sandboxes of the profile each worker keeps
	// ready: blank ones for new threads, recyclable ones for one-offs. 0: none, a
	// sandbox is created when needed.
	WarmPool, OneOffPool int
}

// AnyTenant is the tenant entry of a Profiles table that stands for every tenant not
// listed by name.
const AnyTenant = "*"

// Profiles is every profile of the installation and which tenants may use which. It
// is read-only once built (internal/config builds it), so safe to share.
type Profiles struct {
	byName map[string]Profile
	order  []string            // as configured, default first
	access map[string][]string // tenant (or AnyTenant) → profiles, its default first
}

// NewProfiles returns the table of profiles (def, the default profile, and others in
// order) and tenant access (a tenant's first profile is what it gets when it names
// none; tenants not listed, and AnyTenant when not given, may use def alone).
func NewProfiles(def Profile, others []Profile, access map[string][]string) Profiles {
	p := Profiles{byName: map[string]Profile{}, access: map[string][]string{AnyTenant: {DefaultProfile}}}
	def.Name = DefaultProfile
	for _, pr := range append([]Profile{def}, others...) {
		p.byName[pr.Name] = pr
		p.order = append(p.order, pr.Name)
	}
	for t, names := range access {
		p.access[t] = slices.Clone(names)
	}
	return p
}

// Get returns the profile called name.
func (p Profiles) Get(name string) (Profile, bool) {
	pr, ok := p.byName[name]
	return pr, ok
}

// Default returns the default profile.
func (p Profiles) Default() Profile {
	if pr, ok := p.byName[DefaultProfile]; ok {
		return pr
	}
	return Profile{Name: DefaultProfile}
}

// names returns the profiles tenant may use, its default first.
func (p Profiles) names(tenant string) []string {
	if names, ok := p.access[tenant]; ok {
		return names
	}
	return p.access[AnyTenant]
}

// Allowed reports whether tenant may use the profile called name.
func (p Profiles) Allowed(tenant, name string) bool {
	_, ok := p.byName[name]
	return ok && slices.Contains(p.names(tenant), name)
}

// TenantDefault returns the profile of tenant's requests that name none.
func (p Profiles) TenantDefault(tenant string) string {
	if names := p.names(tenant); len(names) > 0 {
		return names[0]
	}
	return DefaultProfile
}

// For returns the profiles tenant may use, its default first.
func (p Profiles) For(tenant string) []Profile {
	var out []Profile
	for _, name := range p.names(tenant) {
		if pr, ok := p.byName[name]; ok {
			out = append(out, pr)
		}
	}
	return out
}

// All returns every profile, the default first.
func (p Profiles) All() []Profile {
	out := make([]Profile, 0, len(p.order))
	for _, name := range p.order {
		out = append(out, p.byName[name])
	}
	return out
}

// IsZero reports whether p was never built (a zero value): callers then build one
// from their own limits.
func (p Profiles) IsZero() bool { return len(p.byName) == 0 }
