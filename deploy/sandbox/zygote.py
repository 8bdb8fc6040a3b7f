"""codeinterp zygote: the kernel of a one-off sandbox, which can be wiped and reused.

driver.py runs this when started with CODEINTERP_ZYGOTE=1. The zygote imports what
most code needs once, then forks a child per one-off run: the child is the ordinary
kernel (driver.main) with a fresh interpreter, the libraries already imported, and no
state of any earlier run. The zygote alone reads the worker's requests: it forwards
"exec" and "interrupt" to the child through a pipe and handles "wipe" itself:

  1. every other process of the code's user is killed with kill(-1, SIGKILL), again
     and again until /proc shows none of them alive. kill(-1) reaches every process
     this user may signal, whatever session it moved to and whatever it shows in
     /proc (a process whose main thread exited shows as a zombie while its other
     threads run on), but never the caller, so the zygote lives; the keeper and the
     container's init run as another user, and the pid namespace bounds the rest. A
     process counts as alive while any of its threads is;
  2. /workspace, /tmp (which is $HOME), /dev/shm and /dev/mqueue are emptied, and
     the code user's System V IPC objects removed (ipcrm -a);
  3. each of those is checked to be empty, and that no process of the user came
     back to life meanwhile, and a new child is forked.

It answers {"ev": "wiped", "id", "ok", "reason"}; the worker uses the sandbox again
only after ok. The zygote never runs user code, keeps no environment the code set
(each child starts from the zygote's), and is not dumpable, so the code (same uid)
cannot read or write its memory or descriptors through /proc. The code can still
signal it: a zygote that is killed ends the kernel's stream, and a stopped one never
answers the wipe; either way the worker removes the sandbox instead of reusing it.

If the child ends by itself (the code called os._exit, was killed, ran out of
memory), the zygote exits with the child's status, so the worker sees the kernel end
exactly as it sees an ordinary kernel die.
"""

import ctypes
import gc
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time

PR_SET_DUMPABLE = 4
EMPTIED = ("/workspace", "/tmp", "/dev/shm", "/dev/mqueue")
KILL_FOR = 5.0  # seconds a wipe may spend killing before it gives up


def serve(driver):
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # the requests are read from driver._requests, a duplicate
    os.close(null)
    os.chdir(driver.WORKSPACE)
    driver.prepare_matplotlib()
    driver.preload()
    # Children share the imported heap copy-on-write; the cyclic collector would touch
    # (and so copy) all of it in each child's first collection.
    gc.collect()
    gc.freeze()
    set_dumpable(False)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    child, forward = spawn(driver, (wake_r, wake_w))
    driver.emit(ev="ready", pid=os.getpid(), python=sys.version.split()[0], zygote=True)
    fd, buf = driver._requests.fileno(), b""
    while True:
        ready, _, _ = select.select([fd, wake_r], [], [])
        if wake_r in ready:
            drain(wake_r)
            ended_by_itself(child)
        if fd not in ready:
            continue
        data = os.read(fd, 65536)
        if not data:  # the worker let go of the sandbox
            kill_others()
            os._exit(0)
        buf += data
        while (i := buf.find(b"\n")) >= 0:
            line, buf = buf[: i + 1], buf[i + 1:]
            try:
                req = json.loads(line)
            except ValueError:
                continue
            if isinstance(req, dict) and req.get("op") == "wipe":
                os.close(forward)
                err = wipe(child)
                child, forward = spawn(driver, (wake_r, wake_w))
                driver.emit(ev="wiped", id=req.get("id"), ok=err is None, reason=err)
            else:
                write_all(forward, line)


def spawn(driver, keep_out):
    """Forks the child that runs the next code and waits until it is ready; returns
    its pid and the pipe its requests go to."""
    r, w = os.pipe()
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid != 0:
        os.close(r)
        os.close(ready_w)
        wait_closed(ready_r)
        return pid, w
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in (w, ready_r, *keep_out):
            os.close(fd)
        driver._requests.close()  # the worker's requests are the zygote's alone
        set_dumpable(True)
        driver.main(os.fdopen(r, "rb"), ready_w)  # buffered: see driver._requests
        code = 0
    except BaseException:
        code = 70
    os._exit(code)


def wait_closed(fd):
    """Waits until the child closes its end of the pipe fd: ready, or dead (which
    SIGCHLD then reports)."""
    select.select([fd], [], [], 30)
    os.close(fd)


def ended_by_itself(child):
    try:
        pid, status = os.waitpid(child, os.WNOHANG)
    except ChildProcessError:
        return
    if pid:
        code = os.waitstatus_to_exitcode(status)
        kill_others()
        os._exit(128 - code if code < 0 else code)  # a signal, as a shell reports it


def wipe(child):
    """Leaves nothing of the runs before; returns None, or why it could not."""
    if not kill_others():
        return "processes of the code's user survived %gs of killing" % KILL_FOR
    try:
        os.waitpid(child, 0)
    except ChildProcessError:
        pass
    for d in EMPTIED:
        empty(d)
    remove_ipc()
    for d in EMPTIED:
        if os.path.isdir(d) and os.listdir(d):
            return "%s could not be emptied" % d
    if remove_ipc() or leftover_ipc():
        return "System V IPC objects survived"
    if others_alive(os.getpid(), os.getuid()):
        return "a process of the code's user came back during the wipe"
    os.chmod("/workspace", 0o700)
    os.chdir("/workspace")
    return None


def kill_others():
    """SIGKILLs every process of this user but this one until none is left alive;
    False if some still run after KILL_FOR seconds."""
    me, uid = os.getpid(), os.getuid()
    deadline = time.monotonic() + KILL_FOR
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:  # ESRCH: nothing else this user may signal
            pass
        reap()
        if not others_alive(me, uid):
            return True
        if time.monotonic() > deadline:
            return False


def others_alive(me, uid):
    """Whether a process of this user, other than me, has a thread still alive. By the
    real uid in status: a process that made itself non-dumpable has a /proc directory
    owned by root. By each thread's state: a process whose main thread exited shows
    that thread's, a zombie's, while the others run."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open("/proc/%s/status" % entry, "rb") as f:
                status = f.read()
            uids = [ln.split()[1] for ln in status.splitlines() if ln.startswith(b"Uid:")]
            if not uids or int(uids[0]) != uid:
                continue
            tasks = os.listdir("/proc/%s/task" % entry)
        except (OSError, IndexError, ValueError):
            continue
        for task in tasks:
            try:
                with open("/proc/%s/task/%s/stat" % (entry, task), "rb") as f:
                    state = f.read().rsplit(b")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state not in (b"Z", b"X"):
                return True
    return False


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def empty(d):
    """Removes everything in d (which stays). A tree too deep for shutil, or one the
    code made unwritable, is left to find(1), which walks without recursion."""
    try:
        os.chmod(d, 0o1777 if d != "/workspace" else 0o700)
    except OSError:
        pass
    try:
        entries = list(os.scandir(d))
    except OSError:
        return
    try:
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path, onerror=writable_retry)
            else:
                os.unlink(e.path)
    except (OSError, RecursionError):
        subprocess.run(["chmod", "-R", "u+rwx", "--", d], stdin=subprocess.DEVNULL, capture_output=True)
        subprocess.run(["find", d, "-mindepth", "1", "-delete"], stdin=subprocess.DEVNULL, capture_output=True)


def writable_retry(fn, path, _):
    """rmtree's error handler: a directory the code made read-only is made writable."""
    os.chmod(os.path.dirname(path), 0o700)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, 0o700)
        shutil.rmtree(path)
    else:
        fn(path)


# System V IPC, by the kernel's own enumeration: ctl(0, INFO) gives the highest index
# in use, ctl(index, STAT) the object's id. gVisor (2022-12) numbers objects from 1 but
# answers SHM_INFO with 0, SHM_STAT with 0 instead of the id (its ids are its
# indices), and has no /proc/sysvipc (so ipcrm -a misses them): a few indices past the
# highest are tried, and the index is removed as an id too. (On Linux that is
# harmless: an index is the id of the object there or of none.)
IPC_RMID = 0
IPC_KINDS = (  # (ctl function, INFO, STAT)
    ("shmctl", 14, 13),
    ("semctl", 19, 18),
    ("msgctl", 12, 11),
)
IPC_SLACK = 64


def remove_ipc():
    """Removes every System V IPC object this user may remove; returns how many it found."""
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(1024)
    found = 0
    for name, info, stat in IPC_KINDS:
        ctl = getattr(libc, name)
        call = (lambda i, cmd, b: ctl(i, 0, cmd, b)) if name == "semctl" else (lambda i, cmd, b: ctl(i, cmd, b))
        highest = call(0, info, buf)
        for idx in range(max(highest, 0) + IPC_SLACK):
            oid = call(idx, stat, buf)
            if oid >= 0:
                found += 1
                call(oid, IPC_RMID, None)
                if oid != idx:
                    call(idx, IPC_RMID, None)
    return found


def leftover_ipc():
    """What /proc/sysvipc still lists, where there is one (not under gVisor, whose
    SHM_INFO count also stays stale after a removal: the enumeration that finds
    nothing is the check there)."""
    for kind in ("shm", "sem", "msg"):
        try:
            with open("/proc/sysvipc/" + kind) as f:
                if len(f.read().splitlines()) > 1:
                    return True
        except OSError:
            pass
    return False


def drain(fd):
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def write_all(fd, data):
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError:  # the child is gone: its end is reported by SIGCHLD
        pass


def set_dumpable(on):
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 1 if on else 0, 0, 0, 0)
    except OSError:
        pass
