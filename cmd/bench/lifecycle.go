package main

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// lifecycle measures resuming a paused sandbox, a new thread's first execution with
// and without the warm pool, and what idle and paused sandboxes cost in memory. It
// needs the stack started with a short CODEINTERP_IDLE_PAUSE (make bench does that).
func lifecycle(c bench, t *table, image string, n int) error {
	thread := fmt.Sprintf("pause-%d", time.Now().UnixNano())
	if _, _, err := c.run(map[string]any{"thread_id": thread, "code": "import pandas as pd\nx = 1"}); err != nil {
		return err
	}
	container, err := threadContainer(thread)
	if err != nil {
		return err
	}
	t.note("memory of one idle warm sandbox (pandas imported)", memory(container))
	var resume sample
	for i := range n {
		if err := waitPaused(c, thread); err != nil {
			return err
		}
		if i == 0 {
			t.note("memory of one paused sandbox", memory(container))
		}
		ex, d, err := c.run(map[string]any{"thread_id": thread, "code": "print(x)"})
		if err != nil {
			return err
		}
		if !ex.Sandbox.Resumed {
			return fmt.Errorf("execution %s after a pause did not resume", ex.ID)
		}
		resume = append(resume, d)
	}
	t.add("first execution after a pause (resume), POST + GET ?wait", resume, "")
	s, err := unpauseBaseline(image, n)
	if err != nil {
		return fmt.Errorf("unpause baseline: %w", err)
	}
	t.add("baseline: docker unpause", s, "a container of its own")

	withPool, err := newThreads(c, max(n/4, 3), 4*time.Second)
	if err != nil {
		return err
	}
	t.add("new thread's first print(1), from the warm pool", withPool, "")
	if err := setPool(c, "0"); err != nil {
		return err
	}
	defer setPool(c, "")
	without, err := newThreads(c, max(n/4, 3), 0)
	if err != nil {
		return err
	}
	t.add("new thread's first print(1), no warm pool", without, "compare: docker run --rm")
	return nil
}

// unpauseBaseline times `docker unpause` on a container started for it. Not on the
// thread's sandbox: its worker snapshots (a `docker exec`) and pauses it on its own
// idle timer, and a pause from outside that meets the worker's exec can freeze the
// exec's runc init inside the cgroup, and with it the engine's lock on the container.
func unpauseBaseline(image string, n int) (sample, error) {
	out, err := exec.Command("docker", "run", "-d", "--rm", "--network", "none", image, "sleep", "600").Output()
	if err != nil {
		return nil, fmt.Errorf("start baseline container: %w", err)
	}
	id := strings.TrimSpace(string(out))
	defer exec.Command("docker", "rm", "-f", id).Run()
	return measure(n, func() (time.Duration, error) {
		if err := exec.Command("docker", "pause", id).Run(); err != nil {
			return 0, err
		}
		start := time.Now()
		err := exec.Command("docker", "unpause", id).Run()
		return time.Since(start), err
	})
}

// newThreads times the first execution of fresh threads, pausing between them so a
// warm pool can refill.
func newThreads(c bench, n int, gap time.Duration) (sample, error) {
	time.Sleep(gap)
	return measure(n, func() (time.Duration, error) {
		_, d, err := c.run(map[string]any{"thread_id": fmt.Sprintf("new-%d", time.Now().UnixNano()), "code": "print(1)"})
		time.Sleep(gap)
		return d, err
	})
}

func waitPaused(c bench, thread string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		state, err := c.threadSandbox(thread)
		if err != nil {
			return err
		}
		if state == "paused" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("thread %s was not paused within 2 minutes: is CODEINTERP_IDLE_PAUSE short?", thread)
}

// threadContainer finds the container of a thread by its installation's
// latest-created thread sandbox.
func threadContainer(thread string) (string, error) {
	install := "label=codeinterp.install=" + cmp.Or(os.Getenv("CODEINTERP_SANDBOX_PREFIX"), "codeinterp")
	out, err := exec.Command("docker", "ps", "-l", "-q", "--filter", install, "--filter", "name=-t-").Output()
	id := strings.TrimSpace(string(out))
	if err != nil || id == "" {
		return "", fmt.Errorf("find the sandbox of thread %s: %v", thread, err)
	}
	return id, nil
}

func memory(container string) string {
	out, err := exec.Command("docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", container).Output()
	if err != nil {
		return "unknown: " + err.Error()
	}
	return strings.TrimSpace(string(out))
}

// setPool restarts the stack's worker with CODEINTERP_WARM_POOL=size ("" for the
// default) and waits until it is ready.
func setPool(c bench, size string) error {
	if size == "" {
		return restartWorker(c.url)
	}
	return restartWorker(c.url, "CODEINTERP_WARM_POOL="+size)
}
