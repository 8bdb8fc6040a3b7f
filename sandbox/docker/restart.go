package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/codeinterp/codeinterp/sandbox"
)

// kernelDied turns the end of the kernel's stream, without a "done", into an outcome.
func (s *Sandbox) kernelDied(ctx context.Context, k *kernel, start time.Time, stopped sandbox.Status) (sandbox.Outcome, error) {
	k.close()
	s.kernel = nil
	// A canceled run asks too: its kernel may have died of the interrupt, or been
	// hung up on for not taking it (run).
	code, err := s.d.execExitCode(context.WithoutCancel(ctx), k.execID)
	// Whatever the kernel started may still be running: stop it before the next run.
	s.resetKernel(context.WithoutCancel(ctx), nil)
	if stopped != "" {
		if err != nil {
			code = -1
		}
		return sandbox.Outcome{Status: stopped, ExitCode: code, Error: stopError(stopped, 0)}, nil
	}
	if err != nil {
		return sandbox.Outcome{}, fmt.Errorf("kernel in %s lost: %w", s.name, err)
	}
	if code == 137 && s.d.oomSince(ctx, s.id, start) {
		return sandbox.Outcome{Status: sandbox.Failed, ExitCode: code, Error: &sandbox.Error{
			Name:  "OutOfMemory",
			Value: fmt.Sprintf("the code ran out of memory (limit %d MiB) and was killed; Python state was lost", s.limits.Memory>>20),
		}}, nil
	}
	return sandbox.Outcome{Status: sandbox.Failed, ExitCode: code, Error: &sandbox.Error{
		Name:      "KernelDied",
		Value:     fmt.Sprintf("the Python process exited unexpectedly with code %d; Python state was lost", code),
		Traceback: k.diagnostics(),
	}}, nil
}

func (s *Sandbox) lostKernel(ctx context.Context, cause error) error {
	s.kernel.close()
	s.kernel = nil
	s.resetKernel(context.WithoutCancel(ctx), nil)
	return fmt.Errorf("kernel in %s: %w", s.name, cause)
}

// cannotExec is the status the engine gives an exec it could not start, e.g. for want
// of a pid.
const cannotExec = 126

// resetKernel kills the kernel and every process of the code's user, so the next run
// starts a fresh kernel in the same container and workspace.
func (s *Sandbox) resetKernel(ctx context.Context, k *kernel) {
	if k != nil {
		k.close()
		s.kernel = nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Under a token the reset is refused once a newer owner fenced the sandbox: it
	// must not kill the newer owner's kernel (fence.go).
	reset := fenced(s.token, "/opt/codeinterp/reset")
	if code, _, err := s.d.execWait(ctx, s.id, codeUser, reset...); err == nil && code != cannotExec {
		return
	}
	// A fork bomb may hold every pid, so the reset cannot even start (the engine
	// reports 126, or fails the exec): lend it a few, above the container's own limit
	// (which depends on its runtime: see hostConfig).
	info, err := s.d.cli.ContainerInspect(ctx, s.id)
	if err != nil || info.HostConfig.PidsLimit == nil {
		return
	}
	limit := *info.HostConfig.PidsLimit
	pids := limit + 16
	if _, err := s.d.cli.ContainerUpdate(ctx, s.id, container.UpdateConfig{Resources: container.Resources{PidsLimit: &pids}}); err != nil {
		return
	}
	_, _, _ = s.d.execWait(ctx, s.id, codeUser, reset...)
	_, _ = s.d.cli.ContainerUpdate(ctx, s.id, container.UpdateConfig{Resources: container.Resources{PidsLimit: &limit}})
}

// execWait runs cmd in the container, waits for it and returns its exit code and up to
// 64 KiB of its combined output.
func (d *Runtime) execWait(ctx context.Context, containerID, user string, cmd ...string) (int, string, error) {
	created, err := d.cli.ContainerExecCreate(ctx, containerID, container.ExecOptions{
		User: user, Cmd: cmd, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return 0, "", fmt.Errorf("create exec %v: %w", cmd, err)
	}
	hj, err := d.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return 0, "", fmt.Errorf("start exec %v: %w", cmd, err)
	}
	defer hj.Close()
	var out bytes.Buffer
	w := &capped{buf: &out, max: 64 << 10}
	if _, err := stdcopy.StdCopy(w, w, hj.Reader); err != nil && ctx.Err() != nil {
		return 0, "", ctx.Err()
	}
	code, err := d.execExitCode(ctx, created.ID)
	return code, out.String(), err
}

// execExitCode waits for an exec whose streams have ended to be reported as exited.
func (d *Runtime) execExitCode(ctx context.Context, execID string) (int, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := d.cli.ContainerExecInspect(ctx, execID)
		if err != nil {
			return 0, fmt.Errorf("inspect exec: %w", err)
		}
		if !info.Running {
			return info.ExitCode, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("exec %s still running after its streams closed", execID)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// oomSince reports whether the engine saw the container hit its memory limit since t.
// The event can trail the killed process by a moment, so it waits up to a second.
func (d *Runtime) oomSince(ctx context.Context, containerID string, t time.Time) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	msgs, errs := d.cli.Events(ctx, events.ListOptions{
		Since:   fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()),
		Filters: filters.NewArgs(filters.Arg("container", containerID), filters.Arg("event", "oom")),
	})
	select {
	case <-msgs:
		return true
	case <-errs:
		return false
	}
}

// capped keeps the first max bytes written to it and discards the rest.
type capped struct {
	buf *bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

var _ io.Writer = (*capped)(nil)
