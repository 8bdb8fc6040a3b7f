package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// baselines times the raw Docker operations codeinterp is built from, with the CLI.
func baselines(t *table, image string, n int) error {
	s, err := measure(n, func() (time.Duration, error) {
		return timeCmd("docker", append(append([]string{"run", "--rm"}, sandboxFlags...), image, "python3", "-c", "print(1)")...)
	})
	if err != nil {
		return fmt.Errorf("docker run baseline: %w", err)
	}
	t.add("baseline: docker run --rm sandbox python3 -c 'print(1)'", s, "the sandbox's flags")

	out, err := exec.Command("docker", "run", "-d", "--rm", "--network", "none", image, "sleep", "600").Output()
	if err != nil {
		return fmt.Errorf("start baseline container: %w", err)
	}
	id := strings.TrimSpace(string(out))
	defer exec.Command("docker", "rm", "-f", id).Run()
	s, err = measure(n, func() (time.Duration, error) {
		return timeCmd("docker", "exec", id, "python3", "-c", "print(1)")
	})
	if err != nil {
		return fmt.Errorf("docker exec baseline: %w", err)
	}
	t.add("baseline: docker exec <running> python3 -c 'print(1)'", s, "")
	return nil
}

func timeCmd(name string, args ...string) (time.Duration, error) {
	start := time.Now()
	out, err := exec.Command(name, args...).CombinedOutput()
	d := time.Since(start)
	if err != nil || !bytes.Contains(out, []byte("1")) {
		return d, fmt.Errorf("%s %v: %v: %s", name, args, err, out)
	}
	return d, nil
}

// idleRedis reports how many commands per second the stack's Redis serves while no
// execution is running: the cost of the design's polling.
func idleRedis(t *table, over time.Duration) error {
	rate, err := redisRate(over)
	if err != nil {
		return err
	}
	t.note("idle stack: Redis commands/s (1 worker, 1 janitor)", fmt.Sprintf("%.1f", rate))
	return nil
}
