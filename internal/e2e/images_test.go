package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/sandbox/docker"
)

// The server images (deploy/server/Dockerfile, built by `make images`) run as an
// unprivileged user; the worker's reaches the Docker engine with no more than the
// socket's group (what docker-compose.yml gives it with group_add) and runs code.
// CODEINTERP_<NAME>_IMAGE points the test at other builds, e.g. a branch's.
func TestServerImagesRunUnprivileged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, stackOptions{noWorkers: true})
	for _, name := range []string{"api", "worker", "janitor", "setup"} {
		img, _, err := s.docker.ImageInspectWithRaw(ctx, testenv.Image(name))
		if err != nil {
			t.Errorf("%s: %v (build it with `make images`)", testenv.Image(name), err)
			continue
		}
		user, _, _ := strings.Cut(img.Config.User, ":")
		if user == "" || user == "0" || user == "root" {
			t.Errorf("%s runs as %q; want an unprivileged user", testenv.Image(name), img.Config.User)
		}
	}
	if t.Failed() {
		return
	}

	fi, err := os.Stat("/var/run/docker.sock")
	if err != nil {
		t.Fatal(err)
	}
	gid := fi.Sys().(*syscall.Stat_t).Gid
	st := s.storageConfig
	id := s.prefix + "-imgworker"
	created, err := s.docker.ContainerCreate(ctx, &container.Config{
		Image: testenv.Image("worker"),
		Env: []string{
			fmt.Sprintf("CODEINTERP_REDIS_URL=redis://%s/%d", s.rdb.Options().Addr, s.rdb.Options().DB),
			"CODEINTERP_KEY_PREFIX=ci:", "CODEINTERP_S3_ENDPOINT=" + st.Endpoint, "CODEINTERP_S3_ACCESS_KEY=" + st.AccessKey,
			"CODEINTERP_S3_SECRET_KEY=" + st.SecretKey, "CODEINTERP_S3_BUCKET=" + st.Bucket,
			"CODEINTERP_SANDBOX_IMAGE=" + testenv.Image("sandbox"), "CODEINTERP_SANDBOX_PREFIX=" + s.prefix,
			"CODEINTERP_SANDBOX_RUNTIME=" + os.Getenv("CODEINTERP_SANDBOX_RUNTIME"),
			"CODEINTERP_WORKER_ID=" + id, "CODEINTERP_HEARTBEAT_TTL=" + heartbeatTTL.String(),
			"CODEINTERP_WARM_POOL=0", "CODEINTERP_ONEOFF_POOL=0", "CODEINTERP_DEV_MODE=true",
		},
		// Its label makes it one of the test's sandboxes: removed at the end.
		Labels: map[string]string{docker.LabelInstall: s.prefix},
	}, &container.HostConfig{
		// The test's Redis and MinIO are published on this host's loopback.
		NetworkMode: "host",
		Binds:       []string{"/var/run/docker.sock:/var/run/docker.sock"},
		GroupAdd:    []string{fmt.Sprint(gid)},
	}, nil, nil, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if rc, err := s.docker.ContainerLogs(ctx, created.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: "40"}); err == nil {
				var b strings.Builder
				_, _ = stdcopy.StdCopy(&b, &b, io.LimitReader(rc, 1<<20))
				rc.Close()
				t.Logf("--- the worker container's log ---\n%s", b.String())
			}
		}
		_ = s.docker.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true})
	})
	if err := s.docker.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	// Ready lists the workers whose Docker engine answered (ids get a suffix of
	// their own at each start).
	eventually(t, 2*time.Minute, "the worker container reaches Docker and beats", func() bool {
		ready, _ := s.threads.Ready(ctx)
		return slices.ContainsFunc(ready, func(w string) bool { return strings.HasPrefix(w, id) })
	})
	ex := s.run(t, map[string]any{"thread_id": "img", "code": "import os\nprint(os.getuid())"})
	if ex.Status != "succeeded" || strings.TrimSpace(ex.Stdout) != "1000" {
		t.Fatalf("a run on the worker container: %s %q %+v", ex.Status, ex.Stdout, ex.Error)
	}
}
