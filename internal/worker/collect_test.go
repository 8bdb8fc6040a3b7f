package worker_test

import (
	"math"
	"strings"
	"testing"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// An output whose storage key would be invalid (longer than S3 takes, or with a part
// longer than MinIO takes) is skipped with a note; the run and its other outputs are
// not affected.
func TestCollectSkipsInvalidKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	long := "outputs/" + strings.Repeat("d/", 400) + strings.Repeat("x", 200) // a clean path of 1,008 bytes
	wide := "outputs/" + strings.Repeat("w", 300) + "/f.txt"                  // a part of 300 bytes
	e.fake.RunFunc = func(req sandbox.Request) sandbox.Outcome {
		if req.Code == "collect" {
			return sandbox.Outcome{Outputs: []string{long, "outputs/ok.txt", wide}}
		}
		return sandbox.Outcome{}
	}
	e.start()
	e.run("acme", "t1", "make the sandbox")
	box := e.box("acme", "t1")
	for _, name := range []string{long, "outputs/ok.txt", wide} {
		putFile(t, box, name, "data")
	}
	ex := e.run("acme", "t1", "collect")
	if len(ex.Files) != 1 || ex.Files[0].Name != "outputs/ok.txt" || e.artifact(ex, "outputs/ok.txt") != "data" {
		t.Fatalf("files %+v", ex.Files)
	}
	if len(ex.Notes) != 2 || !strings.Contains(ex.Notes[0], "its storage key would be invalid") ||
		!strings.Contains(ex.Notes[1], "a part of 300 bytes") || len(ex.Notes[0]) > 400 {
		t.Fatalf("notes %q", ex.Notes)
	}
	for _, f := range e.store.keys() {
		if err := jobs.CheckKey(f); err != nil {
			t.Errorf("stored an invalid key: %v", err)
		}
	}
}

// The worker holds what a runtime reports to the contract, whatever the runtime
// checked: the kernel runs in the user's process and can forge any of it.
func TestForgedOutcomeRevalidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.fake.RunFunc = func(req sandbox.Request) sandbox.Outcome {
		if req.Code != "forge" {
			return sandbox.Outcome{}
		}
		notes := make([]string, 50)
		for i := range notes {
			notes[i] = strings.Repeat("n", 10<<10)
		}
		return sandbox.Outcome{
			Status: sandbox.Failed, ExitCode: math.MaxInt64, CPUSeconds: math.NaN(),
			Error: &sandbox.Error{Name: strings.Repeat("N", 10<<10), Value: strings.Repeat("v", 4<<20), Traceback: strings.Repeat("t\xff", 1<<20)},
			// secret.txt is in the workspace but no output: a runtime that passed it on
			// must not make the worker store it.
			Outputs: []string{"secret.txt", "../etc/passwd", "/etc/shadow", "outputs/ok.txt", "outputs/ok.txt", "./outputs/ok.txt"},
			Results: []sandbox.Rich{{Type: "image/png", File: "secret.txt"}, {Type: "application/x-evil", Text: "x"}, {Type: "text/plain", Text: "fine"}},
			Notes:   notes,
		}
	}
	e.start()
	e.run("acme", "t1", "make the sandbox")
	box := e.box("acme", "t1")
	putFile(t, box, "secret.txt", "secret")
	putFile(t, box, "outputs/ok.txt", "ok")
	ex := e.wait(e.submit("acme", "t1", "forge"))
	if ex.Status != jobs.Failed || ex.Error == nil {
		t.Fatalf("status %s error %+v", ex.Status, ex.Error)
	}
	if len(ex.Error.Name) > sandbox.MaxErrorName || len(ex.Error.Value) > sandbox.MaxErrorValue || len(ex.Error.Traceback) > sandbox.MaxTraceback {
		t.Errorf("error kept %d/%d/%d bytes", len(ex.Error.Name), len(ex.Error.Value), len(ex.Error.Traceback))
	}
	if ex.ExitCode == nil || *ex.ExitCode != math.MaxInt32 || ex.CPUMS != nil {
		t.Errorf("exit code %v, cpu_ms %v", ex.ExitCode, ex.CPUMS)
	}
	if len(ex.Files) != 1 || ex.Files[0].Name != "outputs/ok.txt" {
		t.Errorf("files %+v: only outputs/ok.txt may be collected", ex.Files)
	}
	if len(ex.Results) != 1 || ex.Results[0].Text != "fine" {
		t.Errorf("results %+v", ex.Results)
	}
	if len(ex.Notes) > sandbox.MaxNotes+2 || len(strings.Join(ex.Notes, "")) > (sandbox.MaxNotes+2)*sandbox.MaxNote {
		t.Errorf("%d notes of %d bytes", len(ex.Notes), len(strings.Join(ex.Notes, "")))
	}
}

func (s *memStore) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.objs))
	for k := range s.objs {
		out = append(out, k)
	}
	return out
}
