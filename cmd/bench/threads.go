package main

import (
	"fmt"
	"sync"
	"time"
)

const makeFrame = `import numpy as np, pandas as pd
rng = np.random.default_rng(1)
df = pd.DataFrame({"k": rng.integers(0, 100, 100_000), "v": rng.random(100_000)})`

const groupby = `df.groupby("k")["v"].mean().sum()`

// threads measures the warm path: executions on a thread whose sandbox is running.
func threads(c bench, t *table, n int) error {
	thread := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	if _, _, err := c.run(map[string]any{"thread_id": thread, "code": "print(1)"}); err != nil {
		return fmt.Errorf("new thread: %w", err)
	}
	time.Sleep(5 * time.Second) // the warm pool refills in the background: let it

	var pickup sample
	s, err := measure(n, func() (time.Duration, error) {
		ex, d, err := c.run(map[string]any{"thread_id": thread, "code": "print(1)"})
		if err == nil && ex.StartedAt != nil {
			pickup = append(pickup, ex.StartedAt.Sub(ex.CreatedAt))
		}
		return d, err
	})
	if err != nil {
		return fmt.Errorf("warm print(1): %w", err)
	}
	t.add("warm thread print(1), POST + GET ?wait", s, "compare: docker exec baseline")
	t.add("  of which accepted → code started", pickup, "no asynq poll: the owner is woken")

	if _, _, err := c.run(map[string]any{"thread_id": thread, "code": makeFrame}); err != nil {
		return fmt.Errorf("build frame: %w", err)
	}
	s, err = measure(n, func() (time.Duration, error) {
		_, d, err := c.run(map[string]any{"thread_id": thread, "code": groupby})
		return d, err
	})
	if err != nil {
		return fmt.Errorf("warm groupby: %w", err)
	}
	t.add("warm thread pandas groupby, 100k rows", s, "")
	s, err = measure(max(n/4, 3), func() (time.Duration, error) {
		_, d, err := c.run(map[string]any{"code": makeFrame + "\n" + groupby})
		return d, err
	})
	if err != nil {
		return fmt.Errorf("one-off groupby: %w", err)
	}
	t.add("one-off pandas groupby, 100k rows (same code)", s, "")
	return throughput(c, t, 20, max(n/2, 5))
}

// throughput keeps 20 threads busy at once, each running executions back to back.
func throughput(c bench, t *table, threads, each int) error {
	prefix := fmt.Sprintf("busy-%d", time.Now().UnixNano())
	var wg sync.WaitGroup
	errs := make(chan error, threads)
	for i := range threads { // warm every thread first
		wg.Go(func() {
			if _, _, err := c.run(map[string]any{"thread_id": fmt.Sprintf("%s-%d", prefix, i), "code": "x = 0"}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	// New sandboxes were just made and the warm pool refills: let that settle.
	time.Sleep(10 * time.Second)
	start := time.Now()
	for i := range threads {
		wg.Go(func() {
			for range each {
				if _, _, err := c.run(map[string]any{"thread_id": fmt.Sprintf("%s-%d", prefix, i), "code": "x += 1"}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	t.note(fmt.Sprintf("executions/s, %d threads busy at once", threads),
		fmt.Sprintf("%.0f/s (%d in %s)", float64(threads*each)/took.Seconds(), threads*each, took.Round(time.Millisecond)))
	return nil
}
