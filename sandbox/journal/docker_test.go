package journal_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/docker"
	"github.com/codeinterp/codeinterp/sandbox/journal"
)

// Two workers' journaled Docker runtimes on one engine, under an installation prefix
// of the test's own.
func twoWorkers(t *testing.T, name string) (a, b sandbox.Runtime, paths []string) {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("citest-journal%d-%s", os.Getpid(), name)
	t.Cleanup(func() { removeInstallation(cli, prefix); cli.Close() })
	d := docker.New(cli, docker.Config{
		Image:  cmp.Or(os.Getenv("CODEINTERP_SANDBOX_IMAGE"), "codeinterp/sandbox:latest"),
		Prefix: prefix, Grace: time.Second,
	})
	dir := t.TempDir()
	paths = []string{filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")}
	ja, jb := journal.New(paths[0], "A"), journal.New(paths[1], "B")
	t.Cleanup(func() { ja.Close(); jb.Close() })
	return ja.Runtime(d), jb.Runtime(d), paths
}

func removeInstallation(cli *client.Client, prefix string) {
	ctx := context.Background()
	label := filters.NewArgs(filters.Arg("label", docker.LabelInstall+"="+prefix))
	list, _ := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: label})
	for _, c := range list {
		_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}
	vols, _ := cli.VolumeList(ctx, volume.ListOptions{Filters: label})
	for _, v := range vols.Volumes {
		_ = cli.VolumeRemove(ctx, v.Name, true)
	}
}

func mustRun(t *testing.T, sb sandbox.Sandbox, id, code string) {
	t.Helper()
	out, err := sb.Run(context.Background(), sandbox.Request{ID: id, Code: code, Timeout: time.Minute}, nil)
	if err != nil || out.Status != sandbox.Succeeded {
		t.Fatalf("run %s: %+v %v", id, out, err)
	}
}

// A takes a thread's sandbox under token 100; B takes the thread over under 200. From
// the two journals: A's later steps were refused (fenced), nothing of the two
// overlapped, no token went down: the check passes and counts the refusals.
func TestJournalDockerFencedHandover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ra, rb, paths := twoWorkers(t, "handover")
	spec := sandbox.Spec{Tenant: "acme", Thread: "handover", Fence: 100}
	a, err := ra.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, a, "ex1", "x = 1")
	spec.Fence = 200
	b, err := rb.Find(ctx, spec)
	if err != nil || b == nil {
		t.Fatalf("B's adoption = %v, %v", b, err)
	}
	mustRun(t, b, "ex2", "x = 2")
	// A's kernel is dead (killed by B's adoption): its next run says so or is refused,
	// the one after is refused; its pause is refused.
	var fencedRun error
	for i := 0; i < 2 && fencedRun == nil; i++ {
		_, fencedRun = a.Run(ctx, sandbox.Request{ID: fmt.Sprint("stale", i), Code: "print(x)"}, nil)
	}
	if !errors.Is(fencedRun, sandbox.ErrFenced) {
		t.Fatalf("stale run = %v, want ErrFenced", fencedRun)
	}
	if err := a.Pause(ctx); !errors.Is(err, sandbox.ErrFenced) {
		t.Fatalf("stale pause = %v, want ErrFenced", err)
	}
	a.Release()
	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}

	es, bad, err := journal.ReadFiles(paths...)
	if err != nil || bad != 0 {
		t.Fatal(err, bad)
	}
	r := journal.Check(es)
	if !r.OK() || r.Fenced["run"] != 1 || r.Fenced["pause"] != 1 || r.ByOp["find"] != 1 || r.Workers != 2 {
		t.Fatalf("check of a fenced handover: %s\noverlaps %v\ndrops %v", r.Summary(), r.Overlaps, r.Drops)
	}
}

// The same two workers without tokens (no fence): B adopts the sandbox while A's code
// runs. The journals show it and the check fails — it can.
func TestJournalDockerUnfencedClash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ra, rb, paths := twoWorkers(t, "clash")
	spec := sandbox.Spec{Tenant: "acme", Thread: "clash"}
	a, err := ra.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, a, "warm", "import time")
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(ctx, sandbox.Request{ID: "long", Code: "print('go', flush=True); time.sleep(20)", Timeout: time.Minute},
			func(sandbox.Event) { close(started) })
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("A's run did not start")
	}
	b, err := rb.Find(ctx, spec)
	if err != nil || b == nil {
		t.Fatalf("B's adoption = %v, %v", b, err)
	}
	<-done
	b.Remove(ctx)

	es, _, err := journal.ReadFiles(paths...)
	if err != nil {
		t.Fatal(err)
	}
	r := journal.Check(es)
	if r.OK() || len(r.Overlaps) == 0 || r.Overlaps[0].A.Run != "long" || r.Overlaps[0].B.Op != "find" {
		t.Fatalf("an unfenced clash passed the check: %s\n%v", r.Summary(), r.Overlaps)
	}
}
