package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeinterp/codeinterp/internal/testenv"
)

// workerProcess is a real cmd/worker process, so it can be SIGKILLed.
type workerProcess struct {
	id  string
	cmd *exec.Cmd
}

// startWorkerProcess runs the worker binary against the stack's Redis, MinIO and
// sandbox prefix.
// Later env entries ("NAME=value") override the defaults.
func (s *stack) startWorkerProcess(t *testing.T, bin, id string, env ...string) *workerProcess {
	t.Helper()
	addr := s.rdb.Options().Addr
	st := s.storageConfig
	logf, err := os.Create(filepath.Join(t.TempDir(), id+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("CODEINTERP_REDIS_URL=redis://%s/%d", addr, s.rdb.Options().DB),
		"CODEINTERP_KEY_PREFIX=ci:",
		"CODEINTERP_S3_ENDPOINT="+st.Endpoint, "CODEINTERP_S3_ACCESS_KEY="+st.AccessKey,
		"CODEINTERP_S3_SECRET_KEY="+st.SecretKey, "CODEINTERP_S3_BUCKET="+st.Bucket,
		"CODEINTERP_SANDBOX_IMAGE="+testenv.Image("sandbox"), "CODEINTERP_SANDBOX_PREFIX="+s.prefix,
		"CODEINTERP_WORKER_ID="+id, "CODEINTERP_WORKER_CONCURRENCY=4",
		"CODEINTERP_HEARTBEAT_TTL="+heartbeatTTL.String(), "CODEINTERP_TASK_CHECK_INTERVAL=50ms",
		"CODEINTERP_INTERRUPT_GRACE=1s", "CODEINTERP_LOG_LEVEL=debug", "CODEINTERP_WARM_POOL=0", "CODEINTERP_ONEOFF_POOL=0",
		"CODEINTERP_MAX_SANDBOXES=0", "CODEINTERP_MAX_SANDBOXES_PER_TENANT=0",
		"CODEINTERP_DEV_MODE=true", // the test MinIO's credentials are the demo ones
	)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("--- %s log (tail) ---\n%s", id, tail(string(b), 40))
		}
	})
	return &workerProcess{id: id, cmd: cmd}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func buildWorker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "worker")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/codeinterp/codeinterp/cmd/worker").CombinedOutput()
	if err != nil {
		t.Fatalf("build worker: %v\n%s", err, out)
	}
	return bin
}
