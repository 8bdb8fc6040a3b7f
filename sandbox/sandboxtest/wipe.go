package sandboxtest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/codeinterp/codeinterp/sandbox"
)

// LeaveEverything is a one-off that leaves behind all it can: files in the
// workspace, /tmp, $HOME and /dev/shm, environment variables, a patched module, a
// background process in a session of its own, listening unix sockets (a file and an
// abstract one), System V shared memory it wrote to, and another working directory.
// It prints the sandbox's host name. See [WantNothingLeft].
const LeaveEverything = `import ctypes, math, os, socket, subprocess, sys
open("/workspace/left.txt", "w").write("left")
open("/tmp/left.txt", "w").write("left")
os.makedirs(os.path.expanduser("~/.config"), exist_ok=True)
open(os.path.expanduser("~/.config/left.txt"), "w").write("left")
open("/dev/shm/left", "w").write("left")
os.environ["LEFT_BEHIND"] = "1"
math.pi = 3
sys.modules["left_module"] = math
listener = socket.socket(socket.AF_UNIX)
listener.bind("/workspace/left.sock")
listener.listen()
subprocess.Popen(["setsid", "python3", "-c", "import socket, time\n"
    "s = socket.socket(socket.AF_UNIX); s.bind('\\0codeinterp-left'); s.listen(); time.sleep(1000)"])
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shm = libc.shmget(0x1e47, 4096, 0o1600)
ctypes.memmove(libc.shmat(shm, None, 0), b"left", 4)
os.makedirs("/tmp/elsewhere", exist_ok=True)
os.chdir("/tmp/elsewhere")
print(socket.gethostname())`

// LookAround reports, as JSON, what code run after [LeaveEverything] can see of it.
const LookAround = `import ctypes, json, math, os, socket, sys
def ls(d):
    return sorted(os.listdir(d)) if os.path.isdir(d) else []
procs = []
for p in os.listdir("/proc"):
    if p.isdigit() and int(p) != os.getpid():
        try:
            if "\nUid:\t%d\t" % os.getuid() not in open("/proc/%s/status" % p).read():
                continue  # the keeper: another user
            procs.append(open("/proc/%s/cmdline" % p, "rb").read().replace(b"\0", b" ").decode())
        except OSError:
            pass
try:
    c = socket.socket(socket.AF_UNIX); c.connect("\0codeinterp-left"); abstract = True
except OSError:
    abstract = False
print(json.dumps({
    "workspace": [f for f in ls("/workspace") if f != "outputs"] + ls("/workspace/outputs"),
    "tmp": [f for f in ls("/tmp") if f != "matplotlib"], "home": os.path.expanduser("~"),
    "shm_dir": ls("/dev/shm"), "env": os.environ.get("LEFT_BEHIND"), "pi": math.pi,
    "module": "left_module" in sys.modules, "cwd": os.getcwd(), "abstract": abstract,
    "shm": ctypes.CDLL(None).shmget(0x1e47, 0, 0), "sleepers": [p for p in procs if "codeinterp-left" in p or "sleep" in p],
    "pandas": "pandas" in sys.modules, "host": socket.gethostname(),
}))`

// A recyclable sandbox after Wipe: the next run sees nothing of the one before, and
// still has its libraries imported.
func testWipeLeavesNothing(t *testing.T, b bundle) {
	sb := b.sandbox(t, func(s *sandbox.Spec) { s.Thread, s.Recyclable = "", true })
	out := run(t, sb, py(LeaveEverything))
	wantStatus(t, out, sandbox.Succeeded)
	if err := sb.Wipe(context.Background()); err != nil {
		t.Fatalf("Wipe: %v", err)
	}
	out = run(t, sb, py(LookAround))
	wantStatus(t, out, sandbox.Succeeded)
	WantNothingLeft(t, out.Stdout)
	if len(out.Workspace) != 0 {
		t.Fatalf("workspace listing after the wipe: %+v", out.Workspace)
	}
}

// WantNothingLeft fails the test unless stdout, what [LookAround] printed, shows
// nothing of what [LeaveEverything] left, and the libraries still imported. It
// returns the host name LookAround ran on.
func WantNothingLeft(t testing.TB, stdout string) string {
	t.Helper()
	var seen struct {
		Workspace []string `json:"workspace"`
		Tmp       []string `json:"tmp"`
		ShmDir    []string `json:"shm_dir"`
		Sleepers  []string `json:"sleepers"`
		Home      string   `json:"home"`
		Env       string   `json:"env"`
		Cwd       string   `json:"cwd"`
		Pi        float64  `json:"pi"`
		Module    bool     `json:"module"`
		Abstract  bool     `json:"abstract"`
		Pandas    bool     `json:"pandas"`
		Shm       int      `json:"shm"`
		Host      string   `json:"host"`
	}
	if err := json.Unmarshal([]byte(stdout), &seen); err != nil {
		t.Fatalf("%v: %q", err, stdout)
	}
	if len(seen.Workspace) > 0 || len(seen.Tmp) > 0 || len(seen.ShmDir) > 0 || len(seen.Sleepers) > 0 ||
		seen.Env != "" || seen.Pi < 3.14 || seen.Module || seen.Cwd != "/workspace" || seen.Abstract || seen.Shm != -1 {
		t.Fatalf("the run after the wipe sees what the one before left: %s", stdout)
	}
	if seen.Home != "/tmp" || !seen.Pandas {
		t.Fatalf("after the wipe: home %q, pandas imported %v; want /tmp and true", seen.Home, seen.Pandas)
	}
	return seen.Host
}

// leaveZombieLeader is a one-off that leaves a process whose main thread has exited
// (it shows as a zombie in /proc) while another of its threads runs on, holding a
// secret it hands to whoever connects to its abstract unix socket. It prints whether
// the secret is served and the state of the process's main thread.
const leaveZombieLeader = `import json, socket, subprocess, time
p = subprocess.Popen(["setsid", "python3", "-c", """
import ctypes, socket, threading
def hold():
    s = socket.socket(socket.AF_UNIX)
    s.bind("\\0codeinterp-zombie")
    s.listen()
    while True:
        c, _ = s.accept()
        c.sendall(b"secret")
        c.close()
threading.Thread(target=hold).start()
ctypes.CDLL(None).pthread_exit(None)
"""])
def secret():
    try:
        c = socket.socket(socket.AF_UNIX)
        c.connect("\0codeinterp-zombie")
        return c.recv(16).decode()
    except OSError:
        return ""
def state():
    try:
        return open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
deadline = time.monotonic() + 30
while time.monotonic() < deadline and not (secret() and state() == "Z"):
    time.sleep(0.05)
print(json.dumps({"secret": secret(), "leader": state()}))`

// lookForSurvivors reports, as JSON, the processes of the code's user other than this
// kernel and its parent (a zygote) that have a task still alive, and what the
// socket of [leaveZombieLeader] serves.
const lookForSurvivors = `import json, os, socket
me, parent, uid = os.getpid(), os.getppid(), os.getuid()
alive = []
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) in (me, parent):
        continue
    try:
        if "\nUid:\t%d\t" % uid not in open("/proc/%s/status" % p).read():
            continue
        states = [open("/proc/%s/task/%s/stat" % (p, t)).read().rsplit(")", 1)[1].split()[0]
                  for t in os.listdir("/proc/%s/task" % p)]
    except OSError:
        continue
    if any(s not in ("Z", "X") for s in states):
        alive.append("%s: %s" % (p, " ".join(states)))
try:
    c = socket.socket(socket.AF_UNIX)
    c.connect("\0codeinterp-zombie")
    secret = c.recv(16).decode()
except OSError:
    secret = ""
print(json.dumps({"alive": alive, "secret": secret}))`

// A process whose main thread exited while another thread runs on (a zombie leader)
// does not survive a wipe: the next one-off of the tenant finds nothing of it alive.
func testWipeZombieLeader(t *testing.T, b bundle) {
	sb := b.sandbox(t, func(s *sandbox.Spec) { s.Thread, s.Recyclable = "", true })
	out := run(t, sb, py(leaveZombieLeader))
	wantStatus(t, out, sandbox.Succeeded)
	var left struct{ Secret, Leader string }
	if err := json.Unmarshal([]byte(out.Stdout), &left); err != nil || left.Secret != "secret" {
		t.Fatalf("the zombie-led process did not start: %q (%v)", out.Stdout, err)
	}
	t.Logf("its main thread's state: %s", left.Leader)
	if err := sb.Wipe(context.Background()); err != nil {
		t.Fatalf("Wipe: %v", err)
	}
	out = run(t, sb, py(lookForSurvivors))
	wantStatus(t, out, sandbox.Succeeded)
	var seen struct {
		Alive  []string
		Secret string
	}
	if err := json.Unmarshal([]byte(out.Stdout), &seen); err != nil {
		t.Fatalf("%v: %q", err, out.Stdout)
	}
	if len(seen.Alive) > 0 || seen.Secret != "" {
		t.Fatalf("after the wipe, processes of the code's user still run: %q, secret served %q", seen.Alive, seen.Secret)
	}
}
