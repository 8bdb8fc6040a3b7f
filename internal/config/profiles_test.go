package config

import (
	"strings"
	"testing"

	"github.com/codeinterp/codeinterp/jobs"
)

func loadDev(t *testing.T, extra map[string]string) (Config, error) {
	t.Helper()
	env := map[string]string{"CODEINTERP_DEV_MODE": "true"}
	for k, v := range extra {
		env[k] = v
	}
	return Load(env)
}

// Unset, there is the default profile alone, of today's defaults, for every tenant.
func TestProfilesDefault(t *testing.T) {
	c, err := loadDev(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := c.SandboxProfiles()
	if err != nil {
		t.Fatal(err)
	}
	all := ps.All()
	if len(all) != 1 || all[0].Name != jobs.DefaultProfile {
		t.Fatalf("profiles: %+v", all)
	}
	d := all[0]
	if d.Image != "codeinterp/sandbox:latest" || d.DefaultTimeoutMS != 30000 || d.MaxTimeoutMS != 600000 ||
		d.Limits.Memory != 512<<20 || d.Limits.CPUs != 1 || d.Limits.Workspace != 100<<20 || d.Limits.Output != 1<<20 ||
		d.WarmPool != 2 || d.OneOffPool != 2 {
		t.Fatalf("default profile: %+v", d)
	}
	if !ps.Allowed("anyone", "default") || ps.TenantDefault("anyone") != "default" || ps.Allowed("anyone", "big") {
		t.Fatal("every tenant should have the default profile alone")
	}
}

func TestProfilesParse(t *testing.T) {
	c, err := loadDev(t, map[string]string{
		"CODEINTERP_PROFILES": "big:image=codeinterp/sandbox:latest,cpus=2,memory_mb=2048,pids=256,workspace_mb=500," +
			"output_bytes=4194304,timeout_ms=60000,max_timeout_ms=900000,warm_pool=1,oneoff_pool=3; slim:image=codeinterp/sandbox-slim:latest",
		"CODEINTERP_TENANT_PROFILES": "acme:big+default;globex:slim;*:default+slim",
		"CODEINTERP_WARM_POOL":       "5",
		"CODEINTERP_ONEOFF_POOL":     "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := c.SandboxProfiles()
	big, ok := ps.Get("big")
	if !ok || big.Limits.CPUs != 2 || big.Limits.Memory != 2048<<20 || big.Limits.Pids != 256 || big.Limits.Workspace != 500<<20 ||
		big.Limits.Output != 4<<20 || big.DefaultTimeoutMS != 60000 || big.MaxTimeoutMS != 900000 ||
		big.WarmPool != 1 || big.OneOffPool != 3 {
		t.Fatalf("big: %+v", big)
	}
	slim, _ := ps.Get("slim")
	if slim.Image != "codeinterp/sandbox-slim:latest" || slim.Limits != c.Limits() || slim.MaxTimeoutMS != c.MaxTimeoutMS {
		t.Fatalf("slim should take the default's limits: %+v", slim)
	}
	// Pools are not inherited: a profile has them only if it asks.
	if def := ps.Default(); def.WarmPool != 5 || def.OneOffPool != 0 || slim.WarmPool != 0 || slim.OneOffPool != 0 {
		t.Fatalf("pool sizes: default %d/%d, slim %d/%d; want 5/0 and 0/0", def.WarmPool, def.OneOffPool, slim.WarmPool, slim.OneOffPool)
	}
	for _, tc := range []struct {
		tenant, profile string
		allowed         bool
	}{
		{"acme", "big", true}, {"acme", "default", true}, {"acme", "slim", false},
		{"globex", "slim", true}, {"globex", "default", false}, {"globex", "big", false},
		{"initech", "default", true}, {"initech", "slim", true}, {"initech", "big", false},
		{"acme", "nope", false},
	} {
		if got := ps.Allowed(tc.tenant, tc.profile); got != tc.allowed {
			t.Errorf("%s may use %s: %v, want %v", tc.tenant, tc.profile, got, tc.allowed)
		}
	}
	if ps.TenantDefault("acme") != "big" || ps.TenantDefault("globex") != "slim" || ps.TenantDefault("initech") != "default" {
		t.Error("a tenant's first profile is its default")
	}
	if names := names(ps.For("acme")); names != "big,default" {
		t.Errorf("acme's profiles: %s", names)
	}
}

func names(ps []jobs.Profile) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}

// Every problem is reported at once, naming its variable.
func TestProfilesErrors(t *testing.T) {
	_, err := loadDev(t, map[string]string{
		"CODEINTERP_PROFILES": "big:cpus=two,colour=red,memory_mb=32;default:cpus=2;Bad Name:cpus=1;" +
			"huge:image=has space;long:timeout_ms=700000;big:cpus=1;noequals:cpus;pools:warm_pool=-1,oneoff_pool=two;frac:warm_pool=1.5",
		"CODEINTERP_TENANT_PROFILES": "acme:big+ghost;globex;acme:default",
	})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`CODEINTERP_PROFILES big: cpus="two": want a positive number`,
		`CODEINTERP_PROFILES big: unknown key "colour"`,
		`CODEINTERP_PROFILES big: memory_mb 32: want at least 64`,
		`CODEINTERP_PROFILES: the default profile is set by`,
		`CODEINTERP_PROFILES: "Bad Name:cpus=1"`,
		`CODEINTERP_PROFILES huge: image "has space"`,
		`CODEINTERP_PROFILES long: timeout_ms 700000: want at most max_timeout_ms (600000)`,
		`CODEINTERP_PROFILES: profile "big" is defined twice`,
		`CODEINTERP_PROFILES noequals: "cpus": want key=value`,
		`CODEINTERP_PROFILES pools: warm_pool="-1": want a whole number, 0 or more`,
		`CODEINTERP_PROFILES pools: oneoff_pool="two": want a whole number, 0 or more`,
		`CODEINTERP_PROFILES frac: warm_pool="1.5": want a whole number, 0 or more`,
		`CODEINTERP_TENANT_PROFILES: tenant "acme": unknown profile "ghost"`,
		`CODEINTERP_TENANT_PROFILES: "globex"`,
		`CODEINTERP_TENANT_PROFILES: tenant "acme" is listed twice`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
}

// A profile's output cap must fit the full log kept of an execution.
func TestProfilesOutputFitsLog(t *testing.T) {
	_, err := loadDev(t, map[string]string{
		"CODEINTERP_PROFILES":      "chatty:output_bytes=2000000",
		"CODEINTERP_MAX_LOG_BYTES": "1500000",
	})
	if err == nil || !strings.Contains(err.Error(), "CODEINTERP_MAX_LOG_BYTES") || !strings.Contains(err.Error(), "chatty") {
		t.Fatalf("err = %v", err)
	}
}
