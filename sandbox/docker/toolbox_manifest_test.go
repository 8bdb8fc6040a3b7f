package docker_test

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/docker"
)

// manifest is /opt/codeinterp/runtimes.json, the image's account of itself.
type manifest struct {
	Image     string `json:"image"`
	Languages []struct {
		Name, Version string
	} `json:"languages"`
	Packages []struct {
		Name, Version, Kind string
		Languages           []string
	} `json:"packages"`
	Missing []struct {
		Name, Kind, Why string
	} `json:"missing"`
}

func readManifest(t *testing.T, sb sandbox.Sandbox) manifest {
	t.Helper()
	var m manifest
	if err := json.Unmarshal([]byte(toolRun(t, sb, sandbox.Request{Language: sandbox.Bash, Code: "cat /opt/codeinterp/runtimes.json"})), &m); err != nil {
		t.Fatal(err)
	}
	for _, miss := range m.Missing {
		if miss.Why == "" {
			t.Errorf("missing %s says not why", miss.Name)
		}
	}
	return m
}

func (m manifest) has(kind, name string) string {
	for _, p := range m.Packages {
		if p.Kind == kind && p.Name == name {
			return p.Version
		}
	}
	return ""
}

func (m manifest) language(name string) string {
	for _, l := range m.Languages {
		if l.Name == name {
			return l.Version
		}
	}
	return ""
}

func (m manifest) missing(name string) bool {
	for _, p := range m.Missing {
		if p.Name == name {
			return true
		}
	}
	return false
}

// The full image says what it has, with versions, and what is missing and why.
func TestToolboxManifest(t *testing.T) {
	t.Parallel()
	sb := toolboxSandbox(t)
	m := readManifest(t, sb)
	if m.Image != "full" {
		t.Errorf("image %q, want full", m.Image)
	}
	for _, l := range []string{"python", "bash", "javascript"} {
		if m.language(l) == "" {
			t.Errorf("language %s missing or without a version: %+v", l, m.Languages)
		}
	}
	for _, p := range [][2]string{{"python", "numpy"}, {"python", "pip"}, {"python", "CairoSVG"}, {"tool", "libreoffice"},
		{"tool", "tesseract"}, {"tool", "qpdf"}, {"tool", "poppler"}, {"tool", "node"}, {"tool", "npm"}, {"tool", "pandoc"}} {
		if m.has(p[0], p[1]) == "" {
			t.Errorf("%s package %s not listed with a version", p[0], p[1])
		}
	}
	for _, p := range m.Packages {
		if p.Name == "tesseract" && strings.Join(p.Languages, " ") != "chi_sim chi_tra eng jpn kor" {
			t.Errorf("tesseract languages %v", p.Languages)
		}
	}
	for _, name := range []string{"numpy", "libreoffice", "node"} {
		if m.missing(name) {
			t.Errorf("%s listed as missing", name)
		}
	}
	// Offline, what Debian lacks is missing, unless the image was built with it.
	if m.has("python", "python-pptx") == "" && !m.missing("python-pptx") {
		t.Error("python-pptx neither installed nor listed as missing")
	}
}

// The slim image (codeinterp/sandbox-slim, or CODEINTERP_SANDBOX_SLIM_IMAGE) has no
// Node and no LibreOffice and says so: javascript fails as a result naming the
// cause, and its manifest lists them as missing.
func TestToolboxSlim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := docker.New(newClient(t), docker.Config{
		Image:   cmp.Or(os.Getenv("CODEINTERP_SANDBOX_SLIM_IMAGE"), "codeinterp/sandbox-slim:latest"),
		Prefix:  "citest",
		Grace:   time.Second,
		Runtime: os.Getenv("CODEINTERP_SANDBOX_RUNTIME"),
	})
	sb, err := d.Create(ctx, sandbox.Spec{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Remove(context.Background()) })

	out, err := sb.Run(ctx, sandbox.Request{ID: "slim-js", Language: sandbox.Javascript, Code: "console.log(1)", Timeout: time.Minute}, nil)
	if err != nil || out.Status != sandbox.Failed || out.Error == nil || out.Error.Name != "LanguageUnavailable" ||
		out.Error.Value != "javascript is not installed in this sandbox image" || out.ExitCode != 127 {
		t.Fatalf("javascript on the slim image: %+v %+v %v", out, out.Error, err)
	}
	if got := toolRun(t, sb, sandbox.Request{Code: "import numpy, cairosvg; print('python ok')"}); got != "python ok\n" {
		t.Fatalf("python after javascript: %q", got)
	}

	m := readManifest(t, sb)
	if m.Image != "slim" || m.language("javascript") != "" || m.language("python") == "" {
		t.Errorf("slim manifest: image %q, languages %+v", m.Image, m.Languages)
	}
	if m.has("python", "numpy") == "" || m.has("tool", "qpdf") == "" || m.has("tool", "libreoffice") != "" {
		t.Error("slim manifest lists the wrong packages")
	}
	for _, name := range []string{"libreoffice", "node", "npm", "docx"} {
		if !m.missing(name) {
			t.Errorf("%s not listed as missing from the slim image", name)
		}
	}
}
