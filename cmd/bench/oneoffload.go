package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/docker"
)

// load runs f from clients goroutines for about over, and returns the completions per
// second, each call's latency, and the errors.
func load(clients int, over time.Duration, f func() (time.Duration, error)) (float64, sample, int) {
	var (
		mu     sync.Mutex
		s      sample
		errs   int
		wg     sync.WaitGroup
		start  = time.Now()
		finish = start.Add(over)
	)
	for range clients {
		wg.Go(func() {
			for time.Now().Before(finish) {
				d, err := f()
				mu.Lock()
				if err != nil {
					errs++
				} else {
					s = append(s, d)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return float64(len(s)) / time.Since(start).Seconds(), s, errs
}

// oneOffLoad measures one-off throughput with several clients at once, beside the
// same load served by `docker run --rm` per request (the sandbox's image and flags).
func oneOffLoad(c bench, t *table, image string) error {
	for _, clients := range []int{4, 8} {
		rate, s, errs := load(clients, 10*time.Second, func() (time.Duration, error) {
			_, d, err := c.run(map[string]any{"code": "print(1)"})
			return d, err
		})
		t.add(fmt.Sprintf("one-off print(1), %d clients at once", clients), s,
			fmt.Sprintf("%.1f/s, %d errors", rate, errs))
	}
	for _, clients := range []int{4, 8} {
		rate, s, errs := load(clients, 10*time.Second, func() (time.Duration, error) {
			return timeCmd("docker", append(append([]string{"run", "--rm"}, sandboxFlags...), image, "python3", "-c", "print(1)")...)
		})
		t.add(fmt.Sprintf("baseline: docker run --rm per request, %d clients at once", clients), s,
			fmt.Sprintf("%.1f/s, %d errors", rate, errs))
	}
	return nil
}

// sandboxFlags are the flags of a codeinterp sandbox that `docker run` takes as they
// are (sandbox/docker hostConfig), for the baselines.
var sandboxFlags = []string{"--network", "none", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
	"--init", "--ipc", "private", "--memory", "512m", "--memory-swap", "512m", "--cpus", "1", "--pids-limit", "128",
	"--tmpfs", "/tmp:rw,nosuid,nodev,size=67108864,mode=1777", "--user", "1000:1000"}

// oneOffPool reports the one-off pool's size and how fast a worker refills it: the
// rate at which the engine makes recyclable sandboxes (kernel up, libraries imported)
// when as many are made at once as a worker starts kernels at once (one per CPU).
func oneOffPool(t *table, image, prefix string) error {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	d := docker.New(cli, docker.Config{Image: image, Prefix: prefix})
	ctx := context.Background()
	size := os.Getenv("CODEINTERP_ONEOFF_POOL")
	if size == "" {
		size = "2 (default)"
	}
	t.note("one-off pool size per worker (CODEINTERP_ONEOFF_POOL)", size)
	const n = 6
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sbs  []sandbox.Sandbox
	)
	start := time.Now()
	for range n {
		wg.Go(func() {
			sb, err := d.Create(ctx, sandbox.Spec{Owner: "bench", Recyclable: true})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			sbs = append(sbs, sb)
		})
	}
	wg.Wait()
	took := time.Since(start)
	for _, sb := range sbs {
		_ = sb.Remove(context.WithoutCancel(ctx))
	}
	if len(errs) > 0 {
		return fmt.Errorf("create recyclable sandboxes: %v", errs[0])
	}
	t.note("one-off pool refill (engine, recyclable sandboxes ready)", fmt.Sprintf("%.1f/s (%d in %s)", float64(n)/took.Seconds(), n, took.Round(time.Millisecond)))
	return nil
}

// pickupSweep restarts the stack's worker with each asynq check interval and
// measures what it costs an idle Redis and what pickup latency it buys (accepted →
// code started, a recycled sandbox being at hand after the first run). The stack's
// Redis serves one worker, one janitor and the API, so the idle rate beyond the
// worker's is theirs: the row at 1 s shows it.
func pickupSweep(c bench, t *table, n int) error {
	defer restartWorker(c.url) // back to the stack's own setting
	for _, iv := range []string{"1s", "250ms", "100ms", "50ms", "20ms"} {
		fmt.Fprintf(os.Stderr, "check interval %s…\n", iv)
		if err := restartWorker(c.url, "CODEINTERP_TASK_CHECK_INTERVAL="+iv); err != nil {
			return err
		}
		if _, _, err := c.run(map[string]any{"code": "print(1)"}); err != nil { // a sandbox to recycle
			return err
		}
		rate, err := redisRate(5 * time.Second)
		if err != nil {
			return err
		}
		var pickup sample
		for range n {
			ex, _, err := c.run(map[string]any{"code": "print(1)"})
			if err != nil {
				return err
			}
			if ex.StartedAt != nil {
				pickup = append(pickup, ex.StartedAt.Sub(ex.CreatedAt))
			}
			time.Sleep(time.Duration(len(pickup)%7) * 13 * time.Millisecond) // arrive at varied phases of the poll
		}
		t.add("pickup at check interval "+iv+" (accepted → code started)", pickup, fmt.Sprintf("idle Redis: %.1f commands/s", rate))
	}
	return nil
}

// redisRate is the commands per second the stack's Redis serves over a while.
func redisRate(over time.Duration) (float64, error) {
	args := []string{"ps", "-q", "--filter", "label=com.docker.compose.service=redis"}
	if p := os.Getenv("COMPOSE_PROJECT_NAME"); p != "" { // other stacks may share the engine
		args = append(args, "--filter", "label=com.docker.compose.project="+p)
	}
	out, err := exec.Command("docker", args...).Output()
	id := strings.Fields(string(out))
	if err != nil || len(id) == 0 {
		return 0, fmt.Errorf("find the stack's redis container: %v", err)
	}
	count := func() (int, error) {
		out, err := exec.Command("docker", "exec", id[0], "redis-cli", "info", "stats").Output()
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
				return strconv.Atoi(strings.TrimSpace(v))
			}
		}
		return 0, fmt.Errorf("no total_commands_processed in INFO")
	}
	before, err := count()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	time.Sleep(over)
	after, err := count()
	if err != nil {
		return 0, err
	}
	return float64(after-before-1) / time.Since(start).Seconds(), nil // minus our own INFO
}
