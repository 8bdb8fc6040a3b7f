package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/codeinterp/codeinterp/client"
)

// printLoop prints 100,000 short lines (1.2 MB): output-heavy code, where each write
// system call counts (under gVisor one costs 100-150 µs).
const printLoop = "for i in range(100000):\n    print(f'line {i:06d}')"

// slowPrints prints the wall clock every 100 ms for 2 s: the lines a client streaming
// the execution should see as they are printed.
const slowPrints = "import time\nfor _ in range(20):\n    print(f'at {time.time():.6f}')\n    time.sleep(0.1)"

// outputRows measures output-heavy code under rt: the print loop's run time
// (duration_ms, from the code's start to its end) as a one-off and on a warm thread,
// and how late each line of a slow print loop reaches a client streaming it (SSE).
func (r *runtimeBench) outputRows(rt, thread string) error {
	runs := max(r.n/4, 3)
	for _, c := range []struct{ row, thread string }{
		{"print loop, 100,000 lines: run time, one-off", ""},
		{"print loop, 100,000 lines: run time, warm thread", thread},
	} {
		s, err := measure(runs, func() (time.Duration, error) {
			req := map[string]any{"code": printLoop}
			if c.thread != "" {
				req["thread_id"] = c.thread
			}
			ex, _, err := r.c.run(req)
			if err != nil {
				return 0, err
			}
			if ex.DurationMS == nil {
				return 0, fmt.Errorf("execution %s has no duration", ex.ID)
			}
			return time.Duration(*ex.DurationMS) * time.Millisecond, nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", c.row, err)
		}
		r.results.add(c.row, rt, s)
	}
	s, err := streamDelays(r.c.c, thread)
	if err != nil {
		return fmt.Errorf("streamed lines: %w", err)
	}
	r.results.add("slow print loop: a line printed → streamed to the client", rt, s)
	return nil
}

// streamDelays runs slowPrints on thread and returns, for each line, the time from
// its print to its arrival in the client's event stream (the sandbox and the client
// share the host's clock).
func streamDelays(c *client.Client, thread string) (sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := c.Submit(ctx, client.RunRequest{Code: slowPrints, ThreadID: thread})
	if err != nil {
		return nil, err
	}
	var s sample
	partial := ""
	_, err = c.Stream(ctx, ex.ID, func(ev client.Event) error {
		if ev.Type != "stdout" {
			return nil
		}
		now := time.Now()
		lines := strings.Split(partial+ev.Text(), "\n")
		partial = lines[len(lines)-1]
		for _, l := range lines[:len(lines)-1] {
			at, err := strconv.ParseFloat(strings.TrimPrefix(l, "at "), 64)
			if err != nil {
				return fmt.Errorf("unexpected line %q", l)
			}
			s = append(s, now.Sub(time.Unix(0, int64(at*1e9))))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(s) != 20 {
		return s, fmt.Errorf("%d of 20 lines streamed", len(s))
	}
	return s, nil
}
