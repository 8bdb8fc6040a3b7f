package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/journal"
	"github.com/codeinterp/codeinterp/sandbox/sandboxtest"
)

// With CODEINTERP_SANDBOX_JOURNAL set, a wired worker and janitor record their
// sandbox operations under their ids (against real Redis and MinIO): the worker's
// warm pool creating a blank sandbox, the janitor removing a dead worker's.
func TestSandboxJournalWired(t *testing.T) {
	ctx := context.Background()
	addr, db := testenv.RedisDB(t)
	st := testenv.MinIO(t)
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	cfg, err := config.Load(map[string]string{
		"CODEINTERP_REDIS_URL": fmt.Sprintf("redis://%s/%d", addr, db), "CODEINTERP_S3_ENDPOINT": st.Endpoint,
		"CODEINTERP_S3_ACCESS_KEY": st.AccessKey, "CODEINTERP_S3_SECRET_KEY": st.SecretKey, "CODEINTERP_S3_BUCKET": st.Bucket,
		"CODEINTERP_SANDBOX_JOURNAL": path, "CODEINTERP_WARM_POOL": "1", "CODEINTERP_WORKER_ID": "jw",
		"CODEINTERP_DEV_MODE": "true", // the test MinIO has the demo credentials
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	fake := sandboxtest.NewFake()
	fake.Now = func() time.Time { return time.Now().Add(-time.Hour) } // the dead worker's sandbox is old
	if _, err := fake.CreateBlank(ctx, sandbox.Spec{Owner: "dead-worker"}); err != nil {
		t.Fatal(err)
	}
	a.Janitor(fake).Sweep(ctx)
	w := a.Worker(fake, WorkerOptions{Linger: time.Second})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Shutdown(ctx)

	var ops []string
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); <-tick.C {
		es, _, _ := journal.ReadFiles(path)
		ops = ops[:0]
		for _, e := range es {
			ops = append(ops, e.Worker+" "+e.Op)
		}
		if slices.Contains(ops, cfg.WorkerID+" create_blank") {
			break
		}
	}
	for _, want := range []string{"janitor-" + cfg.WorkerID + " attach", "janitor-" + cfg.WorkerID + " remove", cfg.WorkerID + " create_blank"} {
		if !slices.Contains(ops, want) {
			t.Errorf("journal %q lacks %q", ops, want)
		}
	}
}
