package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Manifest states of a profile in GET /v1/runtimes.
const (
	manifestPending   = "pending"   // no worker has read the profile's image yet
	manifestPublished = "published" // packages lists what the image holds
	manifestAbsent    = "absent"    // the image carries no manifest
)

type runtimesView struct {
	Languages      []languageView `json:"languages"`
	DefaultProfile string         `json:"default_profile"`
	Profiles       []profileView  `json:"profiles"`
	Network        networkView    `json:"network"`
}

// networkView is what the tenant's executions may reach with network.
type networkView struct {
	Allow []string `json:"allow"`
}

type languageView struct {
	Name string `json:"name"`
}

type profileView struct {
	Name      string                    `json:"name"`
	Limits    profileLimits             `json:"limits"`
	Manifest  string                    `json:"manifest"`
	ImageKind string                    `json:"image_kind,omitempty"`
	Languages []sandbox.ManifestEntry   `json:"languages"`
	Packages  []sandbox.ManifestPackage `json:"packages"`
	Missing   []sandbox.ManifestMissing `json:"missing"`
}

type profileLimits struct {
	CPUs         float64 `json:"cpus"`
	MemoryMB     int64   `json:"memory_mb"`
	Pids         int64   `json:"pids"`
	WorkspaceMB  int64   `json:"workspace_mb"`
	OutputBytes  int     `json:"output_bytes"`
	TimeoutMS    int64   `json:"timeout_ms"`
	MaxTimeoutMS int64   `json:"max_timeout_ms"`
}

// runtimes is GET /v1/runtimes: the languages, and the profiles this tenant may use
// with their limits and what each one's image holds (as a worker read it from the
// image; until one did, the profile's manifest is "pending" and its lists empty).
// Image references stay the operator's business.
func (s *Server) runtimes(c echo.Context) error {
	rt, err := s.svc.Runtimes(c.Request().Context(), tenantOf(c))
	if err != nil {
		return err
	}
	v := runtimesView{DefaultProfile: rt.DefaultProfile, Languages: []languageView{}, Profiles: []profileView{},
		Network: networkView{Allow: rt.Egress}}
	for _, l := range rt.Languages {
		v.Languages = append(v.Languages, languageView{Name: string(l)})
	}
	for _, rp := range rt.Profiles {
		p, l := rp.Profile, rp.Profile.Limits.WithDefaults()
		pv := profileView{
			Name: p.Name, Manifest: manifestPending,
			Limits: profileLimits{
				CPUs: l.CPUs, MemoryMB: l.Memory >> 20, Pids: l.Pids, WorkspaceMB: l.Workspace >> 20, OutputBytes: l.Output,
				TimeoutMS: p.DefaultTimeoutMS, MaxTimeoutMS: p.MaxTimeoutMS,
			},
			Languages: []sandbox.ManifestEntry{}, Packages: []sandbox.ManifestPackage{}, Missing: []sandbox.ManifestMissing{},
		}
		switch {
		case rp.Manifest != nil:
			pv.Manifest, pv.ImageKind = manifestPublished, rp.Manifest.Image
			// Appended, so the lists are never null whatever was published.
			pv.Languages = append(pv.Languages, rp.Manifest.Languages...)
			pv.Packages = append(pv.Packages, rp.Manifest.Packages...)
			pv.Missing = append(pv.Missing, rp.Manifest.Missing...)
		case rp.Known:
			pv.Manifest = manifestAbsent
		}
		v.Profiles = append(v.Profiles, pv)
	}
	return c.JSON(http.StatusOK, v)
}
