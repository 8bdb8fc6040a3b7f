package sandbox

import (
	"encoding/json"
	"fmt"
)

// ManifestPath is where a sandbox image lists what it holds, written when the image
// is built (deploy/sandbox).
const ManifestPath = "/opt/codeinterp/runtimes.json"

// MaxManifestBytes bounds the manifest read from an image.
const MaxManifestBytes = 4 << 20

// Manifest is what a sandbox image says it holds: its kind, languages, packages
// with versions, and what it leaves out.
type Manifest struct {
	Image     string            `json:"image"` // "full" or "slim": the image's kind, not its reference
	Languages []ManifestEntry   `json:"languages"`
	Packages  []ManifestPackage `json:"packages"`
	Missing   []ManifestMissing `json:"missing"`
}

// ManifestEntry is a language and its version.
type ManifestEntry struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ManifestPackage is an installed package: Kind is python, node, debian or tool.
type ManifestPackage struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// ManifestMissing is a package the image leaves out, and why.
type ManifestMissing struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// ParseManifest reads a manifest. Fields it does not know are ignored; lists it
// lacks are empty, never nil.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("parse %s: %w", ManifestPath, err)
	}
	if m.Languages == nil {
		m.Languages = []ManifestEntry{}
	}
	if m.Packages == nil {
		m.Packages = []ManifestPackage{}
	}
	if m.Missing == nil {
		m.Missing = []ManifestMissing{}
	}
	return m, nil
}
