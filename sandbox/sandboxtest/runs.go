package sandboxtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

func testStdout(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	var streamed strings.Builder
	out, err := sb.Run(context.Background(), sandbox.Request{ID: "r1", Code: "import sys\nprint('hello')\nprint('oops', file=sys.stderr)", Timeout: 30 * time.Second},
		func(ev sandbox.Event) {
			if ev.Kind == sandbox.Stdout {
				streamed.WriteString(ev.Text)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, out, sandbox.Succeeded)
	if out.Stdout != "hello\n" || out.Stderr != "oops\n" || streamed.String() != "hello\n" {
		t.Fatalf("stdout=%q stderr=%q streamed=%q", out.Stdout, out.Stderr, streamed.String())
	}
}

func testException(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	out := run(t, sb, py("def f():\n    return 1 / 0\n\nf()"))
	wantStatus(t, out, sandbox.Failed)
	if out.Error == nil || out.Error.Name != "ZeroDivisionError" || out.Error.Value != "division by zero" {
		t.Fatalf("error = %+v", out.Error)
	}
	tb := out.Error.Traceback
	if !strings.Contains(tb, "line 2, in f") || !strings.Contains(tb, "return 1 / 0") || strings.Contains(tb, "driver") {
		t.Fatalf("traceback should point at the user's lines only:\n%s", tb)
	}
	// The kernel survives a user's exception.
	wantStatus(t, run(t, sb, py("print(1)")), sandbox.Succeeded)
}

func testExitCodes(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	out := run(t, sb, sandbox.Request{Language: "bash", Code: "echo hi; exit 3"})
	wantStatus(t, out, sandbox.Failed)
	if out.ExitCode != 3 || out.Stdout != "hi\n" {
		t.Fatalf("bash: exit=%d stdout=%q", out.ExitCode, out.Stdout)
	}
	out = run(t, sb, py("import sys; sys.exit(4)"))
	if out.Status != sandbox.Failed || out.ExitCode != 4 {
		t.Fatalf("sys.exit(4): status=%s exit=%d", out.Status, out.ExitCode)
	}
	wantStatus(t, run(t, sb, py("import sys; sys.exit(0)")), sandbox.Succeeded)
	out = run(t, sb, py("x = (1,"))
	if out.Status != sandbox.Failed || out.Error == nil || out.Error.Name != "SyntaxError" {
		t.Fatalf("syntax error: %+v %+v", out.Status, out.Error)
	}
}

func testState(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	wantStatus(t, run(t, sb, py("x = 41")), sandbox.Succeeded)
	out := run(t, sb, py("print(x + 1)"))
	if out.Stdout != "42\n" || out.KernelRestarted {
		t.Fatalf("stdout=%q restarted=%v", out.Stdout, out.KernelRestarted)
	}
	// bash runs in the same workspace.
	run(t, sb, py("open('note.txt', 'w').write('from python')"))
	if out := run(t, sb, sandbox.Request{Language: "bash", Code: "cat note.txt"}); out.Stdout != "from python" {
		t.Fatalf("bash saw %q", out.Stdout)
	}
}

func testRichResults(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	out := run(t, sb, py("import matplotlib.pyplot as plt\nimport pandas as pd\nplt.plot([1, 2, 3])\npd.DataFrame({'a': [1, 2]})"))
	wantStatus(t, out, sandbox.Succeeded)
	types := map[string]sandbox.Rich{}
	for _, r := range out.Results {
		types[r.Type] = r
	}
	if !strings.Contains(types["text/plain"].Text, "a") || !strings.Contains(types["text/html"].Text, "<table") {
		t.Fatalf("DataFrame results missing: %+v", out.Results)
	}
	png := types["image/png"]
	if png.File == "" || !strings.HasPrefix(png.File, "outputs/") {
		t.Fatalf("figure not captured: %+v", out.Results)
	}
	if data := readAll(t, sb, png.File); !strings.HasPrefix(data, "\x89PNG") {
		t.Fatalf("%s is not a PNG", png.File)
	}
	if !contains(out.Outputs, png.File) {
		t.Fatalf("outputs %v lack %s", out.Outputs, png.File)
	}
	if out := run(t, sb, py("6 * 7")); len(out.Results) != 1 || out.Results[0].Text != "42" {
		t.Fatalf("last expression: %+v", out.Results)
	}
}

// testSavedFigure: a figure the code saved as a PNG and left open becomes the rich
// result with the bytes of that save, not drawn again; a figure changed after its
// save, or saved with other options, is drawn again.
func testSavedFigure(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	richPNG := func(out sandbox.Outcome) string {
		t.Helper()
		wantStatus(t, out, sandbox.Succeeded)
		for _, r := range out.Results {
			if r.Type == "image/png" {
				return readAll(t, sb, r.File)
			}
		}
		t.Fatalf("no image result: %+v (stderr %q)", out.Results, out.Stderr)
		return ""
	}
	const plot = "import matplotlib.pyplot as plt\nplt.plot([3, 1, 2])\n"
	for _, c := range []struct {
		name, code string
		same       bool
	}{
		{"unchanged", plot + `plt.savefig("outputs/a.png")`, true},
		{"titled after the save", plot + `plt.savefig("outputs/a.png"); plt.title("later")`, false},
		{"other dpi", plot + `plt.savefig("outputs/a.png", dpi=40)`, false},
		{"line added after the save", plot + `plt.savefig("outputs/a.png"); plt.plot([1, 2, 3])`, false},
	} {
		rich := richPNG(run(t, sb, py(c.code)))
		if saved := readAll(t, sb, "outputs/a.png"); (rich == saved) != c.same || !strings.HasPrefix(rich, "\x89PNG") {
			t.Fatalf("%s: rich result equal to the saved file = %v, want %v", c.name, rich == saved, c.same)
		}
	}
	// Proof that nothing is drawn again: the code breaks both ways of drawing once its
	// save is done (pyplot.savefig's closing draw_idle, and the driver's render).
	out := run(t, sb, py(plot+`import codeinterp_mpl
from matplotlib.backends.backend_agg import FigureCanvasAgg
def boom(*a, **k): raise RuntimeError("drawn again")
codeinterp_mpl.FigureCanvas.draw = boom
plt.savefig("outputs/once.png")
FigureCanvasAgg.print_png = boom`))
	if rich := richPNG(out); rich != readAll(t, sb, "outputs/once.png") || strings.Contains(out.Stderr, "drawn again") {
		t.Fatalf("the saved figure was drawn again: stderr %q", out.Stderr)
	}
}

// testSlowStream: the run's end does not overtake its output. CI lost the tail of a
// 1.2 MB output under gVisor: the worker read the kernel's events slowly, the kernel's
// pump that turns the code's stdout into events was more than 2 s behind when the code
// ended, and the kernel waited only 2 s for it. Here the code itself holds up the pump
// (it runs in the kernel's process) for 3 s on its last line, after the code ended.
func testSlowStream(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	out := run(t, sb, py(`import gc, time
for p in gc.get_objects():
    if type(p).__name__ == "Pump" and p.stream == "stdout" and p.is_alive():
        def out(data, fast=p.out):
            if b"the end" in data:
                time.sleep(3)
            fast(data)
        p.out = out
print("x" * 1000)
print("the end")`))
	wantStatus(t, out, sandbox.Succeeded)
	if !strings.HasSuffix(out.Stdout, "the end\n") {
		t.Fatalf("stdout lost its tail: %d bytes, ending %q", len(out.Stdout), out.Stdout[max(len(out.Stdout)-20, 0):])
	}
}

func testTimeout(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	run(t, sb, py("x = 1"))
	out := run(t, sb, sandbox.Request{Code: "while True:\n    pass", Timeout: 500 * time.Millisecond})
	wantStatus(t, out, sandbox.TimedOut)
	// The interrupt stopped the loop; state survives.
	out = run(t, sb, py("print(x)"))
	if out.Stdout != "1\n" || out.KernelRestarted {
		t.Fatalf("after timeout: stdout=%q restarted=%v", out.Stdout, out.KernelRestarted)
	}
}

func testTimeoutIgnored(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	out := run(t, sb, sandbox.Request{Code: "import time\nwhile True:\n    try:\n        time.sleep(60)\n    except KeyboardInterrupt:\n        pass", Timeout: 300 * time.Millisecond})
	wantStatus(t, out, sandbox.TimedOut)
	out = run(t, sb, py("print('alive')"))
	if out.Stdout != "alive\n" || !out.KernelRestarted {
		t.Fatalf("after kill: stdout=%q restarted=%v", out.Stdout, out.KernelRestarted)
	}
}

func testCancel(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := sb.Run(ctx, sandbox.Request{ID: "c", Code: "import time\nprint('started', flush=True)\ntime.sleep(60)"}, func(ev sandbox.Event) {
		if ev.Kind == sandbox.Stdout && strings.Contains(ev.Text, "started") {
			cancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, out, sandbox.Canceled)
	wantStatus(t, run(t, sb, py("x = 2")), sandbox.Succeeded)

	// Canceled before the code even started: it must not run on, and the kernel
	// (with its state) survives.
	done, stop := context.WithCancel(context.Background())
	stop()
	out, err = sb.Run(done, sandbox.Request{ID: "early", Code: "import time\ntime.sleep(60)"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, out, sandbox.Canceled)
	if out := run(t, sb, py("print(x)")); out.Stdout != "2\n" || out.KernelRestarted {
		t.Fatalf("after an early cancel: %q restarted=%v", out.Stdout, out.KernelRestarted)
	}
}

func testOOM(t *testing.T, b bundle) {
	sb := b.sandbox(t, func(s *sandbox.Spec) { s.Limits.Memory = 128 << 20 })
	out := run(t, sb, py("blocks = []\nwhile True:\n    blocks.append(b'x' * (16 << 20))"))
	wantStatus(t, out, sandbox.Failed)
	if out.Error == nil || !strings.Contains(strings.ToLower(out.Error.Value), "memory") {
		t.Fatalf("error should say memory: %+v", out.Error)
	}
	if out := run(t, sb, py("print('after')")); out.Stdout != "after\n" || !out.KernelRestarted {
		t.Fatalf("after OOM: stdout=%q restarted=%v", out.Stdout, out.KernelRestarted)
	}
}

func testOutputCap(t *testing.T, b bundle) {
	sb := b.sandbox(t, func(s *sandbox.Spec) { s.Limits.Output = 1000 })
	var total int
	out, err := sb.Run(context.Background(), sandbox.Request{ID: "flood", Code: "import sys\nfor i in range(1000):\n    print('é' * 99)\nsys.stderr.write('small')", Timeout: 30 * time.Second},
		func(ev sandbox.Event) {
			if ev.Kind == sandbox.Stdout {
				total += len(ev.Text)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, out, sandbox.Succeeded)
	if len(out.Stdout) > 1000 || !out.StdoutTruncated || !strings.HasPrefix(out.Stdout, "éé") {
		t.Fatalf("stdout kept %d bytes, truncated=%v", len(out.Stdout), out.StdoutTruncated)
	}
	if out.Stderr != "small" || out.StderrTruncated {
		t.Fatalf("stderr=%q truncated=%v", out.Stderr, out.StderrTruncated)
	}
	if want := 1000 * (99*2 + 1); total != want {
		t.Fatalf("events carried %d bytes, want the whole stream, %d", total, want)
	}
}
