package config

import (
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	c, err := Load(map[string]string{"CODEINTERP_DEV_MODE": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if c.TimeoutMS != 30000 || c.MemoryMB != 512 || c.WorkspaceMB != 100 || c.OutputBytes != 1<<20 || c.URLTTL != time.Hour || c.Retention != 7*24*time.Hour {
		t.Fatalf("defaults: %+v", c)
	}
	if l := c.Limits(); l.Memory != 512<<20 || l.Workspace != 100<<20 || l.Pids != 128 {
		t.Fatalf("limits: %+v", l)
	}
}

// Every problem is reported at once, each naming its variable.
func TestReportsEveryProblem(t *testing.T) {
	_, err := Load(map[string]string{
		"CODEINTERP_TIMEOUT_MS":    "0",
		"CODEINTERP_MEMORY_MB":     "1",
		"CODEINTERP_S3_PUBLIC_URL": "localhost:9000",
		"CODEINTERP_LOG_FORMAT":    "xml",
	})
	if err == nil {
		t.Fatal("no error")
	}
	for _, name := range []string{"CODEINTERP_TIMEOUT_MS", "CODEINTERP_MEMORY_MB", "CODEINTERP_S3_PUBLIC_URL", "CODEINTERP_LOG_FORMAT"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
}

func TestUnparsable(t *testing.T) {
	if _, err := Load(map[string]string{"CODEINTERP_URL_TTL": "an hour"}); err == nil || !strings.Contains(err.Error(), "URL_TTL") {
		t.Fatalf("err = %v", err)
	}
}

// A bad setting is reported without the secrets it may hold.
func TestErrorsHideSecrets(t *testing.T) {
	_, err := Load(map[string]string{"CODEINTERP_REDIS_URL": "http://:hunter2secret@redis:6379/0"})
	if err == nil || strings.Contains(err.Error(), "hunter2secret") {
		t.Fatalf("err = %v", err)
	}
}

// The sandbox runtime is runc unless set, and must look like a runtime name: it is
// passed to the Docker engine, which checks that it is registered.
func TestSandboxRuntime(t *testing.T) {
	dev := map[string]string{"CODEINTERP_DEV_MODE": "true"} // the defaults are the demo secrets
	if c, err := Load(dev); err != nil || c.SandboxRuntime != "runc" {
		t.Fatalf("default runtime %q, %v", c.SandboxRuntime, err)
	}
	if c, err := Load(map[string]string{"CODEINTERP_DEV_MODE": "true", "CODEINTERP_SANDBOX_RUNTIME": "runsc"}); err != nil || c.SandboxRuntime != "runsc" {
		t.Fatalf("runsc: %q, %v", c.SandboxRuntime, err)
	}
	for _, bad := range []string{"run sc", "--runtime=runc", "/usr/bin/runsc", "runc;rm"} {
		if _, err := Load(map[string]string{"CODEINTERP_SANDBOX_RUNTIME": bad}); err == nil || !strings.Contains(err.Error(), "CODEINTERP_SANDBOX_RUNTIME") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}
