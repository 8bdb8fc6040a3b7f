package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/docker"
)

// discardLogger drops the stack's logs; CODEINTERP_TEST_LOG=1 sends them to stderr,
// for a failure that needs the worker's side of the story.
var discardLogger = func() *slog.Logger {
	if os.Getenv("CODEINTERP_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}()

const chartJob = `import warnings; warnings.simplefilter("error")  # a missing CJK glyph fails the test
import pandas as pd, matplotlib.pyplot as plt
df = pd.read_csv("data/sales.csv")
summary = df.groupby("region", as_index=False)["amount"].sum()
summary.to_csv("outputs/summary.csv", index=False)
ax = summary.plot.bar(x="region", y="amount", legend=False)
ax.set_title("销售额 by region")  # CJK glyphs render from the bundled Noto fonts
plt.savefig("outputs/chart.png")
print(summary.to_string(index=False))`

func TestOneOffChartEndToEnd(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	csv := "region,amount\nnorth,10\nsouth,5\nnorth,7\n"
	ex := s.run(t, map[string]any{
		"code":  chartJob,
		"files": []map[string]any{{"name": "data/sales.csv", "content_base64": base64.StdEncoding.EncodeToString([]byte(csv))}},
	})
	if ex.Status != "succeeded" || ex.ExitCode == nil || *ex.ExitCode != 0 {
		t.Fatalf("status %s, error %+v, stderr %q", ex.Status, ex.Error, ex.Stderr)
	}
	if !strings.Contains(ex.Stdout, "north      17") {
		t.Fatalf("stdout %q", ex.Stdout)
	}
	files := map[string]int{}
	for i, f := range ex.Files {
		files[f.Name] = i
	}
	png, okPNG := files["outputs/chart.png"]
	sum, okCSV := files["outputs/summary.csv"]
	// The figure is still open at the end, so it is also a rich result, as in a notebook.
	_, okResult := files["outputs/.results/1.png"]
	if !okPNG || !okCSV || !okResult || len(ex.Files) != 3 {
		t.Fatalf("files = %+v; want the chart, the summary and the figure result, and not the input", ex.Files)
	}
	for _, i := range []int{png, sum} {
		f := ex.Files[i]
		body := download(t, f.URL)
		h := sha256.Sum256(body)
		if int64(len(body)) != f.Size || hex.EncodeToString(h[:]) != f.SHA256 || time.Until(f.ExpiresAt) < 50*time.Minute {
			t.Fatalf("%s: downloaded %d bytes (listed %d), sha %s vs %s, expires %s", f.Name, len(body), f.Size, hex.EncodeToString(h[:]), f.SHA256, f.ExpiresAt)
		}
	}
	if f := ex.Files[png]; f.ContentType != "image/png" || !strings.HasPrefix(string(download(t, f.URL)), "\x89PNG") {
		t.Fatalf("chart: %+v", f)
	}
	if got := string(download(t, ex.Files[sum].URL)); got != "region,amount\nnorth,17\nsouth,5\n" {
		t.Fatalf("summary.csv = %q", got)
	}
	s.wantNoSandboxes(t)
}

func TestOneOffOutcomes(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{limits: sandbox.Limits{Memory: 192 << 20, Output: 4 << 10}})
	for _, tc := range []struct {
		name  string
		req   map[string]any
		check func(t *testing.T, ex execution)
	}{
		{"exception", map[string]any{"code": "x = 1\nraise ValueError('bad input')"}, func(t *testing.T, ex execution) {
			if ex.Status != "failed" || ex.Error == nil || ex.Error.Name != "ValueError" || ex.Error.Value != "bad input" || !strings.Contains(ex.Error.Traceback, "line 2") {
				t.Fatalf("%s %+v", ex.Status, ex.Error)
			}
		}},
		{"timeout", map[string]any{"code": "import time\nprint('before', flush=True)\ntime.sleep(30)", "timeout_ms": 700}, func(t *testing.T, ex execution) {
			if ex.Status != "timed_out" || ex.Stdout != "before\n" {
				t.Fatalf("%s stdout=%q", ex.Status, ex.Stdout)
			}
		}},
		{"oom", map[string]any{"code": "x = []\nwhile True:\n    x.append(b'y' * (8 << 20))"}, func(t *testing.T, ex execution) {
			if ex.Status != "failed" || ex.Error == nil || !strings.Contains(ex.Error.Value, "memory") {
				t.Fatalf("%s %+v", ex.Status, ex.Error)
			}
		}},
		{"bash exit code", map[string]any{"language": "bash", "code": "echo out; echo err >&2; exit 7"}, func(t *testing.T, ex execution) {
			if ex.Status != "failed" || ex.ExitCode == nil || *ex.ExitCode != 7 || ex.Stdout != "out\n" || ex.Stderr != "err\n" {
				t.Fatalf("%s exit=%v stdout=%q stderr=%q", ex.Status, ex.ExitCode, ex.Stdout, ex.Stderr)
			}
		}},
		{"env", map[string]any{"code": "import os; print(os.environ['GREETING'])", "env": map[string]string{"GREETING": "hej"}}, func(t *testing.T, ex execution) {
			if ex.Stdout != "hej\n" {
				t.Fatalf("stdout %q", ex.Stdout)
			}
		}},
		{"output cap", map[string]any{"code": "for i in range(2000):\n    print(f'line {i:05d}')"}, func(t *testing.T, ex execution) {
			if ex.Status != "succeeded" || !ex.StdoutTruncated || len(ex.Stdout) > 4<<10 {
				t.Fatalf("%s truncated=%v len=%d", ex.Status, ex.StdoutTruncated, len(ex.Stdout))
			}
			var log string
			for _, f := range ex.Files {
				if f.Name == "stdout.log" {
					log = string(download(t, f.URL))
				}
			}
			if strings.Count(log, "\n") != 2000 || !strings.HasSuffix(log, "line 01999\n") {
				t.Fatalf("full stdout artifact has %d lines", strings.Count(log, "\n"))
			}
		}},
		{"symlink out of the workspace", map[string]any{"code": "import os\nos.makedirs('outputs', exist_ok=True)\nos.symlink('/etc/passwd', 'outputs/passwd')\nopen('outputs/ok.txt','w').write('ok')"}, func(t *testing.T, ex execution) {
			if len(ex.Files) != 1 || ex.Files[0].Name != "outputs/ok.txt" {
				t.Fatalf("files %+v", ex.Files)
			}
		}},
		{"rich results", map[string]any{"code": "import matplotlib.pyplot as plt\nplt.plot([3, 1, 2])\n21 * 2"}, func(t *testing.T, ex execution) {
			var text, image string
			for _, r := range ex.Results {
				switch r.Type {
				case "text/plain":
					text = r.Text
				case "image/png":
					image = r.File
				}
			}
			found := false
			for _, f := range ex.Files {
				found = found || (f.Name == image && strings.HasPrefix(string(download(t, f.URL)), "\x89PNG"))
			}
			if text != "42" || !found {
				t.Fatalf("results %+v files %+v", ex.Results, ex.Files)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.check(t, s.run(t, tc.req))
		})
	}
	t.Cleanup(func() { s.wantNoSandboxes(t) })
}

func TestOneOffCrossTenant(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ex := s.run(t, map[string]any{"code": "open('outputs/secret.txt','w').write('acme only')"})
	if ex.Status != "succeeded" {
		t.Fatalf("%s %+v", ex.Status, ex.Error)
	}
	var other map[string]any
	if code := s.callAs(t, "key-b", "GET", "/v1/executions/"+ex.ID, nil, &other); code != 404 {
		t.Fatalf("globex read acme's execution: %d %v", code, other)
	}
}

// A worker stopped in the middle of a run interrupts the code, records why, and
// still removes the sandbox.
func TestWorkerStopMidRun(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{shutdownTimeout: 500 * time.Millisecond})
	var ex execution
	s.call(t, "POST", "/v1/executions", map[string]any{"code": "import time\nprint('started', flush=True)\ntime.sleep(60)"}, &ex)
	eventually(t, time.Minute, "execution running", func() bool {
		var cur execution
		s.call(t, "GET", "/v1/executions/"+ex.ID, nil, &cur)
		return cur.Status == "running"
	})
	s.workers[0].stop(500 * time.Millisecond)
	got := s.wait(t, ex.ID)
	if got.Status != "failed" || got.Error == nil || got.Error.Name != "WorkerStopped" {
		t.Fatalf("%s %+v", got.Status, got.Error)
	}
	s.wantNoSandboxes(t)
}

// wantNoSandboxes checks that every sandbox this stack created is gone (soon: the
// worker records the outcome before it removes the sandbox).
func (s *stack) wantNoSandboxes(t *testing.T) {
	t.Helper()
	eventually(t, 30*time.Second, "sandboxes removed", func() bool {
		list, err := s.docker.ContainerList(context.Background(), container.ListOptions{
			All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelInstall+"="+s.prefix)),
		})
		if err != nil {
			t.Fatal(err)
		}
		return len(list) == 0
	})
}
