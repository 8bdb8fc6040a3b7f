// Package testenv starts the real services tests run against — Redis and MinIO, from
// the locally built images (`make images`) — once per test binary, and hands each
// test its own Redis database and bucket so tests can run in parallel.
//
// A missing image or Docker engine fails the test: in CI a missing service is a
// failure, not a skip.
package testenv

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/codeinterp/codeinterp/storage"
)

const (
	minioUser   = "codeinterp"
	minioSecret = "codeinterp-secret"
	redisDBs    = 4096
)

var (
	mu         sync.Mutex
	containers []testcontainers.Container
	redisAddr  = lazy{start: startRedis}
	minioAddr  = lazy{start: startMinIO}
	nextDB     atomic.Int64
	nextBucket atomic.Int64
)

// Main runs the tests and then stops the containers they started. Use it from TestMain.
func Main(m *testing.M) int {
	// Ryuk, testcontainers' reaper, needs an image from a registry; Main stops what it started.
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	tclog.SetDefault(tclog.NewNoopLogger())
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	for _, c := range containers {
		_ = c.Terminate(context.Background())
	}
	return code
}

// Image returns the local image for name ("redis", "minio", "sandbox"), overridable
// with CODEINTERP_<NAME>_IMAGE.
func Image(name string) string {
	return cmp.Or(os.Getenv("CODEINTERP_"+strings.ToUpper(name)+"_IMAGE"), "codeinterp/"+name+":latest")
}

// RedisDB returns the address of the shared Redis and a database number no other
// test uses.
func RedisDB(t testing.TB) (addr string, db int) {
	t.Helper()
	addr = redisAddr.get(t)
	n := int(nextDB.Add(1))
	if n >= redisDBs {
		t.Fatalf("testenv: more than %d Redis databases requested", redisDBs)
	}
	return addr, n
}

// MinIO returns a storage config for the shared MinIO with a bucket of the test's own.
// The bucket is created by storage.Store.Init, like in production.
func MinIO(t testing.TB) storage.Config {
	t.Helper()
	addr := minioAddr.get(t)
	return storage.Config{
		Endpoint:  addr,
		AccessKey: minioUser,
		SecretKey: minioSecret,
		Bucket:    fmt.Sprintf("test-%d-%d", os.Getpid(), nextBucket.Add(1)),
		PublicURL: "http://" + addr,
	}
}

type lazy struct {
	once  sync.Once
	start func() (string, error)
	addr  string
	err   error
}

func (l *lazy) get(t testing.TB) string {
	l.once.Do(func() { l.addr, l.err = l.start() })
	if l.err != nil {
		t.Fatalf("testenv: %v", l.err)
	}
	return l.addr
}

func startRedis() (string, error) {
	return start(Image("redis"), "6379/tcp",
		testcontainers.WithCmd("redis-server", "--bind", "0.0.0.0", "--protected-mode", "no",
			"--save", "", "--appendonly", "no", "--databases", fmt.Sprint(redisDBs)),
		testcontainers.WithWaitStrategy(wait.ForLog("Ready to accept connections")))
}

// RedisWith starts a Redis of the test's own with extra server arguments (e.g. a
// small --maxmemory), stopped when the test ends, and returns its address.
func RedisWith(t testing.TB, args ...string) string {
	t.Helper()
	cmd := append([]string{"redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"}, args...)
	addr, err := start(Image("redis"), "6379/tcp", testcontainers.WithCmd(cmd...),
		testcontainers.WithWaitStrategy(wait.ForLog("Ready to accept connections")))
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return addr
}

func startMinIO() (string, error) {
	return start(Image("minio"), "9000/tcp",
		testcontainers.WithEnv(map[string]string{"MINIO_ROOT_USER": minioUser, "MINIO_ROOT_PASSWORD": minioSecret}),
		testcontainers.WithWaitStrategy(wait.ForLog("API: http")))
}

func start(image, port string, opts ...testcontainers.ContainerCustomizer) (string, error) {
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts = append(opts, testcontainers.WithExposedPorts(port),
		testcontainers.WithLabels(map[string]string{"codeinterp.install": "citest"}))
	c, err := testcontainers.Run(ctx, image, opts...)
	if c != nil {
		mu.Lock()
		containers = append(containers, c)
		mu.Unlock()
	}
	if err != nil {
		return "", fmt.Errorf("start %s (build it with `make images`): %w", image, err)
	}
	// Published ports listen on every host address; testcontainers' guess of the
	// host's address can be one this machine cannot reach, loopback never is.
	mapped, err := c.MappedPort(ctx, port)
	if err != nil {
		return "", fmt.Errorf("%s port: %w", image, err)
	}
	return "127.0.0.1:" + mapped.Port(), nil
}
