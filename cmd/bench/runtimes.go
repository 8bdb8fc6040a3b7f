package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/docker"
)

// The runtimes section: the figures that depend on the OCI runtime, side by side for
// each one named (runc, and runsc: gVisor). Through the API, with the stack's worker
// restarted on that runtime: a one-off print(1), a warm thread's print(1) and pandas
// groupby, output-heavy code (output.go). Directly on the engine, as the worker drives it (sandbox/docker): creating a
// sandbox until its kernel is ready, a pause and resume, an idle sandbox's memory with
// pandas imported, and `docker run --rm` of print(1) for comparison.
type runtimeBench struct {
	c       bench
	image   string
	prefix  string // installation prefix of the sandboxes made directly
	n       int
	results *sideBySide
}

func (r *runtimeBench) run() error {
	if len(r.results.runtimes) == 0 {
		return nil
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	defer restartWorker(r.c.url) // back to the stack's own runtime
	for _, rt := range r.results.runtimes {
		fmt.Fprintf(os.Stderr, "runtime %s…\n", rt)
		if err := restartWorker(r.c.url, "CODEINTERP_SANDBOX_RUNTIME="+rt); err != nil {
			return err
		}
		if err := r.api(rt); err != nil {
			return fmt.Errorf("runtime %s: %w", rt, err)
		}
		d := docker.New(cli, docker.Config{Image: r.image, Prefix: r.prefix, Runtime: rt})
		if err := r.engine(rt, d); err != nil {
			return fmt.Errorf("runtime %s: %w", rt, err)
		}
	}
	return nil
}

// api measures through the stack, whose worker now runs sandboxes under rt.
func (r *runtimeBench) api(rt string) error {
	time.Sleep(5 * time.Second) // the new worker fills its warm pool: let it
	s, err := measure(r.n, func() (time.Duration, error) {
		_, d, err := r.c.run(map[string]any{"code": "print(1)"})
		return d, err
	})
	if err != nil {
		return fmt.Errorf("one-off print(1): %w", err)
	}
	r.results.add("one-off print(1), POST + GET ?wait", rt, s)
	thread := fmt.Sprintf("rt-%s-%d", rt, time.Now().UnixNano())
	if _, _, err := r.c.run(map[string]any{"thread_id": thread, "code": makeFrame}); err != nil {
		return fmt.Errorf("new thread: %w", err)
	}
	s, err = measure(r.n, func() (time.Duration, error) {
		_, d, err := r.c.run(map[string]any{"thread_id": thread, "code": "print(1)"})
		return d, err
	})
	if err != nil {
		return fmt.Errorf("warm print(1): %w", err)
	}
	r.results.add("warm thread print(1), POST + GET ?wait", rt, s)
	s, err = measure(r.n, func() (time.Duration, error) {
		_, d, err := r.c.run(map[string]any{"thread_id": thread, "code": groupby})
		return d, err
	})
	if err != nil {
		return fmt.Errorf("warm groupby: %w", err)
	}
	r.results.add("warm thread pandas groupby, 100k rows", rt, s)
	return r.outputRows(rt, thread)
}

// engine measures sandboxes made directly on the engine under d's runtime.
func (r *runtimeBench) engine(rt string, d *docker.Runtime) error {
	ctx := context.Background()
	if err := d.Ping(ctx); err != nil {
		return err
	}
	spec := sandbox.Spec{Tenant: "bench", Owner: "bench"}
	s, err := measure(max(r.n/4, 3), func() (time.Duration, error) {
		start := time.Now()
		sb, err := d.Create(ctx, spec)
		took := time.Since(start)
		if err != nil {
			return took, err
		}
		return took, sb.Remove(context.WithoutCancel(ctx))
	})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	r.results.add("sandbox create, until its kernel is ready", rt, s)

	sb, err := d.Create(ctx, spec)
	if err != nil {
		return err
	}
	defer sb.Remove(context.WithoutCancel(ctx))
	out, err := sb.Run(ctx, sandbox.Request{ID: "import", Code: "import pandas as pd\nx = 1", Timeout: time.Minute}, nil)
	if err != nil || out.Status != sandbox.Succeeded {
		return fmt.Errorf("import pandas: %+v %v", out.Error, err)
	}
	time.Sleep(2 * time.Second) // let the import's transient memory go
	if u, err := sb.(*docker.Sandbox).Usage(ctx); err == nil {
		r.results.note("idle sandbox memory, pandas imported", rt, fmt.Sprintf("%.0f MiB", float64(u.MemoryBytes)/(1<<20)))
	} else {
		r.results.note("idle sandbox memory, pandas imported", rt, "unknown: "+err.Error())
	}
	s, err = measure(r.n, func() (time.Duration, error) {
		start := time.Now()
		if err := sb.Pause(ctx); err != nil {
			return 0, err
		}
		_, err := sb.Resume(ctx)
		return time.Since(start), err
	})
	if err != nil {
		return fmt.Errorf("pause and resume: %w", err)
	}
	r.results.add("sandbox pause + resume", rt, s)

	s, err = measure(max(r.n/4, 3), func() (time.Duration, error) {
		return timeCmd("docker", "run", "--rm", "--runtime", rt, "--network", "none", r.image, "python3", "-c", "print(1)")
	})
	if err != nil {
		return fmt.Errorf("docker run baseline: %w", err)
	}
	r.results.add("baseline: docker run --rm sandbox python3 -c 'print(1)'", rt, s)
	return nil
}

// restartWorker recreates the stack's worker with env added to the environment (none:
// the stack's own settings) and waits until the API is ready again.
func restartWorker(url string, env ...string) error {
	cmd := exec.Command("docker-compose", "up", "-d", "--no-deps", "worker")
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("restart worker: %v: %s", err, out)
	}
	time.Sleep(3 * time.Second) // the old worker's heartbeat must lapse before /readyz means the new one
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the stack was not ready within 2 minutes of restarting its worker with %v", env)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sideBySide is a table with one column per runtime.
type sideBySide struct {
	runtimes []string
	rows     []string
	cells    map[string]map[string]string
}

func newSideBySide(runtimes []string) *sideBySide {
	return &sideBySide{runtimes: runtimes, cells: map[string]map[string]string{}}
}

func (t *sideBySide) add(row, runtime string, s sample) {
	t.note(row, runtime, fmt.Sprintf("%s / %s", ms(s.pct(50)), ms(s.pct(95))))
}

func (t *sideBySide) note(row, runtime, value string) {
	if t.cells[row] == nil {
		t.rows = append(t.rows, row)
		t.cells[row] = map[string]string{}
	}
	t.cells[row][runtime] = value
}

func (t *sideBySide) print() {
	head := append([]string{"by runtime (p50 / p95)"}, t.runtimes...)
	lines := [][]string{head}
	for _, row := range t.rows {
		line := []string{row}
		for _, rt := range t.runtimes {
			line = append(line, t.cells[row][rt])
		}
		lines = append(lines, line)
	}
	width := make([]int, len(head))
	for _, l := range lines {
		for i, c := range l {
			width[i] = max(width[i], len(c))
		}
	}
	for i, l := range lines {
		var b strings.Builder
		for j, c := range l {
			if j == 0 {
				fmt.Fprintf(&b, "%-*s", width[j]+2, c)
			} else {
				fmt.Fprintf(&b, "%*s  ", width[j], c)
			}
		}
		fmt.Println(strings.TrimRight(b.String(), " "))
		if i == 0 {
			fmt.Println(strings.Repeat("-", len(b.String())))
		}
	}
}
