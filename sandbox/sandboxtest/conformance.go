// Package sandboxtest pins the behaviour callers rely on from a sandbox runtime, in one
// conformance suite that every implementation (Docker today; gVisor or Kubernetes
// later) must pass, like testing/fstest does for file systems.
package sandboxtest

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// NewFunc creates a sandbox for one subtest and removes it when the test ends.
type NewFunc func(t *testing.T, spec sandbox.Spec) sandbox.Sandbox

// Exercise runs the conformance suite. Subtests run in parallel, each in its own sandbox.
func Exercise(t *testing.T, newSandbox NewFunc) {
	b := bundle{newSandbox: newSandbox}
	for _, tc := range []struct {
		name string
		run  func(*testing.T, bundle)
	}{
		{"Stdout", testStdout},
		{"ExceptionIsAResult", testException},
		{"ExitCodes", testExitCodes},
		{"StateKeptBetweenRuns", testState},
		{"RichResults", testRichResults},
		{"SavedFigure", testSavedFigure},
		{"SlowStream", testSlowStream},
		{"OutputOrder", testOutputOrder},
		{"ManyLines", testManyLines},
		{"LiveOutput", testLiveOutput},
		{"Recyclable/OutputOrder", func(t *testing.T, b bundle) { testOutputOrder(t, b.recyclable()) }},
		{"Timeout", testTimeout},
		{"TimeoutIgnoringInterrupt", testTimeoutIgnored},
		{"Cancel", testCancel},
		{"OutOfMemory", testOOM},
		{"OutputCap", testOutputCap},
		{"NoNetwork", testNoNetwork},
		{"NonRoot", testNonRoot},
		{"ReadOnlyRoot", testReadOnlyRoot},
		{"InputAndOutputFiles", testFiles},
		{"ReadFiles", testReadFiles},
		{"SymlinkNotFollowed", testSymlink},
		{"PathTraversalRejected", testTraversal},
		{"WorkspaceFull", testWorkspaceFull},
		{"ForkBomb", testForkBomb},
		{"PauseResume", testPauseResume},
		{"SnapshotRestore", testSnapshotRestore},
		{"LinkedParentRead", testLinkedParentRead},
		{"LinkedParentWrite", testLinkedParentWrite},
		{"LinkedParentRestore", testLinkedParentRestore},
		{"HostileTree", testHostileTree},
		{"LockedWorkspace", testLockedWorkspace},
		{"NoSurvivors", testNoSurvivors},
		{"BigBash", testBigBash},
		{"ForgedEvents", testForgedEvents},
		{"WipeLeavesNothing", testWipeLeavesNothing},
		{"WipeZombieLeader", testWipeZombieLeader},
		// A one-off's sandbox may take files another way (Docker: through its kernel).
		{"Recyclable/InputAndOutputFiles", func(t *testing.T, b bundle) { testFiles(t, b.recyclable()) }},
		{"Recyclable/PathTraversalRejected", func(t *testing.T, b bundle) { testTraversal(t, b.recyclable()) }},
		{"Recyclable/ReadFiles", func(t *testing.T, b bundle) { testReadFiles(t, b.recyclable()) }},
		{"Recyclable/LinkedParentRead", func(t *testing.T, b bundle) { testLinkedParentRead(t, b.recyclable()) }},
		{"Recyclable/LinkedParentWrite", func(t *testing.T, b bundle) { testLinkedParentWrite(t, b.recyclable()) }},
		{"Recyclable/FileModes", func(t *testing.T, b bundle) { testFileModes(t, b.recyclable()) }},
		{"FileModes", testFileModes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, b)
		})
	}
}

type bundle struct {
	newSandbox NewFunc
	oneOff     bool // sandboxes are recyclable one-off ones, not a thread's
}

// recyclable returns b making recyclable one-off sandboxes (sandbox.Spec.Recyclable).
func (b bundle) recyclable() bundle { b.oneOff = true; return b }

func (b bundle) sandbox(t *testing.T, mods ...func(*sandbox.Spec)) sandbox.Sandbox {
	spec := sandbox.Spec{Tenant: "conformance", Thread: strings.ReplaceAll(t.Name(), "/", "-")}
	if b.oneOff {
		spec.Thread, spec.Recyclable = "", true
	}
	for _, m := range mods {
		m(&spec)
	}
	return b.newSandbox(t, spec)
}

// run runs code and fails the test on a service error.
func run(t *testing.T, sb sandbox.Sandbox, req sandbox.Request) sandbox.Outcome {
	t.Helper()
	if req.ID == "" {
		req.ID = "run-" + time.Now().Format("150405.000000000")
	}
	if req.Timeout == 0 {
		req.Timeout = 30 * time.Second
	}
	out, err := sb.Run(context.Background(), req, nil)
	if err != nil {
		t.Fatalf("Run(%q): %v", req.Code, err)
	}
	return out
}

func py(code string) sandbox.Request { return sandbox.Request{Language: "python", Code: code} }

func wantStatus(t *testing.T, out sandbox.Outcome, want sandbox.Status) {
	t.Helper()
	if out.Status != want {
		t.Fatalf("status = %s, want %s; error=%+v stdout=%q stderr=%q", out.Status, want, out.Error, out.Stdout, out.Stderr)
	}
}

func readAll(t *testing.T, sb sandbox.Sandbox, name string) string {
	t.Helper()
	rc, _, err := sb.OpenFile(context.Background(), name)
	if err != nil {
		t.Fatalf("OpenFile(%s): %v", name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
