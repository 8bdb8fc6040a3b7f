// Command faults runs the fault suite (`make test-faults`): the whole stack with three
// workers on a compose project of its own, under continuous load, while a worker and
// the API are SIGKILLed, Redis crashes and MinIO stops for 20 s; then it checks from
// the sandboxes' own records that nothing ran twice, out of order or at once, and
// that every accepted execution ended. See internal/faults.
//
//	go run ./cmd/faults                          the size: 50 threads × 40 executions
//	go run ./cmd/faults -threads 10 -each 10     a smaller run
//
// The server images are deploy/faults/images.sh's (codeinterp/{api,worker,janitor}:faults).
// Exit status 1 when a check fails, 2 when the suite could not run.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/codeinterp/codeinterp/internal/faults"
)

func main() {
	var (
		cfg     faults.Config
		list    string
		compose string
	)
	flag.IntVar(&cfg.Threads, "threads", 50, "threads under load")
	flag.IntVar(&cfg.Each, "each", 40, "executions per thread")
	flag.DurationVar(&cfg.Over, "over", 3*time.Minute, "each thread's executions are spread over this long; the faults fall within it")
	flag.DurationVar(&cfg.OneOffEvery, "oneoff-every", time.Second, "a one-off is submitted this often while threads load")
	flag.StringVar(&list, "faults", strings.Join(faults.AllFaults, ","), "faults to inject, in order (none: \"\")")
	flag.DurationVar(&cfg.Drain, "drain", 8*time.Minute, "how long to wait for every accepted execution to end")
	flag.StringVar(&cfg.Dir, "dir", filepath.Join(os.TempDir(), "codeinterp-faults-"+time.Now().Format("20060102-150405")),
		"where the journals, the services' logs and summary.json go")
	flag.BoolVar(&cfg.Keep, "keep", false, "leave the stack running afterwards (remove it with -down)")
	down := flag.Bool("down", false, "only remove the suite's stack and sandboxes")
	flag.StringVar(&compose, "compose", "docker-compose", "the compose command")
	flag.StringVar(&cfg.Stack.File, "file", "deploy/faults/docker-compose.yml", "the suite's compose file")
	flag.StringVar(&cfg.Stack.Project, "project", "codeinterp-faults", "compose project name")
	flag.StringVar(&cfg.Stack.Prefix, "prefix", "cifaults", "sandbox prefix of the stack's workers")
	flag.StringVar(&cfg.Stack.Tag, "tag", "faults", "tag of the api, worker and janitor images")
	flag.IntVar(&cfg.Stack.APIPort, "api-port", 18390, "host port of the API")
	flag.IntVar(&cfg.Stack.S3Port, "s3-port", 19390, "host port of MinIO")
	flag.Parse()
	cfg.Stack.Compose = strings.Fields(compose)
	if list != "" {
		cfg.Faults = strings.Split(list, ",")
	}
	for _, f := range cfg.Faults {
		if !strings.Contains(","+strings.Join(faults.AllFaults, ",")+",", ","+f+",") {
			fmt.Fprintf(os.Stderr, "faults: unknown fault %q (want some of %v)\n", f, faults.AllFaults)
			os.Exit(2)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *down {
		cfg.Stack.JournalDir = os.TempDir() // compose wants it set to parse the file
		if err := cfg.Stack.Down(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "faults:", err)
			os.Exit(2)
		}
		return
	}
	start := time.Now()
	progress := func(s string) { fmt.Printf("[%6s] %s\n", time.Since(start).Round(time.Second), s) }
	res, err := faults.Run(ctx, cfg, progress)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(2)
	}
	res.Print(os.Stdout)
	if b, err := json.MarshalIndent(res, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(cfg.Dir, "summary.json"), b, 0o644)
	}
	fmt.Printf("journals, logs and summary.json: %s\n", cfg.Dir)
	if !res.Passed() {
		os.Exit(1)
	}
}
