// Package dockerhost opens the Docker sandbox runtime of the host a worker or janitor
// runs on. It is apart from internal/app only so that the API binary, which builds
// through app, never links the Docker client.
package dockerhost

import (
	"fmt"

	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/sandbox/docker"
)

// Config returns the Docker runtime's configuration.
func Config(c config.Config) docker.Config {
	return docker.Config{Image: c.SandboxImage, Grace: c.InterruptGrace, Prefix: c.SandboxPrefix, Runtime: c.SandboxRuntime}
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
