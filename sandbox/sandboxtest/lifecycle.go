package sandboxtest

import (
	"context"
	"testing"

	"github.com/codeinterp/codeinterp/sandbox"
)

func testPauseResume(t *testing.T, b bundle) {
	ctx := context.Background()
	sb := b.sandbox(t)
	run(t, sb, py("x = 'kept'"))
	if err := sb.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if resumed, err := sb.Resume(ctx); err != nil || !resumed {
		t.Fatalf("Resume = %v, %v; want true", resumed, err)
	}
	// Back-to-back cycles, as a worker's idle pause can follow a resume for a file
	// read: the engine's own record of the state must not trip them up.
	for i := range 10 {
		if err := sb.Pause(ctx); err != nil {
			t.Fatalf("pause %d: %v", i, err)
		}
		if resumed, err := sb.Resume(ctx); err != nil || !resumed {
			t.Fatalf("resume %d = %v, %v; want true", i, resumed, err)
		}
	}
	if err := sb.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	// A run resumes a paused sandbox by itself; state survives the pause.
	if out := run(t, sb, py("print(x)")); out.Stdout != "kept\n" || out.KernelRestarted {
		t.Fatalf("after pause: %q restarted=%v", out.Stdout, out.KernelRestarted)
	}
	if resumed, err := sb.Resume(ctx); err != nil || resumed {
		t.Fatalf("Resume of a running sandbox = %v, %v; want false", resumed, err)
	}
}

func testSnapshotRestore(t *testing.T, b bundle) {
	ctx := context.Background()
	src := b.sandbox(t)
	run(t, src, py(`import os
os.makedirs("data/deep", exist_ok=True)
open("data/deep/a.txt", "w").write("alpha")
open("b.bin", "wb").write(bytes(range(256)) * 100)
os.symlink("data/deep/a.txt", "link")`))
	rc, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	dst := b.sandbox(t, func(s *sandbox.Spec) { s.Thread += "-restored" })
	if err := dst.Restore(ctx, rc); err != nil {
		t.Fatal(err)
	}
	out := run(t, dst, py(`import os
print(open("data/deep/a.txt").read(), len(open("b.bin", "rb").read()), os.readlink("link"))
open("data/deep/a.txt", "a").write("+")  # restored files belong to the code's user
print(sorted(os.listdir(".")))`))
	if out.Stdout != "alpha 25600 data/deep/a.txt\n['b.bin', 'data', 'link', 'outputs']\n" {
		t.Fatalf("restored workspace: %q %+v", out.Stdout, out.Error)
	}
}
