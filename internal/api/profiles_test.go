package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/sandbox"
)

// testProfiles: acme may use default and big, globex default and hidden.
var testProfiles = jobs.NewProfiles(
	jobs.Profile{Image: "img-default", DefaultTimeoutMS: 30000, MaxTimeoutMS: 60000, Limits: sandbox.Limits{Workspace: 64 << 10}},
	[]jobs.Profile{
		{Name: "big", Image: "img-big", DefaultTimeoutMS: 45000, MaxTimeoutMS: 120000, Limits: sandbox.Limits{Memory: 1 << 30, CPUs: 2, Workspace: 128 << 10}},
		{Name: "hidden", Image: "img-hidden", DefaultTimeoutMS: 30000, MaxTimeoutMS: 60000},
	},
	map[string][]string{"acme": {"default", "big"}, "globex": {"default", "hidden"}},
)

func TestProfileValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		name, key, body string
		status          int
		field, profile  string
	}{
		{"omitted", "key-a", `{"code":"1"}`, 202, "", "default"},
		{"named", "key-a", `{"code":"1","profile":"big"}`, 202, "", "big"},
		{"unknown", "key-a", `{"code":"1","profile":"ghost"}`, 400, "profile", ""},
		{"another tenant's", "key-a", `{"code":"1","profile":"hidden"}`, 400, "profile", ""},
		{"not allowed", "key-b", `{"code":"1","profile":"big"}`, 400, "profile", ""},
		{"wrong type", "key-a", `{"code":"1","profile":7}`, 400, "profile", ""},
		{"over the default's max", "key-a", `{"code":"1","timeout_ms":100000}`, 400, "timeout_ms", ""},
		{"within big's max", "key-a", `{"code":"1","profile":"big","timeout_ms":100000}`, 202, "", "big"},
		{"over big's max", "key-a", `{"code":"1","profile":"big","timeout_ms":120001}`, 400, "timeout_ms", ""},
		{"files over default's workspace", "key-a", `{"code":"1","files":[{"name":"a","content_base64":"` + b64(strings.Repeat("y", 70<<10)) + `"}]}`, 413, "files", ""},
		{"files within big's workspace", "key-a", `{"code":"1","profile":"big","files":[{"name":"a","content_base64":"` + b64(strings.Repeat("y", 70<<10)) + `"}]}`, 202, "", "big"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(t, "POST", "/v1/executions", tc.key, tc.body)
			_, field := r.errorField()
			if r.status != tc.status || field != tc.field {
				t.Fatalf("got %d field=%q, want %d field=%q; body %v", r.status, field, tc.status, tc.field, r.body)
			}
			if tc.profile != "" && r.body["profile"] != tc.profile {
				t.Fatalf("profile %v, want %s", r.body["profile"], tc.profile)
			}
		})
	}
	// A tenant cannot tell a profile of another tenant's from one that does not exist.
	msg := func(key, profile string) string {
		e := b.do(t, "POST", "/v1/executions", key, `{"code":"1","profile":"`+profile+`"}`).body["error"].(map[string]any)
		return strings.ReplaceAll(e["message"].(string), profile, "X")
	}
	if hidden, ghost := msg("key-a", "hidden"), msg("key-a", "ghost"); hidden != ghost {
		t.Errorf("another tenant's profile: %q; an unknown one: %q", hidden, ghost)
	}
}

// A thread keeps the profile it was created with.
func TestThreadKeepsProfile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if r := b.do(t, "POST", "/v1/executions", "key-a", `{"code":"1","thread_id":"t1","profile":"big"}`); r.status != 202 || r.body["profile"] != "big" {
		t.Fatalf("create thread: %d %v", r.status, r.body)
	}
	r := b.do(t, "POST", "/v1/executions", "key-a", `{"code":"1","thread_id":"t1","profile":"default"}`)
	if _, field := r.errorField(); r.status != 400 || field != "profile" || !strings.Contains(r.body["error"].(map[string]any)["message"].(string), `"big"`) {
		t.Fatalf("another profile on the thread: %d %v", r.status, r.body)
	}
	if r := b.do(t, "POST", "/v1/executions", "key-a", `{"code":"1","thread_id":"t1"}`); r.status != 202 || r.body["profile"] != "big" {
		t.Fatalf("omitted on the thread: %d %v", r.status, r.body)
	}
	// The thread's profile bounds the timeout.
	if r := b.do(t, "POST", "/v1/executions", "key-a", `{"code":"1","thread_id":"t1","timeout_ms":100000}`); r.status != 202 {
		t.Fatalf("big's timeout on the thread: %d %v", r.status, r.body)
	}
	if r := b.do(t, "GET", "/v1/threads/t1", "key-a", ""); r.status != 200 || r.body["profile"] != "big" {
		t.Fatalf("thread: %d %v", r.status, r.body)
	}
	// Another tenant's thread of the same name is its own.
	if r := b.do(t, "POST", "/v1/executions", "key-b", `{"code":"1","thread_id":"t1"}`); r.status != 202 || r.body["profile"] != "default" {
		t.Fatalf("globex's t1: %d %v", r.status, r.body)
	}
	// A file put to a new thread creates it in the tenant's default profile.
	if r := b.do(t, "PUT", "/v1/threads/t2/files/a.txt", "key-a", "hello"); r.status != 201 {
		t.Fatalf("put file: %d %v", r.status, r.body)
	}
	if r := b.do(t, "POST", "/v1/executions", "key-a", `{"code":"1","thread_id":"t2","profile":"big"}`); r.status != 400 {
		t.Fatalf("big on a default thread: %d %v", r.status, r.body)
	}
}

func TestRuntimes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(t, "GET", "/v1/runtimes", "key-a", "")
	if r.status != 200 || r.body["default_profile"] != "default" {
		t.Fatalf("runtimes: %d %v", r.status, r.body)
	}
	if langs := r.body["languages"].([]any); len(langs) != len(sandbox.Languages) {
		t.Errorf("languages: %v", langs)
	}
	profiles := r.body["profiles"].([]any)
	if len(profiles) != 2 {
		t.Fatalf("acme's profiles: %v", profiles)
	}
	big := profiles[1].(map[string]any)
	limits := big["limits"].(map[string]any)
	if big["name"] != "big" || limits["memory_mb"] != 1024.0 || limits["cpus"] != 2.0 || limits["max_timeout_ms"] != 120000.0 ||
		big["manifest"] != "pending" || len(big["packages"].([]any)) != 0 {
		t.Fatalf("big before any worker published: %v", big)
	}
	if strings.Contains(fmt.Sprint(b.do(t, "GET", "/v1/runtimes", "key-a", "").body), "img-") {
		t.Error("image references are shown to tenants")
	}
	// A worker publishes what the images hold.
	ctx := context.Background()
	m := &sandbox.Manifest{Image: "full", Languages: []sandbox.ManifestEntry{{Name: "python", Version: "3.11.2"}},
		Packages: []sandbox.ManifestPackage{{Name: "pandas", Version: "1.5.3", Kind: "python"}, {Name: "numpy", Version: "1.24.2", Kind: "python"}},
		Missing:  []sandbox.ManifestMissing{{Name: "markitdown", Why: "not in Debian"}}}
	if err := b.records.PublishManifest(ctx, "img-big", records.ImageManifest{Manifest: m, Worker: "w", ReadAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := b.records.PublishManifest(ctx, "img-default", records.ImageManifest{Worker: "w", ReadAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	profiles = b.do(t, "GET", "/v1/runtimes", "key-a", "").body["profiles"].([]any)
	def, big := profiles[0].(map[string]any), profiles[1].(map[string]any)
	if def["manifest"] != "absent" || len(def["packages"].([]any)) != 0 {
		t.Errorf("default, of an image without a manifest: %v", def)
	}
	pkgs := big["packages"].([]any)
	if big["manifest"] != "published" || big["image_kind"] != "full" || len(pkgs) != 2 || pkgs[0].(map[string]any)["name"] != "numpy" ||
		len(big["missing"].([]any)) != 1 || len(big["languages"].([]any)) != 1 {
		t.Errorf("big, published: %v", big)
	}
	// globex sees its own profiles, not acme's.
	var names []string
	for _, p := range b.do(t, "GET", "/v1/runtimes", "key-b", "").body["profiles"].([]any) {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "default,hidden" {
		t.Errorf("globex's profiles: %v", names)
	}
	if r := b.do(t, "GET", "/v1/runtimes", "", ""); r.status != 401 {
		t.Errorf("unauthenticated: %d", r.status)
	}
}
