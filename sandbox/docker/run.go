package docker

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Run runs code in the sandbox's kernel and returns how it ended. The user's code
// failing, timing out or running out of memory is an [Outcome]; an error means the
// sandbox itself could not be used. If ctx is canceled the code is interrupted and
// the outcome is [Canceled]. onEvent, if not nil, is called for each event in order.
func (s *Sandbox) Run(ctx context.Context, req sandbox.Request, onEvent func(sandbox.Event)) (sandbox.Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.resumeLocked(ctx); err != nil {
		return sandbox.Outcome{}, err
	}
	restarted := s.restartPending
	s.restartPending = false
	if s.kernel == nil {
		k, err := s.d.startKernel(ctx, s.id, s.spec.Preload)
		if err != nil {
			// Leftovers of the killed kernel (a fork bomb racing the reset) may still
			// hold every pid: clear them once more and try again.
			s.resetKernel(context.WithoutCancel(ctx), nil)
			if k, err = s.d.startKernel(ctx, s.id, s.spec.Preload); err != nil {
				return sandbox.Outcome{}, fmt.Errorf("restart kernel in %s: %w", s.name, err)
			}
		}
		s.kernel, restarted = k, true
	}
	out, err := s.run(ctx, s.kernel, req, onEvent)
	out.KernelRestarted = out.KernelRestarted || restarted
	return out, err
}

func (s *Sandbox) run(ctx context.Context, k *kernel, req sandbox.Request, onEvent func(sandbox.Event)) (sandbox.Outcome, error) {
	if onEvent == nil {
		onEvent = func(sandbox.Event) {}
	}
	start := time.Now()
	if err := k.send(wireRequest{Op: "exec", ID: req.ID, Language: string(req.Language), Code: req.Code, Env: req.Env}); err != nil {
		return sandbox.Outcome{}, s.lostKernel(ctx, err)
	}
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var (
		results        []sandbox.Rich
		budget         = sandbox.NewResultBudget(req.MaxResults, req.MaxResultBytes)
		stdout, stderr = capText{max: s.limits.Output}, capText{max: s.limits.Output}
		stopped        sandbox.Status // sandbox.TimedOut or sandbox.Canceled once we interrupted the code
		grace          <-chan time.Time
		done           = ctx.Done()
	)
	interrupt := func(why sandbox.Status) {
		stopped, timeout, done = why, nil, nil
		_ = k.send(wireRequest{Op: "interrupt", ID: req.ID})
		grace = time.After(s.d.cfg.Grace)
	}
	for {
		select {
		case ev, ok := <-k.events:
			if !ok {
				out, err := s.kernelDied(ctx, k, start, stopped)
				return stdout.into(stderr, out), err
			}
			if ev.ID != req.ID {
				continue // stale or forged
			}
			switch ev.Ev {
			case "stream":
				kind, keep := sandbox.Stdout, &stdout
				if ev.Name == "stderr" {
					kind, keep = sandbox.Stderr, &stderr
				}
				keep.add(ev.Text)
				onEvent(sandbox.Event{Kind: kind, Text: ev.Text})
			case "result":
				// Past the budget results are dropped here, so a flood of display()
				// calls costs the worker no memory.
				if r, ok := richOf(ev); ok && budget.Admit(r) {
					results = append(results, r)
					onEvent(sandbox.Event{Kind: sandbox.Result, Rich: r})
				}
			case "done":
				out := sandbox.Outcome{Status: sandbox.Succeeded, ExitCode: ev.ExitCode, Error: ev.Error,
					Results: results, ResultsTruncated: budget.Truncated(),
					Outputs: cleanOutputs(ev.Outputs), Workspace: cleanListing(ev.Workspace),
					CPUSeconds: cpuSeconds(ev.CPUMS, time.Since(start), s.limits.CPUs)}
				if ev.Status != "ok" {
					out.Status = sandbox.Failed
				}
				if stopped != "" {
					out.Status, out.Error = stopped, stopError(stopped, req.Timeout)
				}
				if out.Error != nil && strings.Contains(out.Error.Value, "No space left on device") {
					out.Error.Value += fmt.Sprintf(" (the workspace is full: it holds %d MiB)", s.limits.Workspace>>20)
				}
				return stdout.into(stderr, out), nil
			}
		case <-timeout:
			interrupt(sandbox.TimedOut)
		case <-done:
			interrupt(sandbox.Canceled)
		case <-grace:
			// The code ignored the interrupt: kill it and everything it started.
			s.resetKernel(context.WithoutCancel(ctx), k)
			return stdout.into(stderr, sandbox.Outcome{Status: stopped, Error: stopError(stopped, req.Timeout),
				Results: results, ResultsTruncated: budget.Truncated(), ExitCode: -1}), nil
		}
	}
}

func stopError(why sandbox.Status, timeout time.Duration) *sandbox.Error {
	if why == sandbox.TimedOut {
		return &sandbox.Error{Name: "TimeoutError", Value: fmt.Sprintf("execution exceeded its timeout of %s", timeout)}
	}
	return &sandbox.Error{Name: "Canceled", Value: "execution was canceled"}
}

// cpuSeconds is the CPU time the kernel reported, bounded by what the sandbox's
// CPUs could have done in the run's wall time: the code can forge the report.
func cpuSeconds(ms float64, wall time.Duration, cpus float64) float64 {
	return min(max(ms/1000, 0), wall.Seconds()*max(cpus, 1))
}

func richOf(ev wireEvent) (sandbox.Rich, bool) {
	switch ev.Type {
	case "text/plain", "text/html":
		return sandbox.Rich{Type: ev.Type, Text: ev.Text}, true
	case "image/png":
		p, err := sandbox.CleanPath(ev.File)
		if err != nil || !sandbox.IsOutput(p) {
			return sandbox.Rich{}, false
		}
		return sandbox.Rich{Type: ev.Type, File: p}, true
	}
	return sandbox.Rich{}, false
}

// maxOutputs bounds how many changed files one run may report.
const maxOutputs = 1000

// cleanOutputs keeps the kernel's reported paths that are safe, under outputs/, once.
func cleanOutputs(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		c, err := sandbox.CleanPath(p)
		if err != nil || !sandbox.IsOutput(c) || seen[c] || len(out) == maxOutputs {
			continue
		}
		seen[c] = true
		out = append(out, c)
	}
	return out
}

// capText keeps the first max bytes of a stream, cut at a UTF-8 boundary.
type capText struct {
	b         strings.Builder
	max       int
	truncated bool
}

func (c *capText) add(s string) {
	if c.truncated {
		return
	}
	if room := c.max - c.b.Len(); len(s) > room {
		cut := room
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, c.truncated = s[:cut], true
	}
	c.b.WriteString(s)
}

// into sets the kept stdout (c) and stderr of out.
func (c capText) into(stderr capText, out sandbox.Outcome) sandbox.Outcome {
	out.Stdout, out.StdoutTruncated = c.b.String(), c.truncated
	out.Stderr, out.StderrTruncated = stderr.b.String(), stderr.truncated
	return out
}

func cleanListing(entries []listingEntry) []sandbox.FileInfo {
	var out []sandbox.FileInfo
	for _, e := range entries {
		if c, err := sandbox.CleanPath(e.Name); err == nil && len(out) < maxOutputs {
			out = append(out, sandbox.FileInfo{Name: c, Size: e.Size, ModTime: e.ModTime})
		}
	}
	return out
}
