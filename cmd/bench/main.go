// Command bench measures codeinterp against a running stack (`make bench`), each
// figure beside the raw Docker baseline it should be compared with. It prints
// percentiles over sequential runs, so each number is one client's latency.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
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
	only := flag.String("sections", "", "measure only these sections, in their usual order (comma-separated: "+strings.Join(sectionNames(), ", ")+")")
	flag.Parse()

	c := bench{c: client.New(*url, *key), url: *url, key: *key}
	t := &table{}
	names := strings.FieldsFunc(*runtimes, func(r rune) bool { return r == ',' })
	rt := &runtimeBench{c: c, image: *image, prefix: *prefix, n: *n, results: newSideBySide(names)}
	want := *only
	if *oneOffOnly {
		want = "idle,oneoff,oneoffload,pool,baselines,pickup"
	}
	err := run(c, t, rt, *noisyKey, *image, *n, want)
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

// section is one part of the benchmark.
type section struct {
	name string
	run  func(c bench, t *table, rt *runtimeBench, noisyKey, image string, n int) error
}

// sections are run in this order: first, while nothing has run yet, what an idle stack
// costs Redis; last, the noisy neighbour, which loads the stack as hard as it can, so
// nothing after it is measured.
var sections = []section{
	{"idle", func(_ bench, t *table, _ *runtimeBench, _, _ string, _ int) error {
		return idleRedis(t, 10*time.Second)
	}},
	{"oneoff", func(c bench, t *table, _ *runtimeBench, _, _ string, n int) error { return oneOff(c, t, n) }},
	{"oneoffload", func(c bench, t *table, _ *runtimeBench, _, image string, _ int) error { return oneOffLoad(c, t, image) }},
	{"pool", func(_ bench, t *table, rt *runtimeBench, _, image string, _ int) error {
		return oneOffPool(t, image, rt.prefix)
	}},
	{"threads", func(c bench, t *table, _ *runtimeBench, _, _ string, n int) error { return threads(c, t, n) }},
	{"mcp", func(c bench, t *table, _ *runtimeBench, _, _ string, n int) error { return mcpRoundTrip(c, t, n) }},
	{"lifecycle", func(c bench, t *table, _ *runtimeBench, _, image string, n int) error {
		return lifecycle(c, t, image, n)
	}},
	{"baselines", func(_ bench, t *table, _ *runtimeBench, _, image string, n int) error { return baselines(t, image, n) }},
	{"pickup", func(c bench, t *table, _ *runtimeBench, _, _ string, n int) error { return pickupSweep(c, t, n) }},
	{"runtimes", func(_ bench, _ *table, rt *runtimeBench, _, _ string, _ int) error { return rt.run() }},
	{"noisy", func(c bench, t *table, _ *runtimeBench, noisyKey, _ string, n int) error {
		return noisy(c, t, c.url, noisyKey, n)
	}},
}

func sectionNames() []string {
	var names []string
	for _, s := range sections {
		names = append(names, s.name)
	}
	return names
}

// run measures the sections named in want (all when empty).
func run(c bench, t *table, rt *runtimeBench, noisyKey, image string, n int, want string) error {
	chosen := map[string]bool{}
	for _, name := range strings.FieldsFunc(want, func(r rune) bool { return r == ',' }) {
		if !slices.Contains(sectionNames(), name) {
			return fmt.Errorf("unknown section %q (sections: %s)", name, strings.Join(sectionNames(), ", "))
		}
		chosen[name] = true
	}
	fmt.Fprintf(os.Stderr, "measuring (%d runs each)…\n", n)
	for _, s := range sections {
		if len(chosen) > 0 && !chosen[s.name] {
			continue
		}
		if err := s.run(c, t, rt, noisyKey, image, n); err != nil {
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
