package docker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// JavaScript is a language of Sandbox.Run: it runs with node in the workspace, its
// output and outputs are collected, errors are results, a timeout stops it and the
// sandbox runs on.
func TestToolboxJavascript(t *testing.T) {
	t.Parallel()
	sb := toolboxSandbox(t)
	js := func(code string, timeout time.Duration) sandbox.Outcome {
		t.Helper()
		out, err := sb.Run(context.Background(), sandbox.Request{ID: "js-" + time.Now().Format("150405.000000000"), Language: sandbox.Javascript, Code: code, Timeout: timeout}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	toolRun(t, sb, sandbox.Request{Code: `open("data.csv", "w").write("a,b\n1,2\n")`})
	out := js(`const fs = require("fs");
const rows = fs.readFileSync("data.csv", "utf8").trim().split("\n");
fs.writeFileSync("outputs/rows.txt", String(rows.length));
const v = await Promise.resolve(42);
console.log(rows[1], v, __dirname);
console.error("to stderr");`, time.Minute)
	if out.Status != sandbox.Succeeded || out.Stdout != "1,2 42 /workspace\n" || out.Stderr != "to stderr\n" ||
		len(out.Outputs) != 1 || out.Outputs[0] != "outputs/rows.txt" {
		t.Fatalf("javascript run: %+v", out)
	}

	out = js("let x = 1;\nthrow new TypeError('bad input')", time.Minute)
	if out.Status != sandbox.Failed || out.ExitCode != 1 || out.Error == nil || out.Error.Name != "NonZeroExit" ||
		!strings.Contains(out.Stderr, "TypeError: bad input") || !strings.Contains(out.Stderr, "<code>.js:2") {
		t.Fatalf("javascript error: %+v %+v", out, out.Error)
	}

	// A big program passes whole (the code is not an argument).
	big := strings.Repeat("// filler line of a big generated program\n", 30000) + "console.log('big ok')"
	if out = js(big, time.Minute); out.Status != sandbox.Succeeded || out.Stdout != "big ok\n" {
		t.Fatalf("1 MiB of javascript: %+v", out)
	}

	// Long enough for node to start on a busy machine, so the loop is what is stopped.
	start := time.Now()
	out = js("console.log('spinning'); for (;;) {}", 10*time.Second)
	if out.Status != sandbox.TimedOut || !strings.Contains(out.Stdout, "spinning") {
		t.Fatalf("javascript timeout: %+v", out)
	}
	if took := time.Since(start); took > time.Minute {
		t.Fatalf("a 10 s timeout took %s", took)
	}
	// The kernel and the workspace survive; Node keeps no state between runs.
	if out = js("console.log(typeof x, require('fs').readFileSync('outputs/rows.txt', 'utf8'))", time.Minute); out.Status != sandbox.Succeeded || out.Stdout != "undefined 2\n" {
		t.Fatalf("after the timeout: %+v", out)
	}
}
