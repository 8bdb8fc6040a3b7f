package worker_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/internal/worker"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// storeSkill stores a one-file skill version and returns it as a submission would
// resolve it.
func (e *env) storeSkill(tenant, name string, version int, content string) jobs.Skill {
	e.t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "README.md", Size: int64(len(content)), Mode: 0o644})
	tw.Write([]byte(content))
	tw.Close()
	sum := sha256.Sum256(buf.Bytes())
	if _, err := e.store.Put(e.t.Context(), jobs.SkillKey(tenant, name, version), bytes.NewReader(buf.Bytes()), int64(buf.Len()), ""); err != nil {
		e.t.Fatal(err)
	}
	return jobs.Skill{Name: name, Version: version, Digest: hex.EncodeToString(sum[:]), Size: int64(buf.Len()), Files: 1}
}

func (e *env) runWithSkills(tenant, thread string, skills ...jobs.Skill) *jobs.Execution {
	e.t.Helper()
	ex := &jobs.Execution{ID: jobs.NewID(), Tenant: tenant, ThreadID: thread, Language: sandbox.Python, Code: "1",
		Status: jobs.Queued, TimeoutMS: 30000, CreatedAt: time.Now(), Skills: skills}
	if _, err := e.recs.Create(e.t.Context(), ex, "", ""); err != nil {
		e.t.Fatal(err)
	}
	return e.wait(ex.ID)
}

// A warm thread's sandbox gets a skill version once: the same version again costs
// nothing, another replaces it; a skill deleted meanwhile is left out with a note, and
// an archive that does not match its digest is never put in.
func TestSkillsPutOncePerWarmSandbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *worker.Config) {
		c.SkillCache = worker.SkillCacheConfig{Dir: t.TempDir()}
	})
	e.cfg.Skills = e.store
	e.start()
	v1, v2 := e.storeSkill("acme", "tools", 1, "one"), e.storeSkill("acme", "tools", 2, "two")
	for i, sk := range []jobs.Skill{v1, v1, v2} {
		if ex := e.runWithSkills("acme", "t1", sk); ex.Status != jobs.Succeeded {
			t.Fatalf("run %d: %s %+v", i, ex.Status, ex.Error)
		}
	}
	box := e.box("acme", "t1")
	if n := box.SkillPuts(); n != 2 {
		t.Fatalf("skill put %d times, want 2 (v1 once, then v2)", n)
	}
	if got := string(box.Skill("tools")["README.md"]); got != "two" {
		t.Fatalf("tools holds %q, want version 2", got)
	}

	gone := jobs.Skill{Name: "gone", Version: 1, Digest: strings.Repeat("0", 64), Size: 10}
	ex := e.runWithSkills("acme", "t1", v2, gone)
	if ex.Status != jobs.Succeeded || len(ex.Notes) != 1 || !strings.Contains(ex.Notes[0], "gone@1 was deleted") {
		t.Fatalf("a deleted skill: %s %+v notes %q", ex.Status, ex.Error, ex.Notes)
	}
	forged := e.storeSkill("acme", "forged", 1, "x")
	forged.Digest = strings.Repeat("a", 64)
	ex = e.runWithSkills("acme", "t1", forged)
	// The service's fault, not the tenant's: a SandboxError with a reference to the log.
	if ex.Status != jobs.Failed || !jobs.ErrSandboxError.Is(ex.Error) || !strings.Contains(ex.Error.Value, "reference err_") || box.Skill("forged") != nil {
		t.Fatalf("an archive not matching its digest: %s %+v", ex.Status, ex.Error)
	}
}
