// Package dockerhost opens the Docker sandbox runtime of the host a worker or janitor
// runs on. It is apart from internal/app only so that the API binary, which builds
// through app, never links the Docker client.
package dockerhost

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/sandbox/docker"
)

// Config returns the Docker runtime's configuration.
func Config(c config.Config) docker.Config {
	return docker.Config{Image: c.SandboxImage, Grace: c.InterruptGrace, Prefix: c.SandboxPrefix, Runtime: c.SandboxRuntime, CgroupParent: c.SandboxCgroup, EgressProxy: c.EgressProxy}
}

// Open returns the runtime on the local Docker engine (DOCKER_HOST and friends
// apply, as with the docker CLI). It does no I/O; call the returned close function
// when done.
func Open(c config.Config) (*docker.Runtime, func() error, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, nil, fmt.Errorf("docker client: %w", err)
	}
	return docker.New(cli, Config(c)), cli.Close, nil
}

// Explain adds what to do to an engine error that says this process may not use the
// engine's socket: the images run unprivileged and reach it as members of its group.
func Explain(err error) error {
	if err != nil && (errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), "permission denied")) {
		return fmt.Errorf("%w (uid %d is not in the group of the Docker socket: add that group to the process, e.g. CODEINTERP_DOCKER_GID under docker-compose)", err, os.Getuid())
	}
	return err
}
