package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// baselines times the raw Docker operations codeinterp is built from, with the CLI.
func baselines(t *table, image string, n int) error {
	s, err := measure(n, func() (time.Duration, error) {
		return timeCmd("docker", "run", "--rm", "--network", "none", image, "python3", "-c", "print(1)")
	})
	if err != nil {
		return fmt.Errorf("docker run baseline: %w", err)
	}
	t.add("baseline: docker run --rm sandbox python3 -c 'print(1)'", s, "")

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
	args := []string{"ps", "-q", "--filter", "label=com.docker.compose.service=redis"}
	if p := os.Getenv("COMPOSE_PROJECT_NAME"); p != "" { // other stacks may share the engine
		args = append(args, "--filter", "label=com.docker.compose.project="+p)
	}
	out, err := exec.Command("docker", args...).Output()
	id := strings.Fields(string(out))
	if err != nil || len(id) == 0 {
		return fmt.Errorf("find the stack's redis container: %v", err)
	}
	count := func() (int, error) {
		out, err := exec.Command("docker", "exec", id[0], "redis-cli", "info", "stats").Output()
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
				return strconv.Atoi(v)
			}
		}
		return 0, fmt.Errorf("no total_commands_processed in INFO")
	}
	before, err := count()
	if err != nil {
		return err
	}
	start := time.Now()
	time.Sleep(over)
	after, err := count()
	if err != nil {
		return err
	}
	rate := float64(after-before-1) / time.Since(start).Seconds() // minus our own INFO
	t.note("idle stack: Redis commands/s (1 worker, 1 janitor)", fmt.Sprintf("%.1f", rate))
	return nil
}
