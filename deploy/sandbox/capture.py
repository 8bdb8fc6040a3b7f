"""The code's stdout and stderr, from its writes to the kernel's stream events.

File descriptors 1 and 2 are pipes, each read by a pump thread that emits what it reads
as stream events, so everything written there is captured: print, C extensions,
subprocesses. A SYNC marker written through a pipe after a run tells the kernel that
everything before it has been emitted.

Python's sys.stdout and sys.stderr over those pipes are block-buffered, not
line-buffered: under gVisor every write(2) costs 100-150 µs, and a loop printing
100,000 short lines spent 21 s of its 22 there (0.4 s under runc). A stream's buffer
is written out
  - when it fills (BUFFER bytes);
  - every FLUSH_INTERVAL while the code runs, by a flusher thread, so the output still
    streams live (SSE, MCP progress);
  - before the code sleeps, or starts, replaces or forks a process (audit events), so
    a child's output never overtakes what was printed before it and a fork never
    copies unwritten output;
  - when the code reads sys.stdin (input() flushes stdout itself), calls flush(), and
    at the end of every run.
Order: a write to one stream first writes out what the other holds, so the two pipes
receive the code's writes in the order it made them, as they did line by line (and
now also for a partial line). Between the two pumps the order is as before: each pipe
is read by its own thread, so a line on stderr may be emitted just before a line on
stdout written just before it.

Subprocesses are not changed: a Python child keeps PYTHONUNBUFFERED (its output
streams live, each print a system call), and bash writes each echo itself.
"""

import codecs
import io
import os
import sys
import threading
import time

SYNC = b"\x00\x1bcodeinterp-sync\x1b\x00"
BUFFER = 1 << 16
FLUSH_INTERVAL = 0.02  # seconds: lines reach the worker within a few tens of ms
# How long the end of a run waits for its output to be emitted. A marker written into
# the capture pipe always reaches a live pump (a pipe keeps order), so this only bounds
# a reader that stopped altogether, or code that swapped the pipe between the check and
# the write; a slow reader (gVisor on a busy host) is waited for, or the run's end
# would overtake its output, which is then dropped.
SYNC_LIMIT = 60
# Audit events (sys.addaudithook) before which buffered output is written out.
FLUSH_BEFORE = frozenset({
    "time.sleep", "subprocess.Popen", "os.system", "os.exec", "os.fork", "os.forkpty",
    "os.posix_spawn", "os.spawn",
})


class Pump(threading.Thread):
    """Streams one capture pipe through out(stream, text); a SYNC marker in the data
    releases waiters."""

    def __init__(self, name, fd, out):
        super().__init__(daemon=True, name="pump-" + name)
        self.stream, self.fd, self.emit = name, fd, out
        self.synced = threading.Semaphore(0)
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.pipe = _identity(fd)

    def out(self, data):
        text = self.decoder.decode(data)
        if text:
            self.emit(self.stream, text)

    def run(self):
        buf = b""
        while True:
            data = os.read(self.fd, 65536)
            if not data:
                return
            buf += data
            while (i := buf.find(SYNC)) >= 0:
                self.out(buf[:i])
                buf = buf[i + len(SYNC):]
                self.synced.release()
            keep = _partial_suffix(buf)
            self.out(buf[: len(buf) - keep])
            buf = buf[len(buf) - keep:]


def _partial_suffix(buf):
    """Length of the longest tail of buf that could begin a SYNC marker."""
    for n in range(min(len(buf), len(SYNC) - 1), 0, -1):
        if SYNC.startswith(buf[-n:]):
            return n
    return 0


def _identity(fd):
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


class Stream(io.TextIOWrapper):
    """sys.stdout or sys.stderr: text written through to a block buffer; a write to
    one stream first writes out the other's buffer (see the module's doc)."""

    def write(self, s):
        global _last
        last = _last
        if last is not self:
            if last is not None:
                _flush(last)
            _last = self
        return _write(self, s)


_write = io.TextIOWrapper.write
_last = None


def _flush(stream):
    try:
        stream.flush()
    except Exception:  # a closed or broken stream is the code's business
        pass


class Capture:
    """The kernel's capture of fds 1 and 2: pumps, buffered streams, the flusher."""

    def __init__(self, out):
        self.pumps = (self._pipe(1, "stdout", out), self._pipe(2, "stderr", out))
        self.stdout, self.stderr = _stream(1), _stream(2)
        self.running = threading.Event()
        # Held while the buffers are written out. A fork waits for it: a child forked
        # while the flusher thread held a buffer's lock would find it locked for good
        # (threads do not survive a fork), and its first print would hang.
        self.lock = threading.RLock()
        self._flusher(self.running)
        os.register_at_fork(before=self.lock.acquire, after_in_parent=self.lock.release,
                            after_in_child=self._forked)
        sys.addaudithook(self._audit)

    @staticmethod
    def _pipe(fd, name, out):
        r, w = os.pipe()
        os.dup2(w, fd)
        os.close(w)
        pump = Pump(name, r, out)
        pump.start()
        return pump

    def _flusher(self, running):
        tick = threading.Event()  # never set: its wait is the interval (time.sleep is audited)

        def loop():
            while True:
                running.wait()
                tick.wait(FLUSH_INTERVAL)
                self.flush()
        threading.Thread(target=loop, daemon=True, name="flusher").start()

    def _forked(self):
        # The child keeps the buffers, so it needs a flusher of its own.
        self.lock.release()
        self._flusher(_set(threading.Event()))

    def _audit(self, event, args):
        if event in FLUSH_BEFORE:
            self.flush()

    def flush(self):
        """Writes out both buffers, the one written to last after the other."""
        with self.lock:
            last = _last
            for s in (self.stdout, self.stderr):
                if s is not last:
                    _flush(s)
            if last is not None:
                _flush(last)

    def sync(self):
        """Waits until everything written to fd 1 and 2 so far has been emitted."""
        self.flush()
        for s in (sys.stdout, sys.stderr):  # streams the code put in their place
            if s is not self.stdout and s is not self.stderr:
                _flush(s)
        for fd, pump in zip((1, 2), self.pumps):
            try:
                if _identity(fd) != pump.pipe:
                    continue  # the code pointed fd elsewhere: a marker would not reach the pump
                os.write(fd, SYNC)
            except OSError:
                continue
            deadline = time.monotonic() + SYNC_LIMIT
            while not pump.synced.acquire(timeout=0.5):
                if not pump.is_alive() or time.monotonic() > deadline:
                    break


def _stream(fd):
    raw = io.FileIO(fd, "w", closefd=False)
    return Stream(io.BufferedWriter(raw, BUFFER), encoding="utf-8", errors="backslashreplace",
                  write_through=True)


def _set(event):
    event.set()
    return event
