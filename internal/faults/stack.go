package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Stack is the fault suite's compose stack: its own project, ports and sandbox prefix.
type Stack struct {
	Compose    []string // the compose command, e.g. ["docker-compose"]
	File       string   // deploy/faults/docker-compose.yml
	Project    string
	Prefix     string // CODEINTERP_SANDBOX_PREFIX: labels the sandboxes its workers make
	Tag        string // of the api, worker and janitor images
	APIPort    int
	S3Port     int
	JournalDir string // mounted into the workers and the janitor

	ids map[string]string // container ids by service; used by one goroutine
}

// URL is the API's address.
func (s *Stack) URL() string { return fmt.Sprintf("http://localhost:%d", s.APIPort) }

func (s *Stack) env() []string {
	env := append(os.Environ(), "COMPOSE_PROJECT_NAME="+s.Project, "FAULTS_PREFIX="+s.Prefix, "FAULTS_TAG="+s.Tag,
		fmt.Sprintf("FAULTS_API_PORT=%d", s.APIPort), fmt.Sprintf("FAULTS_S3_PORT=%d", s.S3Port),
		"FAULTS_JOURNAL_DIR="+s.JournalDir)
	// The workers and the janitor run unprivileged and reach Docker as members of its
	// socket's group (the Makefile sets the variable; go run ./cmd/faults may not).
	if os.Getenv("CODEINTERP_DOCKER_GID") == "" {
		if fi, err := os.Stat("/var/run/docker.sock"); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				env = append(env, fmt.Sprintf("CODEINTERP_DOCKER_GID=%d", st.Gid))
			}
		}
	}
	return env
}

// compose runs a compose command on the stack and returns its standard output.
func (s *Stack) compose(ctx context.Context, args ...string) (string, error) {
	argv := append(append(append([]string{}, s.Compose[1:]...), "-f", s.File, "-p", s.Project), args...)
	cmd := exec.CommandContext(ctx, s.Compose[0], argv...)
	cmd.Env = s.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", s.Compose[0], strings.Join(argv, " "), err, tail(errb.String(), 20))
	}
	return out.String(), nil
}

func docker(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, tail(string(out), 20))
	}
	return string(out), nil
}

// Up starts the stack fresh — whatever an earlier run left is removed first — and
// waits until the API is ready.
func (s *Stack) Up(ctx context.Context) error {
	s.ids = nil
	if err := s.Down(ctx); err != nil {
		return err
	}
	if _, err := s.compose(ctx, "up", "-d"); err != nil {
		return err
	}
	return s.waitReady(ctx, 3*time.Minute)
}

func (s *Stack) waitReady(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("readyz: %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("the stack did not get ready within %s: %v", within, last)
		case <-tick.C:
		}
	}
}

// Down removes the stack, its volumes, and every sandbox and workspace volume of its
// prefix — and nothing else on the engine.
func (s *Stack) Down(ctx context.Context) error {
	_, err := s.compose(ctx, "down", "-v", "--remove-orphans", "-t", "5")
	label := "label=codeinterp.install=" + s.Prefix
	if ids, lerr := docker(ctx, "ps", "-aq", "--filter", label); lerr == nil && strings.TrimSpace(ids) != "" {
		if _, rerr := docker(ctx, append([]string{"rm", "-f", "-v"}, strings.Fields(ids)...)...); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if vols, lerr := docker(ctx, "volume", "ls", "-q", "--filter", label); lerr == nil && strings.TrimSpace(vols) != "" {
		if _, rerr := docker(ctx, append([]string{"volume", "rm", "-f"}, strings.Fields(vols)...)...); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// Logs writes the services' logs to path.
func (s *Stack) Logs(ctx context.Context, path string) error {
	out, err := s.compose(ctx, "logs", "--no-color", "--timestamps")
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// container returns the id of a service's container. A container keeps its id
// across kill and start, so the first answer is kept.
func (s *Stack) container(ctx context.Context, service string) (string, error) {
	if id := s.ids[service]; id != "" {
		return id, nil
	}
	out, err := s.compose(ctx, "ps", "-q", service)
	id := strings.TrimSpace(out)
	if err == nil && id == "" {
		err = fmt.Errorf("service %s has no container", service)
	}
	if err == nil {
		if s.ids == nil {
			s.ids = map[string]string{}
		}
		s.ids[service] = id
	}
	return id, err
}

// Kill sends SIGKILL to a service's container. Docker does not restart a container it
// was told to kill, whatever its restart policy: Start it again.
func (s *Stack) Kill(ctx context.Context, service string) error {
	return s.dockerOn(ctx, service, "kill", "-s", "KILL")
}

// Start starts a service's stopped container again.
func (s *Stack) Start(ctx context.Context, service string) error {
	return s.dockerOn(ctx, service, "start")
}

// Stop stops a service's container (SIGTERM, then SIGKILL after a grace period).
func (s *Stack) Stop(ctx context.Context, service string) error {
	return s.dockerOn(ctx, service, "stop", "-t", "10")
}

func (s *Stack) dockerOn(ctx context.Context, service string, args ...string) error {
	id, err := s.container(ctx, service)
	if err != nil {
		return err
	}
	_, err = docker(ctx, append(args, id)...)
	return err
}

// Sandboxes counts the containers of the stack's prefix: the sandboxes its workers made.
func (s *Stack) Sandboxes(ctx context.Context) (int, error) {
	out, err := docker(ctx, "ps", "-aq", "--filter", "label=codeinterp.install="+s.Prefix)
	return len(strings.Fields(out)), err
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
