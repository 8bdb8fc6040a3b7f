// Package e2e tests codeinterp end to end: HTTP → Redis (asynq) → worker → Docker →
// MinIO → presigned download, with real services and in-process api and worker.
package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/app"
	"github.com/codeinterp/codeinterp/internal/app/dockerhost"
	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/internal/worker"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/threadq"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/docker"
	"github.com/codeinterp/codeinterp/storage"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// stack is one test's codeinterp: its own Redis database, bucket and sandbox prefix,
// an in-process API and any number of in-process workers, all wired by internal/app
// like the binaries.
type stack struct {
	t       *testing.T
	url     string
	metrics string // the API's internal listener of /metrics (CODEINTERP_METRICS_ADDR)
	app     *app.App
	cfg     config.Config
	rdb     *redis.Client
	docker  *client.Client
	prefix  string // sandbox name prefix and label, unique to the test
	records *records.Store
	threads *threadq.Queue
	store   *storage.Store
	runtime *docker.Runtime
	opt     stackOptions
	workers []*testWorker

	storageConfig storage.Config
	janitors      int
	http          *http.Client // checks every API response against openapi.json
}

type stackOptions struct {
	limits          sandbox.Limits
	shutdownTimeout time.Duration
	concurrency     int
	noWorkers       bool // the test starts its own (worker processes)
	webhookAllow    []netip.Prefix
	warmPool        int
	oneOffPool      int
	recycle         bool // one-off sandboxes wiped and kept for the tenant's next one-off
	maxSandboxes    int
	maxPerTenant    int
	// env overrides CODEINTERP_* settings, e.g. a quota a test is about.
	env map[string]string
	// redisURL is a Redis of the test's own (testenv.NewOwnRedis) instead of a
	// database of the shared one.
	redisURL string
}

// testWorker is one in-process worker.
type testWorker struct {
	id   string
	w    *app.Worker
	once sync.Once
}

func (w *testWorker) stop(timeout time.Duration) {
	w.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		w.w.Shutdown(ctx)
	})
}

const webhookSecret = "whsec_test_0123456789"

// heartbeatTTL is short in tests, so a dead worker's threads move on quickly.
const heartbeatTTL = 2 * time.Second

// stackConfig is the configuration of a test's stack, as the binaries would read it
// from the environment.
func stackConfig(t *testing.T, redisURL string, st storage.Config, prefix string, opt stackOptions) config.Config {
	t.Helper()
	var allow []string
	for _, p := range opt.webhookAllow {
		allow = append(allow, p.String())
	}
	env := map[string]string{
		"CODEINTERP_REDIS_URL": redisURL, "CODEINTERP_KEY_PREFIX": "ci:", "CODEINTERP_RETENTION": "1h",
		"CODEINTERP_S3_ENDPOINT": st.Endpoint, "CODEINTERP_S3_ACCESS_KEY": st.AccessKey, "CODEINTERP_S3_SECRET_KEY": st.SecretKey,
		"CODEINTERP_S3_BUCKET": st.Bucket, "CODEINTERP_S3_PUBLIC_URL": st.PublicURL,
		"CODEINTERP_API_KEYS": "acme:key-a,globex:key-b", "CODEINTERP_MAX_REQUEST_BYTES": fmt.Sprint(8 << 20),
		"CODEINTERP_WORKSPACE_MB": "8", "CODEINTERP_MAX_TIMEOUT_MS": "300000",
		"CODEINTERP_WEBHOOK_SECRETS": "acme:" + webhookSecret, "CODEINTERP_WEBHOOK_ALLOW": strings.Join(allow, ","),
		"CODEINTERP_WEBHOOK_TIMEOUT": "5s",
		"CODEINTERP_SANDBOX_IMAGE":   testenv.Image("sandbox"), "CODEINTERP_SANDBOX_PREFIX": prefix, "CODEINTERP_INTERRUPT_GRACE": "3s",
		"CODEINTERP_HEARTBEAT_TTL": heartbeatTTL.String(), "CODEINTERP_TASK_CHECK_INTERVAL": "20ms",
		"CODEINTERP_WORKER_CONCURRENCY": fmt.Sprint(cmp.Or(opt.concurrency, 4)), "CODEINTERP_WARM_POOL": fmt.Sprint(opt.warmPool),
		// Tests that are not about one-off fairness run acme's one-offs side by side.
		"CODEINTERP_ONEOFF_TENANT_SHARE": fmt.Sprint(cmp.Or(opt.concurrency, 4)),
		"CODEINTERP_ONEOFF_POOL":         fmt.Sprint(opt.oneOffPool), "CODEINTERP_ONEOFF_RECYCLE": fmt.Sprint(opt.recycle),
		"CODEINTERP_MAX_SANDBOXES": fmt.Sprint(opt.maxSandboxes), "CODEINTERP_MAX_SANDBOXES_PER_TENANT": fmt.Sprint(opt.maxPerTenant),
		"CODEINTERP_SHUTDOWN_TIMEOUT": cmp.Or(opt.shutdownTimeout, time.Minute).String(),
		// Tests that are not about quotas must not meet them: the hammer alone submits
		// 400 executions in a burst.
		"CODEINTERP_QUOTA_RATE": "100000", "CODEINTERP_QUOTA_BURST": "100000", "CODEINTERP_QUOTA_ACTIVE": "100000",
		"CODEINTERP_QUOTA_THREAD_QUEUE": "100000", "CODEINTERP_QUOTA_STREAMS": "1000",
		// testenv's MinIO runs with the demo credentials.
		"CODEINTERP_DEV_MODE": "true",
	}
	// The OCI runtime of the sandboxes: runc when unset; `make test-runsc` sets runsc.
	env["CODEINTERP_SANDBOX_RUNTIME"] = os.Getenv("CODEINTERP_SANDBOX_RUNTIME")
	for k, v := range opt.env {
		env[k] = v
	}
	l := opt.limits
	if l.Memory > 0 {
		env["CODEINTERP_MEMORY_MB"] = fmt.Sprint(l.Memory >> 20)
	}
	if l.Output > 0 {
		env["CODEINTERP_OUTPUT_BYTES"] = fmt.Sprint(l.Output)
	}
	cfg, err := config.Load(env)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newStack(t *testing.T, opt stackOptions) *stack {
	t.Helper()
	ctx := context.Background()
	redisURL, prefix := opt.redisURL, ""
	if redisURL != "" {
		// The port is the test's own, so it names the test's sandboxes.
		u, _ := url.Parse(redisURL)
		prefix = fmt.Sprintf("citest-own-%d-%s", os.Getpid(), u.Port())
	} else {
		addr, db := testenv.RedisDB(t)
		// The process id keeps test binaries run at once (a developer's and CI's, say) apart.
		redisURL, prefix = fmt.Sprintf("redis://%s/%d", addr, db), fmt.Sprintf("citest-%d-%d", os.Getpid(), db)
	}
	storageConfig := testenv.MinIO(t)
	cfg := stackConfig(t, redisURL, storageConfig, prefix, opt)
	a, err := app.Open(ctx, cfg, discardLogger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	rt, closeDocker, err := dockerhost.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeDocker() })
	if err := rt.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	s := &stack{t: t, app: a, cfg: cfg, rdb: a.Redis, docker: cli, prefix: prefix, records: a.Records, threads: a.Threads,
		store: a.Store, runtime: rt, opt: opt, storageConfig: storageConfig}
	t.Cleanup(func() { s.removeSandboxes() })
	x, err := a.API(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Close)
	srv := httptest.NewServer(x.Handler)
	t.Cleanup(srv.Close)
	s.url = srv.URL
	ms := httptest.NewServer(x.MetricsServer("").Handler)
	t.Cleanup(ms.Close)
	s.metrics = ms.URL
	s.http = testenv.OpenAPIClient(t, srv.URL)
	if !opt.noWorkers {
		s.addWorker()
	}
	t.Cleanup(func() {
		for _, w := range s.workers {
			w.stop(5 * time.Second)
		}
	})
	return s
}

// addWorker starts one more in-process worker.
func (s *stack) addWorker() *testWorker {
	t := s.t
	id := fmt.Sprintf("%s-w%d", s.prefix, len(s.workers))
	w := s.app.Worker(s.runtime, app.WorkerOptions{
		ID: id, Linger: time.Second,
		RetryDelay: func(n int, err error, task *asynq.Task) time.Duration {
			if task.Type() == jobs.TypeWebhook {
				return 100 * time.Millisecond // production backs off for an hour: see jobs/webhook
			}
			return worker.RetryDelay(n, err, task)
		},
	})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tw := &testWorker{id: id, w: w}
	s.workers = append(s.workers, tw)
	return tw
}

// removeSandboxes removes what the test's sandboxes left, thread sandboxes included.
func (s *stack) removeSandboxes() { s.removeSandboxesOf(s.prefix) }

func (s *stack) removeSandboxesOf(prefix string) {
	ctx := context.Background()
	list, _ := s.docker.ContainerList(ctx, container.ListOptions{
		All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelInstall+"="+prefix)),
	})
	for _, c := range list {
		_ = s.docker.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}
	vols, _ := s.docker.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", docker.LabelInstall+"="+prefix))})
	for _, v := range vols.Volumes {
		_ = s.docker.VolumeRemove(ctx, v.Name, true)
	}
}

// call sends a JSON request as tenant acme and decodes the JSON answer.
func (s *stack) call(t *testing.T, method, path string, body any, out any) int {
	t.Helper()
	return s.callAs(t, "key-a", method, path, body, out)
}

func (s *stack) callAs(t *testing.T, key, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: decode: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

type execution struct {
	ID              string `json:"id"`
	Status          string `json:"status"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	Error           *struct {
		Name, Value, Traceback string
	} `json:"error"`
	ExitCode *int `json:"exit_code"`
	Results  []struct {
		Type, Text, File string
	} `json:"results"`
	Files []struct {
		Name        string    `json:"name"`
		Size        int64     `json:"size"`
		ContentType string    `json:"content_type"`
		SHA256      string    `json:"sha256"`
		URL         string    `json:"url"`
		ExpiresAt   time.Time `json:"expires_at"`
	} `json:"files"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Sandbox    struct {
		Reused          bool `json:"reused"`
		Resumed         bool `json:"resumed"`
		KernelRestarted bool `json:"kernel_restarted"`
	} `json:"sandbox"`
}

// run submits code and long-polls until it ends.
func (s *stack) run(t *testing.T, req map[string]any) execution {
	t.Helper()
	var ex execution
	if code := s.call(t, "POST", "/v1/executions", req, &ex); code != http.StatusAccepted {
		t.Fatalf("POST: %d", code)
	}
	return s.wait(t, ex.ID)
}

func (s *stack) wait(t *testing.T, id string) execution {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var ex execution
		if code := s.call(t, "GET", "/v1/executions/"+id+"?wait=30s", nil, &ex); code != http.StatusOK {
			t.Fatalf("GET: %d", code)
		}
		switch ex.Status {
		case "succeeded", "failed", "timed_out", "canceled":
			return ex
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s still %s\n%s", id, ex.Status, s.queueState(id))
		}
	}
}

func download(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("download %s: %d %s", url, resp.StatusCode, b)
	}
	return b
}

// eventually polls cond until it holds, failing the test after within.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for: %s", what)
		case <-tick.C:
		}
	}
}

// queueState describes, for a failure message, the thread queue of execution id.
func (s *stack) queueState(id string) string {
	ctx := context.Background()
	ex, err := s.records.Get(ctx, "", id)
	if err != nil || ex.ThreadID == "" {
		return fmt.Sprintf("record: %+v %v", ex, err)
	}
	st, err := s.threads.State(ctx, jobs.NewThreadKey(ex.Tenant, ex.ThreadID))
	alive, _ := s.threads.Alive(ctx)
	return fmt.Sprintf("thread %s: owner %q, queue %v, in flight %q (%v), live workers %v",
		ex.ThreadID, st.Owner, st.Queued, st.Inflight, err, alive)
}
