package testenv

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// OwnRedis is a Redis of one test's own that the test takes down and brings back,
// without disturbing the shared one. It runs on the host's network, listening on a
// loopback port fixed when it is created: a published port would change on every
// start. Its data (append-only, in the container's /data) outlives a stop.
type OwnRedis struct {
	Addr string // 127.0.0.1:<port>; nothing listens there until Start
	ID   string // the container's id
	cli  *client.Client
}

// NewOwnRedis creates a Redis container of the test's own, with extra server
// arguments (e.g. "--appendfsync", "always"), without starting it; it is removed
// when the test ends.
func NewOwnRedis(t testing.TB, args ...string) *OwnRedis {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatalf("testenv: docker: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	port := freePort(t)
	cmd := append([]string{"redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", "/data",
		"--appendonly", "yes", "--save", ""}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cli.ContainerCreate(ctx,
		&container.Config{Image: Image("redis"), Cmd: cmd, Labels: map[string]string{"codeinterp.install": "citest"}},
		&container.HostConfig{NetworkMode: "host"}, nil, nil, "")
	if err != nil {
		t.Fatalf("testenv: create %s (build it with `make images`): %v", Image("redis"), err)
	}
	t.Cleanup(func() {
		_ = cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	})
	return &OwnRedis{Addr: fmt.Sprintf("127.0.0.1:%d", port), ID: c.ID, cli: cli}
}

// Start starts the container. It does not wait: Redis may still be loading its data.
func (r *OwnRedis) Start(t testing.TB) {
	t.Helper()
	if err := r.cli.ContainerStart(context.Background(), r.ID, container.StartOptions{}); err != nil {
		t.Fatalf("testenv: start redis: %v", err)
	}
}

// Kill kills Redis the way a crash or the OOM killer does (SIGKILL) and waits until
// the container has stopped.
func (r *OwnRedis) Kill(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	if err := r.cli.ContainerKill(ctx, r.ID, "KILL"); err != nil {
		t.Fatalf("testenv: kill redis: %v", err)
	}
	waited, errc := r.cli.ContainerWait(ctx, r.ID, container.WaitConditionNotRunning)
	select {
	case <-waited:
	case err := <-errc:
		t.Fatalf("testenv: wait for redis to stop: %v", err)
	}
}

// freePort returns a loopback TCP port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
