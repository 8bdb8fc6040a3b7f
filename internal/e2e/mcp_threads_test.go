package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMCPThreadTools(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	p := &progress{}
	cs, err := s.mcpHTTP(t, "key-a", p)
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

	t.Run("files", func(t *testing.T) {
		// Input files of a call, and uploads.
		res, ex := runCode(t, cs, "print(open('in/a.txt').read())", map[string]any{"files": []map[string]any{{"name": "in/a.txt", "content_base64": b64("from files")}}})
		if res.IsError || ex.Stdout != "from files\n" {
			t.Fatalf("input file: %q", texts(res))
		}
		for i := range 3 {
			res := callTool(t, cs, "upload_file", map[string]any{"name": fmt.Sprintf("in/up%d.txt", i), "content_base64": b64(fmt.Sprint("upload ", i))})
			if res.IsError {
				t.Fatalf("upload: %q", texts(res))
			}
		}
		if res, ex := runCode(t, cs, "print(open('in/up2.txt').read())"); ex.Stdout != "upload 2\n" {
			t.Fatalf("uploaded file not seen by the code: %q", texts(res))
		}
		type listing struct {
			Files []struct {
				Name, URI string
				Size      int64
			}
			Truncated bool
		}
		l := structuredOf[listing](t, callTool(t, cs, "list_files", map[string]any{"path": "in"}))
		if len(l.Files) != 4 || l.Truncated {
			t.Fatalf("list in/: %+v", l)
		}
		l = structuredOf[listing](t, callTool(t, cs, "list_files", map[string]any{"path": "in", "max_entries": 2}))
		if len(l.Files) != 2 || !l.Truncated {
			t.Fatalf("list with max_entries 2: %+v", l)
		}

		// Small text inline; binary (or large) as a link that downloads the bytes.
		res = callTool(t, cs, "read_file", map[string]any{"path": "in/up1.txt"})
		if res.IsError || texts(res) != "upload 1\n" {
			t.Fatalf("read_file text: %q", texts(res))
		}
		runCode(t, cs, "open('outputs/blob.bin', 'wb').write(bytes(range(256)) * 1000)")
		res = callTool(t, cs, "read_file", map[string]any{"path": "outputs/blob.bin"})
		link, ok := res.Content[0].(*mcp.ResourceLink)
		if res.IsError || !ok || *link.Size != 256000 {
			t.Fatalf("read_file binary: %+v", res.Content)
		}
		if got := download(t, link.URI); len(got) != 256000 || got[255] != 255 {
			t.Fatalf("downloaded %d bytes", len(got))
		}
		if res := callTool(t, cs, "read_file", map[string]any{"path": "no/such.txt"}); !res.IsError || !strings.Contains(texts(res), "not_found") {
			t.Fatalf("read_file of a missing file: %v %q", res.IsError, texts(res))
		}

		// The workspace as resources.
		uri := "codeinterp://threads/" + ex.ThreadID + "/files/in/a.txt"
		for _, f := range l.Files {
			if !strings.HasPrefix(f.URI, "codeinterp://threads/"+ex.ThreadID+"/files/in/") {
				t.Fatalf("listed file %s has URI %s", f.Name, f.URI)
			}
		}
		rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "from files" {
			t.Fatalf("resource %s: %+v %v", uri, rr, err)
		}
		if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "codeinterp://threads/" + ex.ThreadID + "/files/nope"}); err == nil {
			t.Fatal("a missing file read as a resource")
		}
		lr, err := cs.ListResources(context.Background(), nil)
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		listed := map[string]bool{}
		for _, r := range lr.Resources {
			listed[r.URI] = true
		}
		if !listed[uri] || !listed["codeinterp://threads/"+ex.ThreadID+"/files/in/up2.txt"] {
			t.Fatalf("resources/list: %d resources; want the session thread's files, %s among them", len(lr.Resources), uri)
		}
	})

	t.Run("long output keeps its head and tail", func(t *testing.T) {
		// 1.2 MB: past the worker's inline 1 MiB (the tail comes from stdout.log) and
		// far past the 16 KiB a model is sent.
		// A timeout sized to the work: printing takes ~0.5 s under runc, a few under
		// gVisor on a busy host (it took 21 s there when each line was a system call).
		res, ex := runCode(t, cs, "for i in range(100000):\n    print(f'line {i:06d}')", map[string]any{"timeout_s": 120})
		text := texts(res)
		if res.IsError || !strings.HasPrefix(text, "line 000000\n") || !strings.HasSuffix(text, "line 099999\n\n") ||
			!strings.Contains(text, "bytes left out; the whole output is the file stdout.log (http") || len(text) > 17<<10 {
			t.Fatalf("clipped output (%d bytes): %.200q … %.200q", len(text), text, text[max(len(text)-200, 0):])
		}
		if !ex.StdoutTruncated || len(ex.Stdout) != 1<<20 {
			t.Fatalf("structured stdout: %d bytes, truncated %v; want the record's 1 MiB head", len(ex.Stdout), ex.StdoutTruncated)
		}
	})

	t.Run("hostile arguments are tool errors", func(t *testing.T) {
		_, ex := runCode(t, cs, "1")
		for _, c := range []struct {
			tool string
			args map[string]any
			want string
		}{
			{"read_file", map[string]any{"path": "../../etc/passwd"}, "invalid_argument: path"},
			{"read_file", map[string]any{"path": "/etc/passwd"}, "invalid_argument: path"},
			{"upload_file", map[string]any{"name": "../escape.txt", "content_base64": b64("x")}, "invalid_argument: name"},
			{"read_file", map[string]any{"path": "a.txt", "thread_id": "bad/id"}, "invalid_argument: thread_id"},
			{"upload_file", map[string]any{"name": "ok.txt", "content_base64": "!!!"}, "invalid_argument: content_base64"},
			{"list_files", map[string]any{"path": "../.."}, "invalid_argument: path"},
			{"list_files", map[string]any{"max_entries": 5000}, "invalid_argument: max_entries"},
			{"code_interpreter", map[string]any{"code": "1", "files": []map[string]any{{"name": "/etc/passwd", "content_base64": b64("x")}}}, "invalid_argument: files[0].name"},
			{"code_interpreter", map[string]any{"code": "1", "language": "ruby"}, "language"},
			{"code_interpreter", map[string]any{"code": "1", "timeout_s": 100000}, "invalid_argument: timeout_s"},
			{"code_interpreter", map[string]any{"code": "1", "timeout_s": 1e300}, "invalid_argument: timeout_s"},
			{"code_interpreter", map[string]any{"code": "1", "thread_id": "../other"}, "invalid_argument: thread_id"},
		} {
			if res := callTool(t, cs, c.tool, c.args); !res.IsError || !strings.Contains(texts(res), c.want) {
				t.Errorf("%s %v: %v %q, want a tool error naming %q", c.tool, c.args, res.IsError, texts(res), c.want)
			}
		}
		for _, uri := range []string{"codeinterp://threads/" + ex.ThreadID + "/files/../../etc/passwd", "codeinterp://threads/../files/x", "file:///etc/passwd"} {
			if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri}); err == nil {
				t.Errorf("resource %s was read", uri)
			}
		}
	})

	t.Run("reset keeps files, drops state", func(t *testing.T) {
		runCode(t, cs, "y = 7\nopen('keep.txt', 'w').write('kept')")
		if res := callTool(t, cs, "reset", nil); res.IsError || !structuredOf[struct{ Reset bool }](t, res).Reset {
			t.Fatalf("reset: %q", texts(res))
		}
		res, ex := runCode(t, cs, "print(open('keep.txt').read())\ny")
		if !res.IsError || ex.Stdout != "kept\n" || ex.Error == nil || ex.Error.Name != "NameError" {
			t.Fatalf("after reset: %q %+v", texts(res), ex)
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "code_interpreter", Arguments: map[string]any{"code": "import time\ntime.sleep(60)"}}
		params.SetProgressToken("long")
		done := make(chan *mcp.CallToolResult, 1)
		before := strings.Count(p.String(), "running for")
		go func() {
			res, err := cs.CallTool(context.Background(), params)
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		eventually(t, 30*time.Second, "the code runs", func() bool { return strings.Count(p.String(), "running for") > before })
		res := callTool(t, cs, "interrupt", nil)
		if res.IsError || structuredOf[struct{ Interrupted string }](t, res).Interrupted == "" {
			t.Fatalf("interrupt: %q", texts(res))
		}
		select {
		case res := <-done:
			if res == nil || !res.IsError || structuredOf[mcpExecution](t, res).Status != "canceled" {
				t.Fatalf("interrupted call: %+v", res)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the interrupted call did not end")
		}
		if res := callTool(t, cs, "interrupt", nil); structuredOf[struct{ Interrupted string }](t, res).Interrupted != "" {
			t.Fatalf("interrupt with nothing running: %q", texts(res))
		}
	})

	t.Run("progress says the queue position", func(t *testing.T) {
		_, ex := runCode(t, cs, "1")
		var blocker execution
		if code := s.call(t, "POST", "/v1/executions", map[string]any{"thread_id": ex.ThreadID, "code": "import time\ntime.sleep(3)"}, &blocker); code != http.StatusAccepted {
			t.Fatalf("POST: %d", code)
		}
		params := &mcp.CallToolParams{Name: "code_interpreter", Arguments: map[string]any{"code": "print('after the blocker')"}}
		params.SetProgressToken("queued")
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError || !strings.Contains(texts(res), "after the blocker") {
			t.Fatalf("queued call: %v %v", err, res)
		}
		if !p.seen("queue position 1") {
			t.Fatalf("no queue position in the progress: %s", p)
		}
	})
}
