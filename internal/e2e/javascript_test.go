package e2e

import (
	"encoding/base64"
	"strings"
	"testing"
)

// language "javascript" runs with Node through the API, one-off and on a thread, in
// the same workspace as Python and bash: input files in, stdout and outputs out,
// errors and timeouts as results. A thread keeps files between JavaScript runs, not
// variables. MCP's code_interpreter takes it too.
func TestJavascriptEndToEnd(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})

	ex := s.run(t, map[string]any{
		"language": "javascript",
		"code": `const fs = require("fs");
const data = JSON.parse(fs.readFileSync("data/in.json", "utf8"));
fs.writeFileSync("outputs/total.json", JSON.stringify({total: data.reduce((a, b) => a + b, 0)}));
console.log("rows", data.length);`,
		"files": []map[string]any{{"name": "data/in.json", "content_base64": base64.StdEncoding.EncodeToString([]byte("[1,2,3.5]"))}},
	})
	if ex.Status != "succeeded" || ex.Stdout != "rows 3\n" || len(ex.Files) != 1 || ex.Files[0].Name != "outputs/total.json" {
		t.Fatalf("one-off javascript: %s %+v stdout %q stderr %q files %+v", ex.Status, ex.Error, ex.Stdout, ex.Stderr, ex.Files)
	}
	if got := string(download(t, ex.Files[0].URL)); got != `{"total":6.5}` {
		t.Fatalf("outputs/total.json = %q", got)
	}

	ex = s.run(t, map[string]any{"language": "javascript", "code": "null.x", "timeout_ms": 20000})
	if ex.Status != "failed" || ex.ExitCode == nil || *ex.ExitCode != 1 || ex.Error == nil || ex.Error.Name != "NonZeroExit" ||
		!strings.Contains(ex.Stderr, "TypeError") {
		t.Fatalf("a throwing one-off: %s %+v %v stderr %q", ex.Status, ex.Error, ex.ExitCode, ex.Stderr)
	}
	ex = s.run(t, map[string]any{"language": "javascript", "code": "for (;;) {}", "timeout_ms": 1500})
	if ex.Status != "timed_out" {
		t.Fatalf("a spinning one-off: %s %+v", ex.Status, ex.Error)
	}

	thread := func(language, code string) execution {
		t.Helper()
		return s.run(t, map[string]any{"thread_id": "js-1", "language": language, "code": code})
	}
	if ex = thread("python", "kept = 41\nopen('note.txt', 'w').write('from python')"); ex.Status != "succeeded" {
		t.Fatalf("python on the thread: %s %+v", ex.Status, ex.Error)
	}
	ex = thread("javascript", `const fs = require("fs");
globalThis.counter = 1;
fs.writeFileSync("outputs/js.txt", fs.readFileSync("note.txt", "utf8") + " and node");
console.log(await Promise.resolve("awaited"));`)
	if ex.Status != "succeeded" || ex.Stdout != "awaited\n" || len(ex.Files) != 1 || ex.Files[0].Name != "outputs/js.txt" {
		t.Fatalf("javascript on the thread: %s %+v stdout %q stderr %q files %+v", ex.Status, ex.Error, ex.Stdout, ex.Stderr, ex.Files)
	}
	if ex = thread("javascript", "console.log(typeof globalThis.counter)"); ex.Stdout != "undefined\n" {
		t.Fatalf("JavaScript state kept between runs: %q", ex.Stdout)
	}
	if ex = thread("python", "print(kept + 1, open('outputs/js.txt').read())"); ex.Stdout != "42 from python and node\n" || ex.Sandbox.KernelRestarted {
		t.Fatalf("python after javascript: %q %+v", ex.Stdout, ex.Sandbox)
	}

	cs, err := s.mcpHTTP(t, "key-a", &progress{})
	if err != nil {
		t.Fatal(err)
	}
	if res, mex := runCode(t, cs, "console.log(6 * 7)", map[string]any{"language": "javascript"}); res.IsError || mex.Status != "succeeded" || mex.Stdout != "42\n" {
		t.Fatalf("javascript through MCP: %s %q %+v", mex.Status, mex.Stdout, mex.Error)
	}
}
