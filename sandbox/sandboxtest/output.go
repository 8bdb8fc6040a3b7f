package sandboxtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// testOutputOrder: the code's stdout and stderr are buffered (under gVisor a write per
// line costs 20×), yet what the code writes reaches the output in the order written: a
// child process's output comes after what was printed before it starts, a fork copies
// no unwritten output, and a write to one stream first writes out the other's. The
// same for JavaScript.
func testOutputOrder(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	long := func(r sandbox.Request) sandbox.Request { r.Timeout = 2 * time.Minute; return r } // forks, on a busy host
	out := run(t, sb, long(py(`import os, subprocess, sys
print('before')
subprocess.run(['echo', 'child'])
print('once')
pid = os.fork()
if pid == 0:
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)
print('a', end='')
print('b', file=sys.stderr)
print('c')
sys.stderr.write('d')
os.system('echo shell >&2')`)))
	wantStatus(t, out, sandbox.Succeeded)
	if out.Stdout != "before\nchild\nonce\nac\n" || out.Stderr != "b\ndshell\n" {
		t.Fatalf("python: stdout=%q stderr=%q", out.Stdout, out.Stderr)
	}
	out = run(t, sb, long(sandbox.Request{Language: "javascript", Code: `console.log('before');
require('child_process').execSync('echo child', {stdio: 'inherit'});
for (let i = 0; i < 3; i++) console.log('line ' + i);
process.stdout.write('no newline');
process.exit(0);`}))
	if out.Error != nil && out.Error.Name == "LanguageUnavailable" {
		return // a slim image
	}
	wantStatus(t, out, sandbox.Succeeded)
	if out.Stdout != "before\nchild\nline 0\nline 1\nline 2\nno newline" {
		t.Fatalf("javascript: stdout=%q stderr=%q", out.Stdout, out.Stderr)
	}
}

// testManyLines: 100,000 short lines (1.2 MB) arrive whole and in order, streamed in
// far fewer events than lines, within a timeout sized for gVisor on a busy host.
func testManyLines(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	for _, c := range []struct {
		lang sandbox.Language
		code string
	}{
		{"python", "for i in range(100000):\n    print(f'line {i:06d}')"},
		{"javascript", "for (let i = 0; i < 100000; i++) console.log('line ' + String(i).padStart(6, '0'));"},
	} {
		events := 0
		var streamed strings.Builder
		out, err := sb.Run(context.Background(), sandbox.Request{ID: "many-" + string(c.lang), Language: c.lang, Code: c.code, Timeout: 2 * time.Minute},
			func(ev sandbox.Event) {
				if ev.Kind == sandbox.Stdout {
					events++
					streamed.WriteString(ev.Text)
				}
			})
		if err != nil {
			t.Fatal(err)
		}
		if out.Error != nil && out.Error.Name == "LanguageUnavailable" {
			continue
		}
		wantStatus(t, out, sandbox.Succeeded)
		s := streamed.String()
		if len(s) != 1_200_000 || !strings.HasPrefix(s, "line 000000\nline 000001\n") || !strings.HasSuffix(s, "line 099999\n") {
			t.Fatalf("%s: streamed %d bytes: %.40q … %.40q", c.lang, len(s), s, s[max(len(s)-40, 0):])
		}
		for i := 0; i < 100000; i += 9973 {
			if want := fmt.Sprintf("line %06d\n", i); s[i*12:(i+1)*12] != want {
				t.Fatalf("%s: line %d is %q", c.lang, i, s[i*12:(i+1)*12])
			}
		}
		if events > 1000 {
			t.Errorf("%s: %d stream events for 100,000 lines: the output is not buffered", c.lang, events)
		}
	}
}

// testLiveOutput: buffered output still streams while the code runs: a line printed
// before a long computation (no sleep, no flush, no further output) arrives long
// before the run ends.
func testLiveOutput(t *testing.T, b bundle) {
	sb := b.sandbox(t)
	for _, c := range []struct {
		lang sandbox.Language
		code string
	}{
		{"python", "import time\nprint('first')\nt = time.monotonic()\nwhile time.monotonic() - t < 4:\n    pass\nprint('second')"},
		{"javascript", "console.log('first');\nsetTimeout(() => { const t = Date.now(); while (Date.now() - t < 4000) {} console.log('second'); }, 100);"},
	} {
		var first time.Time
		out, err := sb.Run(context.Background(), sandbox.Request{ID: "live-" + string(c.lang), Language: c.lang, Code: c.code, Timeout: time.Minute},
			func(ev sandbox.Event) {
				if ev.Kind == sandbox.Stdout && strings.HasPrefix(ev.Text, "first") && first.IsZero() {
					first = time.Now()
				}
			})
		ended := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if out.Error != nil && out.Error.Name == "LanguageUnavailable" {
			continue
		}
		wantStatus(t, out, sandbox.Succeeded)
		if out.Stdout != "first\nsecond\n" {
			t.Fatalf("%s: stdout %q", c.lang, out.Stdout)
		}
		// The line is due within tens of milliseconds; the run goes on for 4 s after it.
		if first.IsZero() || ended.Sub(first) < 2*time.Second {
			t.Fatalf("%s: the first line was streamed %v before the run ended, want it while the code still ran", c.lang, ended.Sub(first))
		}
	}
}
