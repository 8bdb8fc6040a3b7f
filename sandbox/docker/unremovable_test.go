package docker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/sandbox"
)

// afterDone is Python that runs fn in a thread of the kernel once the current run's
// "done" is on the wire: from then on nothing of the run is left to race with, and
// the thread outlives the run (a run's end kills other processes, not the kernel's
// own threads).
const afterDone = `import sys, threading
_drv = sys.modules["__main__"]
def after_done(fn):
    emit = _drv.emit
    def hooked(**ev):
        emit(**ev)
        if ev.get("ev") == "done":
            _drv.emit = emit
            threading.Thread(target=fn, daemon=True).start()
    _drv.emit = hooked
`

// The code of a thread's sandbox tries to hold the fence's lock, which would make
// every raise of the fence time out (and so Remove, adoption and the janitor's
// reclaim fail): it cannot open it, and Remove removes the sandbox.
func TestDockerFenceLockOutOfReach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := fmt.Sprintf("citest-flock%d", os.Getpid())
	d := newDocker(t, prefix)
	t.Cleanup(func() { removeInstallation(t, prefix) })
	sb, err := d.Create(ctx, sandbox.Spec{Tenant: "acme", Thread: "flock", Fence: 100})
	if err != nil {
		t.Fatal(err)
	}
	// An adoption raises the fence: whatever lock it keeps exists from then on.
	if err := sb.Fence(ctx, 101); err != nil {
		t.Fatal(err)
	}
	// The kernel itself holds what it locked: it lives on between runs.
	out := runCode(t, sb, `import fcntl, json, os
held, locked = [], []
for name in sorted(os.listdir("/run/codeinterp")):
    try:
        fd = os.open("/run/codeinterp/" + name, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        continue
    held.append(fd)
    locked.append(name)
print(json.dumps(locked))`)
	var locked []string
	if err := json.Unmarshal([]byte(out.Stdout), &locked); err != nil {
		t.Fatalf("%v: %q", err, out.Stdout)
	}
	for _, name := range locked {
		if strings.Contains(name, "lock") {
			t.Errorf("the code holds the fence's lock %s", name)
		}
	}
	removeWithin(t, sb, 2*time.Minute)
}

// The code of a thread's sandbox holds every pid between runs, so no exec can start
// in it, the retire before a removal included: Remove removes it all the same.
func TestDockerRemoveWithEveryPidTaken(t *testing.T) {
	t.Parallel()
	if gvisor() {
		t.Skip("under gVisor the code's processes are bounded per uid (RLIMIT_NPROC): the keeper's exec still starts")
	}
	ctx := context.Background()
	prefix := fmt.Sprintf("citest-pids%d", os.Getpid())
	d := newDocker(t, prefix)
	t.Cleanup(func() { removeInstallation(t, prefix) })
	sb, err := d.Create(ctx, sandbox.Spec{Tenant: "acme", Thread: "pids", Fence: 100})
	if err != nil {
		t.Fatal(err)
	}
	runCode(t, sb, afterDone+`import os, signal, time
def hold_every_pid():
    while True:
        try:
            if os.fork() == 0:
                while True:
                    signal.pause()
        except OSError:
            time.sleep(0.05)
after_done(hold_every_pid)`)
	cli := newClient(t)
	eventually(t, time.Minute, "the code to hold every pid", func() bool {
		st, err := cli.ContainerStatsOneShot(ctx, sb.ID())
		if err != nil {
			t.Fatal(err)
		}
		defer st.Body.Close()
		var v container.StatsResponse
		if err := json.NewDecoder(st.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v.PidsStats.Limit > 0 && v.PidsStats.Current >= v.PidsStats.Limit
	})
	removeWithin(t, sb, 2*time.Minute)
}

// removeWithin removes sb and fails the test unless its container is gone.
func removeWithin(t *testing.T, sb sandbox.Sandbox, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := sb.Remove(ctx); err != nil {
		t.Errorf("Remove: %v", err)
	}
	if _, err := newClient(t).ContainerInspect(ctx, sb.ID()); !client.IsErrNotFound(err) {
		t.Fatalf("the container is still there after Remove (inspect: %v)", err)
	}
}

// eventually polls cond until it holds, failing the test after within.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
