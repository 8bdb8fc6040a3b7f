"""codeinterp kernel driver: a long-lived Python process that runs code sent by the worker.

The worker starts it with `docker exec -i` and speaks JSON lines with it: one request per
line on stdin, one event per line on the original stdout. The user's code runs in this
process, in one persistent namespace, so state survives between executions.

Requests:  {"op": "exec", "id", "language": "python"|"bash"|"javascript", "code", "env": {}}
           {"op": "interrupt", "id"}
           {"op": "put", "id", "tar": base64}         (a one-off's inputs, before its code)
           {"op": "get", "id", "names", "each", "total", "max"}  (a one-off's outputs, after)
           {"op": "wipe", "id"}                      (zygote mode only: see zygote.py)
Events:    {"ev": "ready", "pid", "python"}
           {"ev": "stream", "id", "name": "stdout"|"stderr", "text"}
           {"ev": "result", "id", "type": "text/plain"|"text/html"|"image/png", "text"|"file"}
           {"ev": "done", "id", "status": "ok"|"error", "exit_code", "error", "outputs",
            "workspace": [[path, size, mtime_ms], ...], "skipped": {reason: count}, "cpu_ms"}
           {"ev": "put", "id", "ok", "written", "failed", "errors", "reason"}
           {"ev": "got", "id", "ok", "tar": base64, "reason"}
           {"ev": "wiped", "id", "ok", "reason"}    (zygote mode only)

cpu_ms is the CPU time (user + system) the run used: this process's and that of the
children it waited for (bash, node, subprocesses, killed strays), for usage accounting.
The workspace is walked by fsop.Walk (never following a link, bounded, with no
recursion); "skipped" counts the entries it left out (see fsop.py).

After every run each other process of the code's user is killed, whatever session or
process group it moved to: nothing a run started outlives it.

Everything the code writes to file descriptors 1 and 2 (print, C extensions, subprocesses)
is captured through pipes and streamed; sys.stdout and sys.stderr are block-buffered and
written out at least every 20 ms while code runs (capture.py says when and in which
order). The worker treats every event as untrusted: the
user's code runs in this same process and can forge any of them.
"""

import ast
import builtins
import json
import linecache
import os
import queue
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback

import capture
import codeinterp_hooks
import fsop

WORKSPACE = "/workspace"
OUTPUTS = os.path.join(WORKSPACE, "outputs")
RESULTS = os.path.join(OUTPUTS, ".results")
MAX_TEXT = 1 << 20  # largest text/plain or text/html result kept

# The protocol channels are private duplicates of the original descriptors; the user's
# code gets /dev/null as stdin and capture pipes as stdout and stderr.
_proto = os.fdopen(os.dup(1), "wb", buffering=0)
# Buffered: read_requests reads whole lines, and an unbuffered file reads a line one
# byte (one system call) at a time, ~1 ms per KiB of code or inputs (more under gVisor).
# The zygote reads the descriptor itself, with os.read, never through this buffer.
_requests = os.fdopen(os.dup(0), "rb")
_emit_lock = threading.Lock()


def emit(**event):
    line = json.dumps(event, ensure_ascii=False, default=str).encode("utf-8", "replace") + b"\n"
    with _emit_lock:
        # A raw write may be short (gVisor's pipes return after part of a large one):
        # write the rest, or the line arrives cut and is dropped as garbage.
        view = memoryview(line)
        while view:
            view = view[_proto.write(view):]


class State:
    zygote_child = False  # forked by zygote.py: the zygote, not this process, kills strays
    current = None  # id of the running execution
    in_user_code = False
    interrupt = None  # id of the execution the worker asked to interrupt
    child = None  # running bash process
    cell = 0


def stream_event(name, text):
    """Emits what the code wrote to stdout or stderr (capture.Pump's output)."""
    exec_id = State.current
    if exec_id is not None:
        emit(ev="stream", id=exec_id, name=name, text=text)


def with_root(fn):
    """Calls fn with a descriptor of the workspace."""
    root = fsop.open_root()
    try:
        return fn(root)
    finally:
        os.close(root)


# ---- rich results ---------------------------------------------------------------

class Results:
    def __init__(self, exec_id):
        self.id, self.images = exec_id, 0

    def text(self, mime, text):
        if len(text) > MAX_TEXT:
            text = text[:MAX_TEXT] + "\n[truncated]"
        emit(ev="result", id=self.id, type=mime, text=text)

    def png(self, write):
        self.images += 1
        os.makedirs(RESULTS, exist_ok=True)  # fails (and the figure is not saved) if the code put a file there
        path = os.path.join(RESULTS, "%d.png" % self.images)
        write(path)
        emit(ev="result", id=self.id, type="image/png", file=os.path.relpath(path, WORKSPACE))

    def figures(self):
        """Saves and closes every open pyplot figure, as a notebook's inline backend does."""
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        for num in plt.get_fignums():
            fig = plt.figure(num)
            try:
                self.png(lambda p: _save_png(fig, p))
            except Exception as e:
                print("codeinterp: could not save figure %s: %s" % (num, e), file=sys.stderr)
            plt.close(fig)

    def display(self, value):
        fig_type = getattr(sys.modules.get("matplotlib.figure"), "Figure", None)
        if fig_type is not None and isinstance(value, fig_type):
            self.png(lambda p: _save_png(value, p))
            return
        png = _call_repr(value, "_repr_png_")
        if isinstance(png, bytes):
            self.png(lambda p: open(p, "wb").write(png))
        self.text("text/plain", _safe_repr(value))
        html = _call_repr(value, "_repr_html_")
        if isinstance(html, str):
            self.text("text/html", html)


def _save_png(fig, path):
    """Saves fig as a PNG at path: the bytes of the code's own savefig when the figure
    has not changed since (codeinterp_mpl), else a new render."""
    saved = getattr(fig.canvas, "saved_png", None)
    png = saved() if callable(saved) else None
    if png is None:
        fig.savefig(path, format="png")
        return
    with open(path, "wb") as f:
        f.write(png)


def _call_repr(value, name):
    if isinstance(value, type):
        return None
    try:
        fn = getattr(value, name, None)
        return fn() if callable(fn) else None
    except Exception:
        return None


def _safe_repr(value):
    try:
        return repr(value)
    except Exception as e:
        return "<repr failed: %s>" % e


# ---- running code ---------------------------------------------------------------

NAMESPACE = {"__name__": "__main__", "__builtins__": builtins}


def error_of(exc, tb):
    # Drop the driver's own frames so the traceback starts at the user's code.
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return {"name": type(exc).__name__, "value": str(exc), "traceback": text}


def run_python(code, results):
    State.cell += 1
    filename = "<cell-%d>" % State.cell
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        tree = ast.parse(code, filename)
    except SyntaxError as e:
        return 1, {"name": "SyntaxError", "value": str(e),
                   "traceback": "".join(traceback.format_exception_only(type(e), e))}
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    try:
        State.in_user_code = True
        # The interrupt may have come before the code started (the reader thread saw
        # in_user_code still False and sent no signal).
        if State.interrupt == State.current:
            raise KeyboardInterrupt
        exec(compile(tree, filename, "exec"), NAMESPACE)
        value = eval(compile(last, filename, "eval"), NAMESPACE) if last else None
    except SystemExit as e:
        if e.code in (None, 0):
            return 0, None
        code = e.code if isinstance(e.code, int) else 1
        return code, {"name": "SystemExit", "value": str(e.code), "traceback": ""}
    except BaseException as e:
        return 1, error_of(e, e.__traceback__)
    finally:
        State.in_user_code = False
    if value is not None:
        NAMESPACE["_"] = value
        results.display(value)
    return 0, None


NODE = "node"
NODE_MAIN = "/opt/codeinterp/node_main.js"


def run_bash(code, env):
    # bash evals the code as it runs `-c` code (command by command, "/bin/bash: line
    # N" in its messages), with the file closed and stdin still /dev/null for the code.
    return run_program("bash", code, env, lambda fd: ["/bin/bash", "-c", 'eval "$(</dev/fd/{0})" {0}<&-'.format(fd)])


def run_node(code, env):
    # A fresh node process per run (no state kept between runs); node_main.js reads
    # the code from the memory file and runs it as a module in the workspace.
    if shutil.which(NODE, path=env.get("PATH")) is None:
        return 127, {"name": "LanguageUnavailable",
                     "value": "javascript is not installed in this sandbox image", "traceback": ""}
    return run_program("node", code, env, lambda fd: [NODE, NODE_MAIN, str(fd)])


def run_program(name, code, env, argv):
    """Runs code with the program argv(fd) returns, in a session of its own (so an
    interrupt reaches all it started). The code goes through a memory file whose
    descriptor is fd, not argv (where one argument may not pass 128 KiB)."""
    script = os.memfd_create("code", os.MFD_CLOEXEC)
    try:
        os.write(script, code.encode("utf-8", "surrogateescape"))  # a memory file takes it whole
        os.lseek(script, 0, os.SEEK_SET)
        State.child = subprocess.Popen(argv(script), cwd=WORKSPACE, env=env,
                                       stdin=subprocess.DEVNULL, start_new_session=True, pass_fds=(script,))
    finally:
        os.close(script)
    if State.interrupt == State.current:  # interrupted before it started
        os.killpg(State.child.pid, signal.SIGINT)
    try:
        rc = State.child.wait()
    finally:
        State.child = None
    if rc == 0:
        return 0, None
    rc = 128 - rc if rc < 0 else rc  # killed by a signal, as a shell reports it
    return rc, {"name": "NonZeroExit", "value": "%s exited with status %d" % (name, rc), "traceback": ""}


def kill_strays():
    """Kills every other process of this user and reaps them: what a run started
    (background jobs, daemons in sessions of their own, a fork bomb) must not keep
    running, or hold pids, while the kernel keeps its state. kill(-1) reaches every
    process this user may signal, whatever its session or process group, but not this
    one; the keeper runs as another user (so kill(-1) always "succeeds": /proc says
    when none is left)."""
    for _ in range(100):
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        while True:  # every child was just killed, so this wait ends
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
        if not others_alive():
            return


def others_alive():
    """Whether a process of this user other than this one may still run code: one
    forked after the last kill(-1). A zombie, a process exiting or one with SIGKILL
    pending never will, and is not waited for (a file helper the worker ran just
    before may still be tearing down)."""
    me, uid = os.getpid(), os.getuid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            if os.stat("/proc/" + entry).st_uid != uid:
                continue
            with open("/proc/%s/stat" % entry, "rb") as f:
                stat = f.read().rsplit(b")", 1)[1].split()
            with open("/proc/%s/status" % entry, "rb") as f:
                status = f.read()
        except (OSError, IndexError):
            continue
        if not dying(stat, status):
            return True
    return False


PF_EXITING = 0x4
SIGKILL_BIT = 1 << (signal.SIGKILL - 1)


def dying(stat, status):
    """Whether a process (its /proc stat fields after the name, and status) is done for."""
    if stat[0] in (b"Z", b"X") or int(stat[6]) & PF_EXITING:
        return True
    for line in status.splitlines():
        if line.startswith((b"SigPnd:", b"ShdPnd:")) and int(line.split()[1], 16) & SIGKILL_BIT:
            return True
    return False


def cpu_seconds():
    """CPU time used so far by this process and its waited-for children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def execute(req, out, results):
    exec_id = req.get("id")
    try:
        shutil.rmtree(RESULTS, ignore_errors=True)
    except Exception:  # RecursionError on a tree ~1000 deep: it stays
        pass
    before = with_root(fsop.outputs_state)
    cpu_start = cpu_seconds()
    saved_env = dict(os.environ)
    os.environ.update({str(k): str(v) for k, v in (req.get("env") or {}).items()})
    State.current = exec_id
    out.running.set()
    try:
        language = req.get("language")
        if language == "bash":
            rc, err = run_bash(req.get("code", ""), dict(os.environ))
        elif language == "javascript":
            rc, err = run_node(req.get("code", ""), dict(os.environ))
        else:
            rc, err = run_python(req.get("code", ""), results)
        results.figures()
    except BaseException as e:  # a KeyboardInterrupt that landed outside the user's code
        rc, err = 1, error_of(e, e.__traceback__)
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        if not State.zygote_child:  # kill(-1) would kill the zygote too: its wipe kills them
            kill_strays()
        out.sync()
        out.running.clear()
        State.current = None
    cpu_ms = round((cpu_seconds() - cpu_start) * 1000)
    after, listing, skipped = with_root(fsop.scan)
    changed = sorted(p for p, st in after.items() if before.get(p) != st)
    emit(ev="done", id=exec_id, status="error" if err else "ok", exit_code=exit_code(rc),
         error=err, outputs=changed, workspace=listing, skipped=skipped, cpu_ms=cpu_ms)


def exit_code(rc):
    """An exit code as a process has one: sys.exit(2**70) is no 32-bit status."""
    return rc if isinstance(rc, int) and -(1 << 31) <= rc < (1 << 31) else 1


def on_sigint(signum, frame):
    # Only the user's code is interrupted; the driver's own bookkeeping is not.
    if State.in_user_code:
        raise KeyboardInterrupt


def read_requests(inbox):
    for line in _requests:
        try:
            req = json.loads(line)
        except ValueError:
            continue
        if req.get("op") == "interrupt":
            # Set before looking at the state: the main thread sets the state before
            # looking at this, so one of the two always acts.
            State.interrupt = req.get("id")
            if State.current != State.interrupt:
                continue  # not started yet: it will see State.interrupt
            child = State.child
            if child is not None:
                try:
                    os.killpg(child.pid, signal.SIGINT)
                except OSError:
                    pass
            elif State.in_user_code:
                os.kill(os.getpid(), signal.SIGINT)
        else:
            inbox.put(req)
    inbox.put(None)  # the worker closed stdin: exit


def put(req):
    """Writes files into the workspace before a one-off's code runs: the tar archive
    (base64) the file helper would get, unpacked by the same code, as the same user.
    One request on the stream instead of a docker exec (sandbox/docker/inline.go)."""
    import base64
    import io

    try:
        archive = base64.b64decode(req.get("tar") or "", validate=True)
        res = fsop.write_tar(io.BytesIO(archive))
        emit(ev="put", id=req.get("id"), ok=True, **res)
    except Exception as e:  # a bad archive: said, and the kernel goes on
        emit(ev="put", id=req.get("id"), ok=False, reason="%s: %s" % (type(e).__name__, e))


class TooLarge(Exception):
    pass


def get(req):
    """Reads a one-off's outputs after its code: the tar stream the file helper would
    send (fsop.read_tar, the same code, as the same user), base64 in one event. One
    request on the stream instead of a docker exec (sandbox/docker/inline.go). An
    answer past req["max"] bytes is not sent ("toolarge"): the worker asks the helper."""
    import base64
    import io

    try:
        names = [n for n in req.get("names") or [] if isinstance(n, str)]
        each, total, cap = (int(req.get(k) or 0) for k in ("each", "total", "max"))
        buf = io.BytesIO()

        def write(data):
            if buf.tell() + len(data) > cap:
                raise TooLarge()
            buf.write(data)

        fsop.read_tar(names, each, total, write)
        emit(ev="got", id=req.get("id"), ok=True, tar=base64.b64encode(buf.getvalue()).decode("ascii"))
    except TooLarge:
        emit(ev="got", id=req.get("id"), ok=False, reason="toolarge")
    except Exception as e:  # said, and the worker asks the helper; the kernel goes on
        emit(ev="got", id=req.get("id"), ok=False, reason="%s: %s" % (type(e).__name__, e))


def prepare_matplotlib():
    # matplotlib wants a writable config dir; seed it with the font cache built into the image.
    cache = os.environ.get("MPLCONFIGDIR")
    if cache and not os.path.isdir(cache):
        shutil.copytree("/opt/codeinterp/mplcache", cache, dirs_exist_ok=True)


def preload():
    """Imports what most code needs, so a warm kernel answers without paying for it."""
    import io

    import numpy  # noqa: F401
    import pandas
    import matplotlib.pyplot as plt

    # One small chart drawn and saved: the fonts (the CJK fallback included), the text
    # layout and the PNG writer are loaded once here, not again in each run (measured:
    # a pandas bar chart saved to PNG took ~190 ms in a fresh fork, ~100 ms after this).
    fig, ax = plt.subplots()
    pandas.Series([1, 2], index=["a", "b"]).plot.bar(ax=ax, title="warm-up")
    fig.savefig(io.BytesIO(), format="png")
    plt.close(fig)


def main(requests=None, ready=None):
    """Runs the kernel. A zygote's child (zygote.py) reads the requests its zygote
    forwards from requests, and says it is ready by closing the descriptor ready."""
    global _requests
    if requests is not None:
        _requests, State.zygote_child = requests, True
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    out = capture.Capture(stream_event)
    sys.stdin = open(os.devnull)
    sys.stdout, sys.stderr = out.stdout, out.stderr
    os.close(fsop.open_root())  # gives the workspace back to its owner if the code locked it
    try:
        os.makedirs(OUTPUTS, exist_ok=True)
    except OSError:  # the code put a file or a link there: its business, not a reason not to start
        pass
    os.chdir(WORKSPACE)
    prepare_matplotlib()
    signal.signal(signal.SIGINT, on_sigint)

    results = Results(None)
    codeinterp_hooks.show = lambda: results.figures()

    def display(*values):
        for v in values:
            results.display(v)

    NAMESPACE["display"] = display
    if os.environ.get("CODEINTERP_PRELOAD") == "1" and not State.zygote_child:
        preload()  # a zygote's child has it all from the zygote: its warm-up chart is not free

    inbox = queue.Queue()
    threading.Thread(target=read_requests, args=(inbox,), daemon=True).start()
    if State.zygote_child:
        os.close(ready)  # the zygote says ready, or wiped
    else:
        emit(ev="ready", pid=os.getpid(), python=sys.version.split()[0])
    while (req := inbox.get()) is not None:
        if req.get("op") == "exec":
            results = Results(req.get("id"))
            execute(req, out, results)
        elif req.get("op") == "put":
            put(req)
        elif req.get("op") == "get":
            get(req)


if __name__ == "__main__":
    if os.environ.pop("CODEINTERP_ZYGOTE", "") == "1":
        import zygote
        zygote.serve(sys.modules[__name__])
    else:
        main()
