package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// opener opens a new MCP session as the tenant of key.
type opener func(t *testing.T, key string, p *progress) (*mcp.ClientSession, error)

func TestMCPStreamableHTTP(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	exerciseMCP(t, s, s.mcpHTTP)
}

func TestMCPStdioBridge(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	bin := buildCLI(t)
	exerciseMCP(t, s, func(t *testing.T, key string, p *progress) (*mcp.ClientSession, error) {
		return s.mcpStdio(t, bin, key, p)
	})
}

// exerciseMCP checks what an agent host sees of codeinterp through one transport.
func exerciseMCP(t *testing.T, s *stack, open opener) {
	p := &progress{}
	cs, err := open(t, "key-a", p)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("tools", func(t *testing.T) {
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{"code_interpreter": true, "upload_file": true, "list_files": true, "read_file": true, "reset": true, "interrupt": true}
		for _, tool := range tools.Tools {
			if tool.InputSchema == nil || tool.OutputSchema == nil || tool.Description == "" {
				t.Errorf("tool %s lacks a schema or a description", tool.Name)
			}
			delete(want, tool.Name)
		}
		if len(want) > 0 {
			t.Fatalf("tools missing: %v", want)
		}
	})

	t.Run("state persists within a session, not across sessions", func(t *testing.T) {
		if res, _ := runCode(t, cs, "x = 41\nprint('set')"); res.IsError || texts(res) != "set\n\n" {
			t.Fatalf("first call: %+v %q", res.IsError, texts(res))
		}
		res, ex := runCode(t, cs, "x + 1")
		if res.IsError || !strings.Contains(texts(res), "42") || ex.Status != "succeeded" || ex.ThreadID == "" {
			t.Fatalf("state lost within the session: %q %+v", texts(res), ex)
		}
		other, err := open(t, "key-a", &progress{})
		if err != nil {
			t.Fatal(err)
		}
		// A Python exception is a tool error carrying the traceback.
		res, ex2 := runCode(t, other, "x + 1")
		if !res.IsError || ex2.Status != "failed" || ex2.Error == nil || ex2.Error.Name != "NameError" ||
			ex2.Error.Traceback == "" || !strings.Contains(texts(res), "NameError") || !strings.Contains(texts(res), "x + 1") {
			t.Fatalf("a new session saw the other's state, or the error lacks its traceback: %q %+v", texts(res), ex2)
		}
		if ex2.ThreadID == ex.ThreadID {
			t.Fatalf("two sessions share thread %s", ex.ThreadID)
		}
	})

	t.Run("a figure is an image, downscaled", func(t *testing.T) {
		res, _ := runCode(t, cs, "import matplotlib.pyplot as plt\nplt.figure(figsize=(20, 10), dpi=100)\nplt.plot([1, 3, 2])\nplt.show()")
		var img *mcp.ImageContent
		for _, c := range res.Content {
			if i, ok := c.(*mcp.ImageContent); ok {
				img = i
			}
		}
		if res.IsError || img == nil || img.MIMEType != "image/png" {
			t.Fatalf("no image: %v %q", res.IsError, texts(res))
		}
		ex := structuredOf[mcpExecution](t, res)
		var orig image.Config
		for _, f := range ex.Files {
			if strings.HasPrefix(f.Name, "outputs/.results/") {
				orig, _ = png.DecodeConfig(bytes.NewReader(download(t, f.URL)))
			}
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(img.Data))
		if orig.Width < 1500 || err != nil || cfg.Width != 1024 || cfg.Height != orig.Height*1024/orig.Width || len(img.Data) > 256<<10 {
			t.Fatalf("image %dx%d, %d bytes (%v); want the %dx%d figure fitted to 1024 pixels wide and 256 KiB",
				cfg.Width, cfg.Height, len(img.Data), err, orig.Width, orig.Height)
		}
	})

	t.Run("an output CSV is a resource link that downloads", func(t *testing.T) {
		res, _ := runCode(t, cs, "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3, 4]}).to_csv('outputs/data.csv', index=False)")
		var link *mcp.ResourceLink
		for _, c := range res.Content {
			if l, ok := c.(*mcp.ResourceLink); ok && l.Name == "outputs/data.csv" {
				link = l
			}
		}
		want := "a,b\n1,3\n2,4\n"
		if res.IsError || link == nil || !strings.HasPrefix(link.MIMEType, "text/csv") || link.Size == nil || *link.Size != int64(len(want)) {
			t.Fatalf("no CSV link: %+v", res.Content)
		}
		if got := string(download(t, link.URI)); got != want {
			t.Fatalf("the link downloads %q, want %q", got, want)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		res, ex := runCode(t, cs, "import time\ntime.sleep(30)", map[string]any{"timeout_s": 1})
		if !res.IsError || ex.Status != "timed_out" || !strings.Contains(texts(res), "timed out") {
			t.Fatalf("timeout: %v %q %+v", res.IsError, texts(res), ex)
		}
		if res, _ := runCode(t, cs, "x"); res.IsError || !strings.Contains(texts(res), "41") {
			t.Fatalf("state lost after a timeout: %q", texts(res))
		}
	})

	t.Run("progress and cancellation", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "code_interpreter", Arguments: map[string]any{"code": "import time\ntime.sleep(2.5)\nprint('done')"}}
		params.SetProgressToken("p1")
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError || !strings.Contains(texts(res), "done") {
			t.Fatalf("call with progress: %v %v", err, res)
		}
		if !p.seen("running for") {
			t.Fatalf("no progress while running: %s", p)
		}

		// Canceling the call cancels the execution.
		ctx, cancel := context.WithCancel(context.Background())
		params = &mcp.CallToolParams{Name: "code_interpreter", Arguments: map[string]any{"code": "import time\ntime.sleep(60)"}}
		params.SetProgressToken("p2")
		errc := make(chan error, 1)
		started := time.Now()
		go func() { _, err := cs.CallTool(ctx, params); errc <- err }()
		before := len(strings.Split(p.String(), "running for"))
		eventually(t, 30*time.Second, "the call runs", func() bool { return len(strings.Split(p.String(), "running for")) > before })
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled call: %v", err)
		}
		var thread string
		_, ex := runCode(t, cs, "print('after')")
		thread = ex.ThreadID
		if ex.Status != "succeeded" || time.Since(started) > 45*time.Second {
			t.Fatalf("the thread did not go on after the cancel: %+v after %s", ex, time.Since(started))
		}
		var list struct {
			Items []execution `json:"items"`
		}
		s.call(t, "GET", "/v1/executions?thread_id="+thread+"&status=canceled", nil, &list)
		if len(list.Items) != 1 {
			t.Fatalf("canceled executions of the thread: %+v", list.Items)
		}
	})
}

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
	})

	t.Run("long output keeps its head and tail", func(t *testing.T) {
		// 1.2 MB: past the worker's inline 1 MiB (the tail comes from stdout.log) and
		// far past the 16 KiB a model is sent.
		res, ex := runCode(t, cs, "for i in range(100000):\n    print(f'line {i:06d}')")
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

func TestMCPTenants(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	a, err := s.mcpHTTP(t, "key-a", &progress{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.mcpHTTP(t, "key-b", &progress{})
	if err != nil {
		t.Fatal(err)
	}
	res, ex := runCode(t, a, "secret = 42\nopen('secret.txt', 'w').write('s3cret')", map[string]any{"thread_id": "shared"})
	if res.IsError {
		t.Fatalf("tenant A: %q", texts(res))
	}
	_, mine := runCode(t, a, "1")

	// The same thread id, and A's session thread, are other threads for B.
	for _, thread := range []string{"shared", mine.ThreadID} {
		if res, ex := runCode(t, b, "secret", map[string]any{"thread_id": thread}); !res.IsError || ex.Error == nil || ex.Error.Name != "NameError" {
			t.Fatalf("tenant B reached A's thread %s: %q", thread, texts(res))
		}
	}
	if res := callTool(t, b, "read_file", map[string]any{"thread_id": "shared", "path": "secret.txt"}); !res.IsError {
		t.Fatalf("tenant B read A's file: %q", texts(res))
	}
	if _, err := b.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "codeinterp://threads/shared/files/secret.txt"}); err == nil {
		t.Fatal("tenant B read A's file as a resource")
	}
	if res := callTool(t, b, "interrupt", map[string]any{"thread_id": ex.ThreadID}); structuredOf[struct{ Interrupted string }](t, res).Interrupted != "" {
		t.Fatal("tenant B interrupted A's thread")
	}

	// A's session is A's: B's key cannot use its id.
	post := func(key, session string) int {
		req, _ := http.NewRequest("POST", s.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("key-b", a.ID()); code != http.StatusForbidden {
		t.Fatalf("tenant B on A's session: %d", code)
	}
	if code := post("key-a", a.ID()); code != http.StatusOK {
		t.Fatalf("tenant A on its session: %d", code)
	}

	// A missing or wrong key is refused.
	for _, key := range []string{"", "wrong-key"} {
		if code := post(key, ""); code != http.StatusUnauthorized {
			t.Fatalf("key %q: %d", key, code)
		}
		if _, err := s.mcpHTTP(t, key, &progress{}); err == nil {
			t.Fatalf("key %q: connected", key)
		}
	}
	bin := buildCLI(t)
	if _, err := s.mcpStdio(t, bin, "wrong-key", &progress{}); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("stdio bridge with a wrong key: %v", err)
	}
}
