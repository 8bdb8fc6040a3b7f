package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

type threadView struct {
	ID      string `json:"id"`
	Sandbox string `json:"sandbox"`
	Queued  int    `json:"queued"`
	Files   []struct {
		Name string `json:"name"`
		Size int64  `json:"size"`
	} `json:"files"`
}

// submit posts an execution without waiting for it.
func (s *stack) submit(t *testing.T, key string, req map[string]any) string {
	t.Helper()
	var ex execution
	if code := s.callAs(t, key, "POST", "/v1/executions", req, &ex); code != http.StatusAccepted {
		t.Fatalf("POST: %d", code)
	}
	return ex.ID
}

func TestThreadStateAndRichResults(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	run := func(code string) execution {
		return s.run(t, map[string]any{"thread_id": "chat-1", "code": code})
	}
	first := run("x = 41\nimport pandas as pd")
	if first.Status != "succeeded" || first.Sandbox.Reused {
		t.Fatalf("first: %s %+v reused=%v", first.Status, first.Error, first.Sandbox.Reused)
	}
	second := run("print(x + 1)")
	if second.Stdout != "42\n" || !second.Sandbox.Reused || second.Sandbox.KernelRestarted {
		t.Fatalf("second: %q %+v", second.Stdout, second.Sandbox)
	}
	rich := run("import matplotlib.pyplot as plt\nplt.plot([1, 2])\npd.DataFrame({'a': [1, 2]})")
	types := map[string]string{}
	for _, r := range rich.Results {
		types[r.Type] = r.Text + r.File
	}
	if !strings.Contains(types["text/html"], "<table") || !strings.HasPrefix(types["image/png"], "outputs/.results/") {
		t.Fatalf("results %+v", rich.Results)
	}
	tb := run("def f(n):\n    return 1 / n\n\nf(0)")
	if tb.Status != "failed" || !strings.Contains(tb.Error.Traceback, "line 2, in f") || strings.Contains(tb.Error.Traceback, "driver.py") {
		t.Fatalf("traceback: %+v", tb.Error)
	}
	sh := s.run(t, map[string]any{"thread_id": "chat-1", "language": "bash", "code": "echo hi > note.txt; ls"})
	if sh.Status != "succeeded" || !strings.Contains(sh.Stdout, "note.txt") {
		t.Fatalf("bash: %s %q", sh.Status, sh.Stdout)
	}
	if back := run("print(open('note.txt').read().strip(), x)"); back.Stdout != "hi 41\n" {
		t.Fatalf("python after bash: %q", back.Stdout)
	}
}

// Executions submitted back to back run one at a time in the order accepted.
func TestThreadOrder(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	var ids []string
	for i := range 12 {
		ids = append(ids, s.submit(t, "key-a", map[string]any{"thread_id": "ordered",
			"code": fmt.Sprintf("import time\nwith open('log.txt', 'a') as f:\n    f.write('start %d\\n'); f.flush(); time.sleep(0.01); f.write('end %d\\n')", i, i)}))
	}
	for _, id := range ids {
		if ex := s.wait(t, id); ex.Status != "succeeded" {
			t.Fatalf("%s: %s %+v", id, ex.Status, ex.Error)
		}
	}
	log := s.run(t, map[string]any{"thread_id": "ordered", "code": "print(open('log.txt').read(), end='')"}).Stdout
	var want strings.Builder
	for i := range 12 {
		fmt.Fprintf(&want, "start %d\nend %d\n", i, i)
	}
	if log != want.String() {
		t.Fatalf("log:\n%s", log)
	}
}

func TestThreadTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.run(t, map[string]any{"thread_id": "tc", "code": "state = 'kept'"})

	timedOut := s.run(t, map[string]any{"thread_id": "tc", "code": "while True: pass", "timeout_ms": 500})
	if timedOut.Status != "timed_out" {
		t.Fatalf("timeout: %s", timedOut.Status)
	}
	if ex := s.run(t, map[string]any{"thread_id": "tc", "code": "print(state)"}); ex.Stdout != "kept\n" || ex.Sandbox.KernelRestarted {
		t.Fatalf("after timeout: %q %+v", ex.Stdout, ex.Sandbox)
	}

	// Code that swallows the interrupt: the kernel is restarted, the files stay.
	stubborn := s.run(t, map[string]any{"thread_id": "tc", "timeout_ms": 300,
		"code": "open('file.txt', 'w').write('on disk')\nimport time\nwhile True:\n    try:\n        time.sleep(1)\n    except KeyboardInterrupt:\n        pass"})
	if stubborn.Status != "timed_out" {
		t.Fatalf("stubborn: %s", stubborn.Status)
	}
	after := s.run(t, map[string]any{"thread_id": "tc", "code": "print(open('file.txt').read()); print('state' in globals())"})
	if after.Stdout != "on disk\nFalse\n" || !after.Sandbox.KernelRestarted {
		t.Fatalf("after restart: %q %+v", after.Stdout, after.Sandbox)
	}

	// Cancel a running execution, and one queued behind it, which must never run.
	s.run(t, map[string]any{"thread_id": "tc", "code": "x = 1"})
	running := s.submit(t, "key-a", map[string]any{"thread_id": "tc", "code": "import time\ntime.sleep(60)"})
	queued := s.submit(t, "key-a", map[string]any{"thread_id": "tc", "code": "open('ran.txt', 'w').write('should not')"})
	var cur execution
	if code := s.call(t, "POST", "/v1/executions/"+queued+"/cancel", nil, &cur); code != http.StatusAccepted || cur.Status != "canceled" {
		t.Fatalf("cancel queued: %d %s", code, cur.Status)
	}
	eventually(t, time.Minute, "first execution running", func() bool {
		s.call(t, "GET", "/v1/executions/"+running, nil, &cur)
		return cur.Status == "running"
	})
	if code := s.call(t, "POST", "/v1/executions/"+running+"/cancel", nil, &cur); code != http.StatusAccepted {
		t.Fatalf("cancel running: %d", code)
	}
	if ex := s.wait(t, running); ex.Status != "canceled" {
		t.Fatalf("running after cancel: %s", ex.Status)
	}
	if ex := s.wait(t, queued); ex.Status != "canceled" || ex.StartedAt != nil {
		t.Fatalf("queued after cancel: %s started=%v", ex.Status, ex.StartedAt)
	}
	check := s.run(t, map[string]any{"thread_id": "tc", "code": "import os\nprint(os.path.exists('ran.txt'), x)"})
	if check.Stdout != "False 1\n" {
		t.Fatalf("after cancels: %q %+v", check.Stdout, check.Error)
	}
	var gone map[string]any
	if code := s.callAs(t, "key-b", "POST", "/v1/executions/"+running+"/cancel", nil, &gone); code != http.StatusNotFound {
		t.Fatalf("cancel by another tenant: %d", code)
	}
}

func TestThreadCrossTenant(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	a := s.run(t, map[string]any{"thread_id": "shared-name", "code": "secret = 'acme'\nopen('mine.txt', 'w').write('acme')"})
	if a.Status != "succeeded" {
		t.Fatalf("acme: %s %+v", a.Status, a.Error)
	}
	var b execution
	id := s.submit(t, "key-b", map[string]any{"thread_id": "shared-name", "code": "import os\nprint('secret' in globals(), os.path.exists('mine.txt'))"})
	for b.Status == "" || b.Status == "queued" || b.Status == "running" {
		s.callAs(t, "key-b", "GET", "/v1/executions/"+id+"?wait=30s", nil, &b)
	}
	if b.Stdout != "False False\n" || b.Sandbox.Reused {
		t.Fatalf("globex saw acme's thread: %q reused=%v", b.Stdout, b.Sandbox.Reused)
	}
	var other map[string]any
	if code := s.callAs(t, "key-b", "GET", "/v1/threads/shared-name/files/mine.txt", nil, &other); code != http.StatusNotFound {
		t.Fatalf("globex read acme's file: %d", code)
	}
}

func TestThreadEndpoints(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	var missing map[string]any
	if code := s.call(t, "GET", "/v1/threads/files-1", nil, &missing); code != http.StatusNotFound {
		t.Fatalf("unknown thread: %d", code)
	}
	// PUT a file, in order: the next execution sees it.
	req, _ := http.NewRequest("PUT", s.url+"/v1/threads/files-1/files/data/in.csv", strings.NewReader("a,b\n1,2\n"))
	req.Header.Set("Authorization", "Bearer key-a")
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT: %d", resp.StatusCode)
	}
	ex := s.run(t, map[string]any{"thread_id": "files-1", "code": "import pandas as pd\ndf = pd.read_csv('data/in.csv')\ndf['c'] = df.a + df.b\ndf.to_csv('outputs/out.csv', index=False)\nprint(int(df.c[0]))"})
	if ex.Stdout != "3\n" || len(ex.Files) != 1 || ex.Files[0].Name != "outputs/out.csv" {
		t.Fatalf("run: %q %+v %+v", ex.Stdout, ex.Error, ex.Files)
	}
	// Outputs of a later run: only what it changed.
	ex = s.run(t, map[string]any{"thread_id": "files-1", "code": "open('outputs/more.txt', 'w').write('x')"})
	if len(ex.Files) != 1 || ex.Files[0].Name != "outputs/more.txt" {
		t.Fatalf("second run files %+v", ex.Files)
	}

	var th threadView
	if code := s.call(t, "GET", "/v1/threads/files-1", nil, &th); code != 200 || th.Sandbox != "running" || th.Queued != 0 {
		t.Fatalf("thread: %d %+v", code, th)
	}
	names := map[string]bool{}
	for _, f := range th.Files {
		names[f.Name] = true
	}
	if !names["data/in.csv"] || !names["outputs/out.csv"] || !names["outputs/more.txt"] {
		t.Fatalf("thread files %+v", th.Files)
	}

	// GET a file: a redirect to a presigned URL, or the bytes inline.
	noRedirect := &http.Client{Transport: s.http.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ = http.NewRequest("GET", s.url+"/v1/threads/files-1/files/outputs/out.csv", nil)
	req.Header.Set("Authorization", "Bearer key-a")
	resp, err = noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || string(download(t, resp.Header.Get("Location"))) != "a,b,c\n1,2,3\n" {
		t.Fatalf("GET file: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	req, _ = http.NewRequest("GET", s.url+"/v1/threads/files-1/files/data/in.csv?inline=1", nil)
	req.Header.Set("Authorization", "Bearer key-a")
	resp, err = s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "a,b\n1,2\n" {
		t.Fatalf("inline: %d %q", resp.StatusCode, body)
	}
	if code := s.call(t, "GET", "/v1/threads/files-1/files/nope.txt", nil, &missing); code != http.StatusNotFound {
		t.Fatalf("missing file: %d", code)
	}

	// Listing by thread, newest first, paged.
	var page struct {
		Items      []execution `json:"items"`
		NextCursor string      `json:"next_cursor"`
	}
	if code := s.call(t, "GET", "/v1/executions?thread_id=files-1&limit=1", nil, &page); code != 200 || len(page.Items) != 1 || page.NextCursor == "" || page.Items[0].ID != ex.ID {
		t.Fatalf("list page 1: %d %+v", code, page)
	}
	first := page.Items[0].ID
	if code := s.call(t, "GET", "/v1/executions?thread_id=files-1&limit=5&cursor="+page.NextCursor, nil, &page); code != 200 || len(page.Items) != 1 || page.Items[0].ID == first || page.NextCursor != "" {
		t.Fatalf("list page 2: %d %+v", code, page)
	}

	// DELETE removes sandbox and workspace; the thread can start over.
	req, _ = http.NewRequest("DELETE", s.url+"/v1/threads/files-1", nil)
	req.Header.Set("Authorization", "Bearer key-a")
	resp, err = s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if code := s.call(t, "GET", "/v1/threads/files-1", nil, &missing); code != http.StatusNotFound {
		t.Fatalf("thread after delete: %d", code)
	}
	again := s.run(t, map[string]any{"thread_id": "files-1", "code": "import os\nprint(os.listdir('.'))"})
	if again.Stdout != "['outputs']\n" || again.Sandbox.Reused {
		t.Fatalf("after delete: %q %+v", again.Stdout, again.Sandbox)
	}
}

// Several workers share the threads; each thread still runs in order, in one sandbox.
func TestThreadsAcrossWorkers(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{concurrency: 2})
	s.addWorker()
	s.addWorker()
	const threads, each = 4, 6
	var wg sync.WaitGroup
	ids := make([][]string, threads)
	for th := range threads {
		wg.Go(func() {
			for i := range each {
				ids[th] = append(ids[th], s.submit(t, "key-a", map[string]any{"thread_id": fmt.Sprintf("multi-%d", th),
					"code": fmt.Sprintf("open('log.txt', 'a').write('%d\\n')", i)}))
			}
		})
	}
	wg.Wait()
	for th := range threads {
		for _, id := range ids[th] {
			if ex := s.wait(t, id); ex.Status != "succeeded" {
				t.Fatalf("%s: %s %+v", id, ex.Status, ex.Error)
			}
		}
		log := s.run(t, map[string]any{"thread_id": fmt.Sprintf("multi-%d", th), "code": "print(open('log.txt').read(), end='')"}).Stdout
		if log != "0\n1\n2\n3\n4\n5\n" {
			t.Fatalf("thread %d log:\n%s", th, log)
		}
	}
}
