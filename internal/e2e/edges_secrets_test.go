package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/internal/app"
	"github.com/codeinterp/codeinterp/internal/app/dockerhost"
	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/internal/provision"
	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/storage"
)

// lockedBuffer collects what many goroutines write: the processes' logs, every answer.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A stack configured with real secrets (a Redis password, an API key, a webhook
// secret, the S3 user's secret) never writes one into a log line, an answer or an
// error, also when its dependencies fail; and /readyz tells anonymous callers no
// internal address or raw error.
func TestSecretsNeverInLogsOrErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, user, s3Secret := scopedUser(t)
	redisPass, apiKey, hookSecret := "redispw-"+rand.Text(), "apikey-"+rand.Text(), "whsec-"+rand.Text()
	secrets := map[string]string{"the Redis password": redisPass, "the API key": apiKey, "the webhook secret": hookSecret,
		"the S3 secret": s3Secret, "MinIO's root password": root.SecretKey}
	redisAddr := testenv.RedisWith(t, "--requirepass", redisPass)
	var delivered atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)

	prefix := fmt.Sprintf("citest-sec%d", os.Getpid())
	storageCfg := storage.Config{Endpoint: root.Endpoint, AccessKey: user, SecretKey: s3Secret, Bucket: root.Bucket, PublicURL: root.PublicURL}
	redisURL := fmt.Sprintf("redis://:%s@%s/0", redisPass, redisAddr)
	cfg := stackConfig(t, redisURL, storageCfg, prefix, stackOptions{
		webhookAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		env: map[string]string{
			"CODEINTERP_API_KEYS": "acme:" + apiKey, "CODEINTERP_WEBHOOK_SECRETS": "acme:" + hookSecret,
			"CODEINTERP_DEV_MODE": "false", "CODEINTERP_LOG_LEVEL": "debug",
		},
	})
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	x, err := a.API(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(x.Handler)
	t.Cleanup(srv.Close)
	rt, closeDocker, err := dockerhost.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeDocker() })
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	t.Cleanup(func() { (&stack{docker: cli}).removeSandboxesOf(prefix) })
	w := a.Worker(rt, app.WorkerOptions{ID: prefix + "-w0", Linger: time.Second,
		RetryDelay: func(int, error, *asynq.Task) time.Duration { return 100 * time.Millisecond }})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			w.Shutdown(sctx)
			x.Close()
		}
	}
	t.Cleanup(stop)

	answers, readyz := &lockedBuffer{}, &lockedBuffer{} // every answer; /readyz's
	httpc := testenv.OpenAPIClient(t, srv.URL)
	call := func(key, method, path string, body any) (int, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, srv.URL+path, rd)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := httpc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		fmt.Fprintf(answers, "%s %s → %d %v %s\n", method, path, resp.StatusCode, resp.Header, raw)
		if path == "/readyz" {
			readyz.Write(raw)
		}
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		return resp.StatusCode, out
	}
	runToEnd := func(req map[string]any) map[string]any {
		t.Helper()
		code, ex := call(apiKey, "POST", "/v1/executions", req)
		if code != http.StatusAccepted {
			t.Fatalf("POST: %d %v", code, ex)
		}
		var end map[string]any
		eventually(t, 2*time.Minute, "the execution ends", func() bool {
			_, end = call(apiKey, "GET", "/v1/executions/"+ex["id"].(string)+"?wait=20s", nil)
			return end["status"] != "queued" && end["status"] != "running"
		})
		return end
	}

	eventually(t, time.Minute, "/readyz is ready", func() bool {
		code, _ := call("", "GET", "/readyz", nil)
		return code == http.StatusOK
	})
	if code, _ := call("wrong-key", "GET", "/v1/executions", nil); code != http.StatusUnauthorized {
		t.Fatalf("a wrong key: %d", code)
	}
	ok := runToEnd(map[string]any{"thread_id": "sec", "code": "print('hello')\nopen('outputs/o.txt','w').write('o')", "webhook_url": hook.URL})
	if ok["status"] != "succeeded" {
		t.Fatalf("run: %v", ok)
	}
	eventually(t, time.Minute, "the webhook is delivered", func() bool { return delivered.Load() > 0 })
	if bad := runToEnd(map[string]any{"code": "raise ValueError('boom')"}); bad["status"] != "failed" {
		t.Fatalf("failing run: %v", bad)
	}
	a.Janitor(rt).Sweep(ctx)

	// Storage refuses the services from now on (the user's secret is rotated behind
	// their back): readiness fails without details, an upload fails without them.
	if _, err := provision.Run(ctx, provision.Config{Root: root, Skills: skillBucket(root), User: user, Secret: "rotated-" + rand.Text()}); err != nil {
		t.Fatal(err)
	}
	var checks map[string]any
	eventually(t, time.Minute, "/readyz reports storage unavailable", func() bool {
		code, body := call("", "GET", "/readyz", nil)
		checks, _ = body["checks"].(map[string]any)
		return code == http.StatusServiceUnavailable && checks["storage"] == "unavailable"
	})
	if checks["redis"] != "ok" || checks["workers"] != "ok" {
		t.Fatalf("readyz checks %v", checks)
	}
	// A 500 is no documented answer: this one request skips the OpenAPI check.
	httpc = http.DefaultClient
	if code, body := call(apiKey, "POST", "/v1/files?name=x.txt", "x"); code != http.StatusInternalServerError {
		t.Fatalf("upload with storage refusing: %d %v", code, body)
	}
	stop()

	// Errors met before any log line: configuration, storage and Redis refusing.
	_, cfgErr := config.Load(map[string]string{
		"CODEINTERP_REDIS_URL":       "http://:" + redisPass + "@redis:6379/0",
		"CODEINTERP_API_KEYS":        "bad tenant!:" + apiKey,
		"CODEINTERP_WEBHOOK_SECRETS": "acme:" + hookSecret + ",globex:short",
		"CODEINTERP_S3_SECRET_KEY":   s3Secret,
	})
	if cfgErr == nil {
		t.Fatal("a bad configuration was accepted")
	}
	badStore, err := storage.New(storageCfg) // the old secret
	if err != nil {
		t.Fatal(err)
	}
	initErr := badStore.Init(ctx)
	if initErr == nil {
		t.Fatal("storage accepted a revoked secret")
	}
	wrongRedis := cfg
	wrongRedis.RedisURL = fmt.Sprintf("redis://:%s-wrong@%s/0", redisPass, redisAddr)
	b, err := app.Open(ctx, wrongRedis, log)
	if err == nil {
		defer b.Close()
		err = b.Redis.Ping(ctx).Err()
	}
	if err == nil {
		t.Fatal("Redis accepted a wrong password")
	}
	errs := fmt.Sprintf("%v\n%v\n%v", cfgErr, initErr, err)

	out := logs.String()
	for _, want := range []string{"readiness check failed", "request failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("the logs lack %q: the failures were not logged, so this test saw nothing", want)
		}
	}
	for what, secret := range secrets {
		for where, text := range map[string]string{"a log line": out, "an answer": answers.String(), "an error": errs} {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("%s holds %s: …%s…", where, what, text[max(0, i-200):min(len(text), i+len(secret)+40)])
			}
		}
	}
	// Presigned links in answers name MinIO's public address, as they must; /readyz,
	// which anyone may ask, names nothing internal.
	for _, addr := range []string{root.Endpoint, redisAddr, "127.0.0.1", "dial", "Access Key"} {
		if strings.Contains(readyz.String(), addr) {
			t.Errorf("/readyz shows %q: %s", addr, readyz.String())
		}
	}
}
