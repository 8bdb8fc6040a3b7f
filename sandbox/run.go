package sandbox

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Request is one piece of code to run.
type Request struct {
	ID       string // unique per run; echoed in the kernel's events
	Language string // "python" (default) or "bash"
	Code     string
	Env      map[string]string
	Timeout  time.Duration // 0: no timeout beyond ctx
}

// Status is how a run ended.
type Status string

// Run outcomes. Every one of them is a result, not an error: errors are kept for
// failures of the service itself.
const (
	Succeeded Status = "succeeded"
	Failed    Status = "failed"
	TimedOut  Status = "timed_out"
	Canceled  Status = "canceled"
)

// Error describes why the user's code failed.
type Error struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback"`
}

// Rich is one rich output, as a notebook shows it. Images are files in the workspace.
type Rich struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	File string `json:"file,omitempty"`
}

// EventKind says what an [Event] carries.
type EventKind string

// Event kinds streamed while code runs.
const (
	Stdout EventKind = "stdout"
	Stderr EventKind = "stderr"
	Result EventKind = "result"
)

// Event is output produced while code runs, delivered in order.
type Event struct {
	Kind EventKind
	Text string // Stdout, Stderr
	Rich Rich   // Result
}

// Outcome is what a run produced, besides its streamed events.
type Outcome struct {
	Status   Status
	ExitCode int
	Error    *Error
	// Stdout and Stderr hold the first Limits.Output bytes of each stream; the whole
	// streams are delivered as events.
	Stdout, Stderr                   string
	StdoutTruncated, StderrTruncated bool
	Results                          []Rich
	// Outputs are the files under outputs/ that the run created or changed, as
	// workspace-relative paths. Read them with [Sandbox.OpenFile].
	Outputs []string
	// Workspace lists the regular files in the workspace after the run (at most 1000).
	Workspace []FileInfo
	// KernelRestarted says the kernel had died or been killed since the previous run,
	// so Python state from earlier runs is gone.
	KernelRestarted bool
}

// Run runs code in the sandbox's kernel and returns how it ended. The user's code
// failing, timing out or running out of memory is an [Outcome]; an error means the
// sandbox itself could not be used. If ctx is canceled the code is interrupted and
// the outcome is [Canceled]. onEvent, if not nil, is called for each event in order.
func (s *Sandbox) Run(ctx context.Context, req Request, onEvent func(Event)) (Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.resumeLocked(ctx); err != nil {
		return Outcome{}, err
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
				return Outcome{}, fmt.Errorf("restart kernel in %s: %w", s.name, err)
			}
		}
		s.kernel, restarted = k, true
	}
	out, err := s.run(ctx, s.kernel, req, onEvent)
	out.KernelRestarted = out.KernelRestarted || restarted
	return out, err
}

func (s *Sandbox) run(ctx context.Context, k *kernel, req Request, onEvent func(Event)) (Outcome, error) {
	if onEvent == nil {
		onEvent = func(Event) {}
	}
	start := time.Now()
	if err := k.send(wireRequest{Op: "exec", ID: req.ID, Language: req.Language, Code: req.Code, Env: req.Env}); err != nil {
		return Outcome{}, s.lostKernel(ctx, err)
	}
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var (
		results        []Rich
		stdout, stderr = capText{max: s.limits.Output}, capText{max: s.limits.Output}
		stopped        Status // TimedOut or Canceled once we interrupted the code
		grace          <-chan time.Time
		done           = ctx.Done()
	)
	interrupt := func(why Status) {
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
				kind, keep := Stdout, &stdout
				if ev.Name == "stderr" {
					kind, keep = Stderr, &stderr
				}
				keep.add(ev.Text)
				onEvent(Event{Kind: kind, Text: ev.Text})
			case "result":
				r, ok := richOf(ev)
				if ok {
					results = append(results, r)
					onEvent(Event{Kind: Result, Rich: r})
				}
			case "done":
				out := Outcome{Status: Succeeded, ExitCode: ev.ExitCode, Error: ev.Error, Results: results,
					Outputs: cleanOutputs(ev.Outputs), Workspace: cleanListing(ev.Workspace)}
				if ev.Status != "ok" {
					out.Status = Failed
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
			interrupt(TimedOut)
		case <-done:
			interrupt(Canceled)
		case <-grace:
			// The code ignored the interrupt: kill it and everything it started.
			s.resetKernel(context.WithoutCancel(ctx), k)
			return stdout.into(stderr, Outcome{Status: stopped, Error: stopError(stopped, req.Timeout), Results: results, ExitCode: -1}), nil
		}
	}
}

func stopError(why Status, timeout time.Duration) *Error {
	if why == TimedOut {
		return &Error{Name: "TimeoutError", Value: fmt.Sprintf("execution exceeded its timeout of %s", timeout)}
	}
	return &Error{Name: "Canceled", Value: "execution was canceled"}
}

func richOf(ev wireEvent) (Rich, bool) {
	switch ev.Type {
	case "text/plain", "text/html":
		return Rich{Type: ev.Type, Text: ev.Text}, true
	case "image/png":
		p, err := CleanPath(ev.File)
		if err != nil || !isOutput(p) {
			return Rich{}, false
		}
		return Rich{Type: ev.Type, File: p}, true
	}
	return Rich{}, false
}

// maxOutputs bounds how many changed files one run may report.
const maxOutputs = 1000

// cleanOutputs keeps the kernel's reported paths that are safe, under outputs/, once.
func cleanOutputs(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		c, err := CleanPath(p)
		if err != nil || !isOutput(c) || seen[c] || len(out) == maxOutputs {
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
func (c capText) into(stderr capText, out Outcome) Outcome {
	out.Stdout, out.StdoutTruncated = c.b.String(), c.truncated
	out.Stderr, out.StderrTruncated = stderr.b.String(), stderr.truncated
	return out
}

func cleanListing(entries []listingEntry) []FileInfo {
	var out []FileInfo
	for _, e := range entries {
		if c, err := CleanPath(e.Name); err == nil && len(out) < maxOutputs {
			out = append(out, FileInfo{Name: c, Size: e.Size, ModTime: e.ModTime})
		}
	}
	return out
}
