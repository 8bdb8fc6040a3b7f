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
		k, err := s.d.startKernel(ctx, s.id, kernelMode(s.spec), s.token)
		if err != nil && !isFencedStart(err) {
			// Leftovers of the killed kernel (a fork bomb racing the reset) may still
			// hold every pid: clear them once more and try again.
			s.resetKernel(context.WithoutCancel(ctx), nil)
			k, err = s.d.startKernel(ctx, s.id, kernelMode(s.spec), s.token)
		}
		if err != nil {
			return sandbox.Outcome{}, fmt.Errorf("restart kernel in %s: %w", s.name, errFencedStart(s.name, err))
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
	stop := k.listen(maxRunLine)
	defer stop()
	// The request goes out even when ctx has just ended: the loop below then
	// interrupts the code as it does any canceled run.
	exec := wireRequest{Op: "exec", ID: req.ID, Language: string(req.Language), Code: req.Code, Env: req.Env}
	if err := k.sendWithin(ctx, s.d.cfg.StartTimeout, exec); err != nil {
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
		grace = time.After(s.d.cfg.Grace)
		// Not taken within the grace, the kernel is hung up on and its events end:
		// the run ends as a dead kernel's, stopped (kernelDied).
		_ = k.sendWithin(ctx, s.d.cfg.Grace, wireRequest{Op: "interrupt", ID: req.ID})
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
				out := sandbox.Outcome{Status: sandbox.Succeeded, ExitCode: int(ev.ExitCode), Error: ev.Error,
					Results: results, ResultsTruncated: budget.Truncated(),
					Outputs: ev.Outputs, Workspace: listing(ev.Workspace), Notes: skipNotes(ev.Skipped),
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
				return stdout.into(stderr, out.Clean()), nil
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
	r := sandbox.Rich{Type: ev.Type, Text: ev.Text, File: ev.File}
	return r, r.Valid()
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

// listing is the kernel's workspace listing, for [sandbox.Outcome.Clean] to check.
func listing(entries []listingEntry) []sandbox.FileInfo {
	out := make([]sandbox.FileInfo, 0, min(len(entries), sandbox.MaxOutputs+1))
	for _, e := range entries {
		if len(out) > sandbox.MaxOutputs {
			break // one past the bound, so that Clean notes the cut
		}
		out = append(out, sandbox.FileInfo(e))
	}
	return out
}

// skipNotes says what the walks of the workspace left out (see deploy/sandbox/fsop.py).
// The kernel reports counts, so the sentences are the runtime's own.
func skipNotes(skipped map[string]wireInt) []string {
	var notes []string
	for _, n := range []struct{ key, format string }{
		{"bad_name", "%d workspace entries neither listed nor collected: their names hold control characters or are not UTF-8"},
		{"too_long", "%d workspace entries neither listed nor collected: their paths pass " + fmt.Sprint(sandbox.MaxPathLen) + " bytes"},
		{"special", "%d workspace entries neither listed nor collected: FIFOs, sockets or devices, not regular files"},
		{"stopped", "the workspace walk stopped after %d entries: files past them are neither listed nor collected"},
	} {
		if c := skipped[n.key]; c > 0 {
			notes = append(notes, fmt.Sprintf(n.format, c))
		}
	}
	return notes
}
