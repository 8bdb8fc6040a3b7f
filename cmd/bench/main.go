// Command bench measures codeinterp against a running stack (`make bench`), each
// figure beside the raw Docker baseline it should be compared with. It prints
// percentiles over sequential runs, so each number is one client's latency.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/codeinterp/codeinterp/client"
)

func main() {
	url := flag.String("url", "http://localhost:8080", "API base URL")
	key := flag.String("key", "demo-key", "API key (tenant B of the noisy-neighbour section)")
	noisyKey := flag.String("noisy-key", "noisy-key", "API key of another tenant: A, the noisy neighbour")
	image := flag.String("image", "codeinterp/sandbox:latest", "sandbox image for the baselines")
	n := flag.Int("n", 20, "runs per measurement")
	runtimes := flag.String("runtimes", "runc,runsc", "OCI runtimes to compare side by side (empty: none)")
	prefix := flag.String("prefix", "cibench-rt", "installation prefix of the sandboxes the runtime comparison makes itself")
	oneOffOnly := flag.Bool("oneoff", false, "measure the one-off path only (with its baselines and the pickup sweep)")
	flag.Parse()

	c := bench{c: client.New(*url, *key), url: *url, key: *key}
	t := &table{}
	names := strings.FieldsFunc(*runtimes, func(r rune) bool { return r == ',' })
	rt := &runtimeBench{c: c, image: *image, prefix: *prefix, n: *n, results: newSideBySide(names)}
	run := run
	if *oneOffOnly {
		run = runOneOff
	}
	err := run(c, t, rt, *noisyKey, *image, *n)
	t.print()
	if len(rt.results.rows) > 0 {
		fmt.Println()
		rt.results.print()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(c bench, t *table, rt *runtimeBench, noisyKey, image string, n int) error {
	fmt.Fprintf(os.Stderr, "measuring (%d runs each)…\n", n)
	// First, while nothing has run yet: what an idle stack costs Redis.
	if err := idleRedis(t, 10*time.Second); err != nil {
		return err
	}
	if err := oneOff(c, t, n); err != nil {
		return err
	}
	if err := oneOffLoad(c, t, image); err != nil {
		return err
	}
	if err := oneOffPool(t, image, rt.prefix); err != nil {
		return err
	}
	if err := threads(c, t, n); err != nil {
		return err
	}
	if err := mcpRoundTrip(c, t, n); err != nil {
		return err
	}
	if err := lifecycle(c, t, image, n); err != nil {
		return err
	}
	if err := baselines(t, image, n); err != nil {
		return err
	}
	if err := pickupSweep(c, t, n); err != nil {
		return err
	}
	if err := rt.run(); err != nil {
		return err
	}
	// Last: it loads the stack as hard as it can, so nothing after it is measured.
	return noisy(c, t, c.url, noisyKey, n)
}

// runOneOff measures what the one-off path costs and buys, beside its baselines.
func runOneOff(c bench, t *table, rt *runtimeBench, _, image string, n int) error {
	if err := idleRedis(t, 10*time.Second); err != nil {
		return err
	}
	for _, f := range []func() error{
		func() error { return oneOff(c, t, n) },
		func() error { return oneOffLoad(c, t, image) },
		func() error { return oneOffPool(t, image, rt.prefix) },
		func() error { return baselines(t, image, n) },
		func() error { return pickupSweep(c, t, n) },
	} {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// table collects result rows and prints them aligned.
type table struct{ rows [][]string }

func (t *table) add(name string, s sample, baselineNote string) {
	t.rows = append(t.rows, []string{name, ms(s.pct(50)), ms(s.pct(95)), fmt.Sprint(len(s)), baselineNote})
}

func (t *table) note(name, value string) { t.rows = append(t.rows, []string{name, value, "", "", ""}) }

func (t *table) print() {
	head := []string{"measurement", "p50", "p95", "n", ""}
	width := make([]int, len(head))
	for _, r := range append([][]string{head}, t.rows...) {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	for i, r := range append([][]string{head}, t.rows...) {
		var b strings.Builder
		for j, c := range r {
			if j == 0 || j == len(r)-1 { // the name and the note read left to right
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

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
