package e2e

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
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
