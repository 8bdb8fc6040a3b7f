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
	"os"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/api"
	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/internal/worker"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/storage"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// stack is one test's codeinterp: its own Redis database, bucket and sandbox prefix,
// an in-process API and any number of in-process workers.
type stack struct {
	t       *testing.T
	url     string
	rdb     *redis.Client
	docker  *client.Client
	prefix  string // sandbox name prefix and label, unique to the test
	records *jobs.Records
	store   *storage.Store
	runtime *sandbox.Docker
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
	maxSandboxes    int
	maxPerTenant    int
}

// testWorker is one in-process worker: an asynq server and a jobs.Runner.
type testWorker struct {
	id     string
	srv    *asynq.Server
	runner *jobs.Runner
	once   sync.Once
}

func (w *testWorker) stop(timeout time.Duration) {
	w.once.Do(func() {
		w.srv.Shutdown()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		w.runner.Shutdown(ctx)
	})
}

const webhookSecret = "whsec_test_0123456789"

// heartbeatTTL is short in tests, so a dead worker's threads move on quickly.
const heartbeatTTL = 2 * time.Second

func newStack(t *testing.T, opt stackOptions) *stack {
	t.Helper()
	addr, db := testenv.RedisDB(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db, PoolSize: 64, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	storageConfig := testenv.MinIO(t)
	store, err := storage.New(storageConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	docker, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docker.Close() })
	s := &stack{t: t, rdb: rdb, docker: docker, prefix: fmt.Sprintf("citest-%d", db), store: store, opt: opt, storageConfig: storageConfig}
	s.runtime = sandbox.New(docker, sandbox.Config{Image: testenv.Image("sandbox"), Prefix: s.prefix, Grace: 3 * time.Second})
	if err := s.runtime.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.removeSandboxes() })

	queue := asynq.NewClientFromRedisClient(rdb)
	t.Cleanup(func() { queue.Close() })
	s.records = jobs.NewRecords(rdb, jobs.RecordsConfig{Prefix: "ci:", TTL: time.Hour, HeartbeatTTL: heartbeatTTL,
		OnEnd: jobs.WebhookOnEnd(jobs.NewEnqueuer(queue), discardLogger)})
	waiter := s.records.NewWaiter()
	if err := waiter.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(waiter.Shutdown)
	keys, _ := api.ParseKeys("acme:key-a,globex:key-b", "")
	srv := httptest.NewServer(api.New(api.Config{
		Records: s.records, Waiter: waiter, Queue: jobs.NewEnqueuer(queue), Store: store, Keys: keys,
		WebhookTenants: map[string]bool{"acme": true}, WebhookGuard: jobs.WebhookGuard{Allow: opt.webhookAllow},
		Limits: api.Limits{MaxRequestBytes: 8 << 20, MaxUploadBytes: 8 << 20, WorkspaceBytes: 8 << 20, DefaultTimeoutMS: 30000, MaxTimeoutMS: 60000},
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
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
	runner := jobs.NewRunner(jobs.RunnerConfig{
		Records: s.records, Artifacts: s.store,
		Runtime: worker.Runtime{D: s.runtime}, WarmPool: s.opt.warmPool, MaxSandboxes: s.opt.maxSandboxes, MaxPerTenant: s.opt.maxPerTenant,
		Limits: s.opt.limits, Worker: id, Concurrency: cmp.Or(s.opt.concurrency, 4), Logger: discardLogger,
		Linger: time.Second,
	})
	if err := runner.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := asynq.NewServerFromRedisClient(s.rdb, asynq.Config{
		Concurrency:       4,
		TaskCheckInterval: 20 * time.Millisecond, ShutdownTimeout: s.opt.shutdownTimeout,
		Queues: map[string]int{jobs.QueueTasks: 1},
		RetryDelayFunc: func(n int, err error, task *asynq.Task) time.Duration {
			if task.Type() == jobs.TypeWebhook {
				return 100 * time.Millisecond // production backs off for an hour: see jobs
			}
			return jobs.RetryDelay(n, err, task)
		},
		Logger: worker.AsynqLogger{L: discardLogger},
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(jobs.TypeRun, runner.ProcessOneOff)
	mux.Handle(jobs.TypeWebhook, &jobs.Webhooks{
		Records: s.records, Presigner: s.store, Secrets: map[string]string{"acme": webhookSecret},
		Client: jobs.WebhookGuard{Allow: s.opt.webhookAllow}.Client(5 * time.Second), Logger: discardLogger,
	})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	w := &testWorker{id: id, srv: srv, runner: runner}
	s.workers = append(s.workers, w)
	return w
}

// removeSandboxes removes what the test's sandboxes left, thread sandboxes included.
func (s *stack) removeSandboxes() { s.removeSandboxesOf(s.prefix) }

func (s *stack) removeSandboxesOf(prefix string) {
	ctx := context.Background()
	list, _ := s.docker.ContainerList(ctx, container.ListOptions{
		All: true, Filters: filters.NewArgs(filters.Arg("label", sandbox.LabelInstall+"="+prefix)),
	})
	for _, c := range list {
		_ = s.docker.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}
	vols, _ := s.docker.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", sandbox.LabelInstall+"="+prefix))})
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
	deadline := time.Now().Add(2 * time.Minute)
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
	k := "ci:t:" + ex.Tenant + "/" + ex.ThreadID + ":"
	own, _ := s.rdb.HGetAll(ctx, k+"own").Result()
	q, _ := s.rdb.LRange(ctx, k+"q", 0, -1).Result()
	inflight, _ := s.rdb.Get(ctx, k+"inflight").Result()
	workers, _ := s.rdb.ZRangeWithScores(ctx, "ci:workers", 0, -1).Result()
	return fmt.Sprintf("thread %s: owner %v, queue %v, in flight %q, workers %v (now %d)",
		ex.ThreadID, own, q, inflight, workers, time.Now().UnixMilli())
}
