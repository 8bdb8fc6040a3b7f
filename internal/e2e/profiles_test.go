package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/internal/worker"
	"github.com/codeinterp/codeinterp/sandbox/docker"
)

var _ worker.ManifestReader = (*docker.Runtime)(nil)

// manifestImage is the sandbox image with a manifest of its own, for the profile
// tests: the package it lists exists nowhere else.
const manifestImage = "codeinterp/sandbox:dev-profiles-manifest"

const manifestJSON = `{"image":"full","languages":[{"name":"python","version":"3"}],` +
	`"packages":[{"name":"profiles-canary","version":"1.2.3","kind":"tool"}],"missing":[{"name":"nothing","why":"a test"}]}`

// buildManifestImage builds manifestImage from the test's sandbox image, adding
// /opt/codeinterp/runtimes.json.
func buildManifestImage(t *testing.T) {
	t.Helper()
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for name, body := range map[string]string{
		"Dockerfile":    "FROM " + testenv.Image("sandbox") + "\nCOPY runtimes.json /opt/codeinterp/runtimes.json\n",
		"runtimes.json": manifestJSON,
	} {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte(body))
	}
	_ = tw.Close()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.ImageBuild(context.Background(), &ctxTar, build.ImageBuildOptions{Tags: []string{manifestImage}, Remove: true})
	if err != nil {
		t.Fatalf("build %s: %v", manifestImage, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(out), `"errorDetail"`) {
		t.Fatalf("build %s: %s", manifestImage, out)
	}
	if _, err := cli.ImageInspect(context.Background(), manifestImage); err != nil {
		t.Fatalf("built %s, but: %v\n%s", manifestImage, err, out)
	}
}

// memoryLimit prints the sandbox's host name, its container's short id: the test
// reads the memory limit from the engine (limitOf), since under gVisor the code sees
// no cgroup files.
const memoryLimit = "import socket; print(socket.gethostname())"

// limitOf returns the memory limit, in bytes, of the sandbox whose host name is the
// first line of stdout (what memoryLimit printed).
func (s *stack) limitOf(t *testing.T, stdout string) string {
	t.Helper()
	host, _, _ := strings.Cut(stdout, "\n")
	if host == "" {
		return "no host name printed"
	}
	c, err := s.docker.ContainerInspect(context.Background(), host)
	if err != nil {
		t.Fatalf("inspect the sandbox %q: %v", host, err)
	}
	return strconv.FormatInt(c.HostConfig.Memory, 10)
}

type profiled struct {
	ID      string `json:"id"`
	Profile string `json:"profile"`
	Status  string `json:"status"`
	Error   *struct {
		Name string `json:"name"`
	} `json:"error"`
}

// A tenant runs in a smaller profile of another image: the sandbox really has its
// memory limit and time limit, a thread keeps its profile, a tenant without the
// profile is refused, and GET /v1/runtimes lists the profile and, once the worker
// read the image, its packages.
func TestProfiles(t *testing.T) {
	t.Parallel()
	buildManifestImage(t)
	s := newStack(t, stackOptions{env: map[string]string{
		"CODEINTERP_PROFILES":        "small:image=" + manifestImage + ",memory_mb=200,timeout_ms=3000,max_timeout_ms=5000",
		"CODEINTERP_TENANT_PROFILES": "acme:default+small",
	}})

	// Runtimes: the profile and, once the worker published, the image's packages.
	type runtimes struct {
		DefaultProfile string `json:"default_profile"`
		Profiles       []struct {
			Name   string `json:"name"`
			Limits struct {
				MemoryMB     int64 `json:"memory_mb"`
				MaxTimeoutMS int64 `json:"max_timeout_ms"`
			} `json:"limits"`
			Manifest string `json:"manifest"`
			Packages []struct{ Name, Version, Kind string }
		} `json:"profiles"`
	}
	eventually(t, 2*time.Minute, "the worker publishes the small profile's manifest", func() bool {
		var rt runtimes
		if code := s.call(t, "GET", "/v1/runtimes", nil, &rt); code != http.StatusOK {
			t.Fatalf("GET /v1/runtimes: %d", code)
		}
		if len(rt.Profiles) != 2 || rt.DefaultProfile != "default" || rt.Profiles[1].Name != "small" ||
			rt.Profiles[1].Limits.MemoryMB != 200 || rt.Profiles[1].Limits.MaxTimeoutMS != 5000 {
			t.Fatalf("runtimes: %+v", rt)
		}
		p := rt.Profiles[1]
		return p.Manifest == "published" && len(p.Packages) == 1 && p.Packages[0].Name == "profiles-canary" && p.Packages[0].Version == "1.2.3"
	})
	var other runtimes
	s.callAs(t, "key-b", "GET", "/v1/runtimes", nil, &other)
	if len(other.Profiles) != 1 || other.Profiles[0].Name != "default" {
		t.Errorf("globex's runtimes: %+v", other)
	}

	// A one-off in the profile has its memory limit; the default profile keeps its own.
	ex := s.run(t, map[string]any{"code": memoryLimit, "profile": "small"})
	if ex.Status != "succeeded" || s.limitOf(t, ex.Stdout) != strconv.Itoa(200<<20) {
		t.Fatalf("small one-off: %s %q %+v", ex.Status, ex.Stdout, ex.Error)
	}
	var shown profiled
	s.call(t, "GET", "/v1/executions/"+ex.ID, nil, &shown)
	if shown.Profile != "small" {
		t.Errorf("execution shows profile %q", shown.Profile)
	}
	if ex := s.run(t, map[string]any{"code": memoryLimit}); s.limitOf(t, ex.Stdout) != strconv.Itoa(512<<20) {
		t.Fatalf("default one-off: %s %q", ex.Status, ex.Stdout)
	}
	// The profile's own default timeout, not the installation's 30 s.
	start := time.Now()
	ex = s.run(t, map[string]any{"code": "import time\ntime.sleep(60)", "profile": "small"})
	if ex.Status != "timed_out" || ex.StartedAt == nil || ex.FinishedAt == nil || ex.FinishedAt.Sub(*ex.StartedAt) > 20*time.Second {
		t.Fatalf("small's default timeout: %s after %s (%+v)", ex.Status, time.Since(start), ex.Error)
	}
	if d := ex.FinishedAt.Sub(*ex.StartedAt); d < 3*time.Second {
		t.Fatalf("timed out after %s, before the profile's 3 s", d)
	}

	// Refusals name the field.
	for _, tc := range []struct {
		key  string
		body map[string]any
	}{
		{"key-b", map[string]any{"code": "1", "profile": "small"}},                                      // not globex's
		{"key-a", map[string]any{"code": "1", "profile": "huge"}},                                       // unknown
		{"key-a", map[string]any{"code": "1", "profile": "small", "timeout_ms": 6000}},                  // over small's max
		{"key-a", map[string]any{"code": "1", "profile": "small", "timeout_ms": 0, "thread_id": "x/y"}}, // bad thread
	} {
		var e struct {
			Error struct{ Code, Field string }
		}
		if code := s.callAs(t, tc.key, "POST", "/v1/executions", tc.body, &e); code != http.StatusBadRequest || e.Error.Field == "" {
			t.Errorf("%v: %d %+v", tc.body, code, e)
		}
	}

	// A thread keeps its profile: its sandbox has the profile's limit, later
	// executions run there, and naming another profile is refused.
	ex = s.run(t, map[string]any{"code": memoryLimit, "profile": "small", "thread_id": "pt"})
	if s.limitOf(t, ex.Stdout) != strconv.Itoa(200<<20) {
		t.Fatalf("thread: %s %q %+v", ex.Status, ex.Stdout, ex.Error)
	}
	ex = s.run(t, map[string]any{"code": memoryLimit + "\nimport os; print(os.path.exists('/opt/codeinterp/runtimes.json'))", "thread_id": "pt"})
	if s.limitOf(t, ex.Stdout) != strconv.Itoa(200<<20) || !strings.HasSuffix(ex.Stdout, "\nTrue\n") || !ex.Sandbox.Reused {
		t.Fatalf("thread, profile omitted: %q reused=%v", ex.Stdout, ex.Sandbox.Reused)
	}
	var e struct {
		Error struct{ Field, Message string }
	}
	if code := s.call(t, "POST", "/v1/executions", map[string]any{"code": "1", "thread_id": "pt", "profile": "default"}, &e); code != http.StatusBadRequest ||
		e.Error.Field != "profile" || !strings.Contains(e.Error.Message, `"small"`) {
		t.Fatalf("another profile on the thread: %d %+v", code, e)
	}
	var th struct{ Profile string }
	if s.call(t, "GET", "/v1/threads/pt", nil, &th); th.Profile != "small" {
		t.Errorf("thread shows profile %q", th.Profile)
	}
}
