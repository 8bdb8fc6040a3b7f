"""codeinterp file helper: reads, writes and lists workspace files for the worker.

The worker runs it as the code's user, a fresh process per operation:

    docker exec -u 1000:1000 <sandbox> python3 -I -S -c 'import fsop ...' OP ...

so it can read nothing the code could not read itself (the Docker daemon, which copies
files as root, would read /etc/shadow through a link). No symbolic link is ever followed:
each path is walked one component at a time, each step opened with O_NOFOLLOW relative
to the descriptor of the directory before it, starting from a descriptor of /workspace
(what openat2's RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS does). A concurrent rename cannot
lead a walk out of the workspace either: every step holds the directory it came from,
and the workspace is a file system of its own.

Operations (stdlib only; the kernel driver imports this module for its listings):

  read EACH TOTAL  stdin: workspace paths, NUL-separated. stdout: a tar stream with one
                   entry per path, in order, named by its index: a regular file with its
                   content, or an empty entry whose PAX record CODEINTERP.error says why
                   not: badpath, nofile, notregular, or toolarge (a file larger than EACH
                   bytes, or one that would bring the bytes sent past TOTAL; its size is
                   then in CODEINTERP.size).
  write            stdin: a tar stream of regular files, directories and symbolic links,
                   written as the code's user; missing parents are made. A file replaces
                   what is at its path (a link is replaced, never followed); an entry
                   under a link or a non-directory fails. stdout: one JSON line
                   {"written": n, "failed": n, "errors": [up to 10 "path: why"]}.
  list             stdout: one JSON line {"files": [[path, size, mtime_ms], ...], "skipped": {...}}.
  skill NAME       run as the keeper user: stdin: a tar stream of regular files and
                   directories, unpacked into SKILLS/NAME (made beside it, then renamed
                   over the old one, so a run never sees half a skill). Files and
                   directories keep the archive's modes (the worker sends 0444/0555):
                   the code, another user, can read them and change nothing. stdout:
                   the JSON line of write.
  unskill          run as the keeper user: removes every skill from SKILLS.

The workspace's skills/ is a link to SKILLS, a tmpfs of the keeper's outside the
workspace: walks never follow it, so skills are in no listing, output or snapshot.
"""

import errno
import os
import stat
import sys

WORKSPACE = "/workspace"
SKILLS = "/run/codeinterp-skills"
OUTPUTS = "outputs"
MAX_PATH = 1024  # bytes of a workspace path; longer ones are skipped (sandbox.MaxPathLen)
MAX_LIST = 1000  # files a listing reports
MAX_VISIT = 20000  # directory entries one walk looks at
MAX_ERRORS = 10

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class BadPath(ValueError):
    pass


def parts_of(path):
    """Splits a workspace-relative path; refuses what could leave the workspace."""
    parts = path.split("/")
    if not path or len(path.encode("utf-8", "surrogateescape")) > MAX_PATH or \
            any(p in ("", ".", "..") for p in parts) or not good_name(path):
        raise BadPath(path)
    return parts


def good_name(name):
    """Whether a name can be reported: UTF-8, no control characters (Go's unicode.IsControl)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in name)


def open_root():
    try:
        return os.open(WORKSPACE, DIR_FLAGS)
    except PermissionError:
        # The code made its own workspace unreadable: give the owner its access back,
        # or no file of the thread could ever be read, listed or restored again.
        os.chmod(WORKSPACE, 0o700)
        return os.open(WORKSPACE, DIR_FLAGS)


def open_entry(name, flags, dir_fd, mode=0o777):
    """os.open of name in dir_fd, never through a link. O_NOFOLLOW alone is not enough:
    Debian's gVisor (2022-12) follows a final link despite it. So the opened file must
    be the very entry that lstat finds there (same device and inode), and that entry
    no link: a rename between the two calls makes them differ, and is refused."""
    fd = os.open(name, flags | os.O_NOFOLLOW, mode, dir_fd=dir_fd)
    try:
        entry, opened = os.stat(name, dir_fd=dir_fd, follow_symlinks=False), os.fstat(fd)
        if stat.S_ISLNK(entry.st_mode) or (entry.st_dev, entry.st_ino) != (opened.st_dev, opened.st_ino):
            raise OSError(errno.ELOOP, "a link in the path", name)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_dir(root, parts, make=False):
    """Opens the directory root/parts[0]/... without following a link; make creates
    missing ones. Raises OSError (ELOOP or ENOTDIR for a link or a file on the way)."""
    fd = os.dup(root)
    try:
        for p in parts:
            try:
                nfd = open_entry(p, DIR_FLAGS, fd)
            except FileNotFoundError:
                if not make:
                    raise
                try:
                    os.mkdir(p, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                nfd = open_entry(p, DIR_FLAGS, fd)
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


# ---- walking ---------------------------------------------------------------------

class Walk:
    """Walks the workspace depth first in name order, never following a link, looking at
    no more than MAX_VISIT entries in all; counts what it skipped."""

    def __init__(self, root, budget=MAX_VISIT):
        self.root, self.budget, self.left = root, budget, budget
        self.skipped = {"bad_name": 0, "too_long": 0, "special": 0, "stopped": 0}

    @staticmethod
    def names(fd):
        try:
            return iter(sorted(os.listdir(fd)))
        except OSError:  # e.g. a directory the code made unreadable
            return iter(())

    def files(self, top="", skip_top=None):
        """Yields (path, stat) for each regular file under the directory top ("" for the
        workspace); skip_top names a top-level entry not to enter."""
        try:
            fd = open_dir(self.root, top.split("/") if top else [])
        except OSError:
            return
        stack = [(fd, top, self.names(fd))]
        try:
            while stack:
                fd, rel, names = stack[-1]
                name = next(names, None)
                if name is None:
                    os.close(fd)
                    stack.pop()
                    continue
                if rel == "" and name == skip_top:
                    continue
                if self.left <= 0:
                    self.skipped["stopped"] = self.budget  # entries looked at
                    return
                self.left -= 1
                path = rel + "/" + name if rel else name
                if not good_name(name):
                    self.skipped["bad_name"] += 1
                    continue
                if len(path.encode("utf-8")) > MAX_PATH:
                    self.skipped["too_long"] += 1
                    continue
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    yield path, st
                elif stat.S_ISDIR(st.st_mode):
                    try:
                        child = open_entry(name, DIR_FLAGS, fd)
                    except OSError:
                        continue
                    stack.append((child, path, self.names(child)))
                elif not stat.S_ISLNK(st.st_mode):
                    self.skipped["special"] += 1
        finally:
            for fd, _, _ in stack:
                os.close(fd)


def entry(path, st):
    return [path, st.st_size, st.st_mtime_ns // 1_000_000]


def outputs_state(root):
    """Maps each regular file under outputs/ to (size, mtime, inode), to see what a run changed."""
    w = Walk(root)
    return {p: (st.st_size, st.st_mtime_ns, st.st_ino) for p, st in w.files(OUTPUTS)}


def scan(root):
    """Returns the state of outputs/, a listing of at most MAX_LIST files (those under
    outputs/ first), and what the walk skipped."""
    w = Walk(root)
    outputs, listing = {}, []
    for p, st in w.files(OUTPUTS):
        outputs[p] = (st.st_size, st.st_mtime_ns, st.st_ino)
        if len(listing) < MAX_LIST:
            listing.append(entry(p, st))
    if len(listing) < MAX_LIST:
        for p, st in w.files("", skip_top=OUTPUTS):
            listing.append(entry(p, st))
            if len(listing) == MAX_LIST:
                break
    return outputs, listing, w.skipped


# ---- reading ---------------------------------------------------------------------

# The read answer is written by hand: importing tarfile (or json) would cost each run of
# the helper more CPU time than starting Python does.

def tar_header(name, size=0, mtime=0, pax=None):
    """The header blocks of a regular file entry, with a PAX extended header first if
    pax (a dict of records) is given. The helper's names are short (indexes)."""
    out = b""
    if size >= 8 ** 11:  # past what 11 octal digits hold
        pax = dict(pax or {}, size=str(size))
    if pax:
        data = b"".join(pax_record(k, v) for k, v in pax.items())
        out = ustar(b"pax", len(data), 0, b"x") + data + bytes(-len(data) % 512)
    return out + ustar(name.encode(), size if size < 8 ** 11 else 0, mtime, b"0")


def pax_record(key, value):
    body = (" %s=%s\n" % (key, value)).encode("utf-8")
    n = len(body) + len(str(len(body)))
    n += len(str(n)) - len(str(len(body)))  # the length counts its own digits
    return str(n).encode() + body


def ustar(name, size, mtime, typeflag):
    h = bytearray(512)
    h[0:len(name)] = name
    h[100:108] = b"0000644\0"
    h[108:116] = h[116:124] = b"0000000\0"
    h[124:136] = b"%011o\0" % size
    h[136:148] = b"%011o\0" % min(max(int(mtime), 0), 8 ** 11 - 1)
    h[148:156] = b" " * 8
    h[156:157] = typeflag
    h[257:265] = b"ustar\x0000"
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def copy_exactly(src, write, size):
    """Copies size bytes of src to write: a file that shrank meanwhile is padded with
    zeros, and one that grew is cut, so the entry is exactly as long as its header says."""
    left = size
    while left:
        data = os.read(src, min(left, 1 << 20)) or bytes(min(left, 1 << 20))
        write(data)
        left -= len(data)
    write(bytes(-size % 512))


def open_file(root, path):
    """Opens a regular file without following a link; returns (fd, stat) or an error name."""
    try:
        parts = parts_of(path)
    except BadPath:
        return None, "badpath"
    try:
        d = open_dir(root, parts[:-1])
    except FileNotFoundError:
        return None, "nofile"
    except OSError:
        return None, "notregular"  # a link or a file on the way
    try:
        st = os.stat(parts[-1], dir_fd=d, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            return None, "notregular"
        # O_NONBLOCK: should a FIFO take the file's place meanwhile, opening it must not hang.
        fd = open_entry(parts[-1], os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC, d)
    except FileNotFoundError:
        return None, "nofile"
    except OSError:
        return None, "notregular"
    finally:
        os.close(d)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None, "notregular"
    return fd, st


def read(each, total):
    out = sys.stdout.fileno()
    names = [os.fsdecode(n) for n in sys.stdin.buffer.read().split(b"\0") if n]
    read_tar(names, each, total, lambda data: write_all(out, data))


def read_tar(names, each, total, write):
    """Writes the answer to a read of names to write: a tar stream of one entry per
    name, in order, named by its index, holding the file or saying why it was not read
    (CODEINTERP.error). The kernel calls it too, for a one-off's outputs."""
    root = open_root()
    try:
        sent = 0
        for i, name in enumerate(names):
            fd, st = open_file(root, name)
            if fd is None:  # st names the error
                write(tar_header(str(i), pax={"CODEINTERP.error": st}))
            elif st.st_size > each or sent + st.st_size > total:
                os.close(fd)
                write(tar_header(str(i), pax={"CODEINTERP.error": "toolarge", "CODEINTERP.size": st.st_size}))
            else:
                try:
                    write(tar_header(str(i), st.st_size, st.st_mtime))
                    copy_exactly(fd, write, st.st_size)
                    sent += st.st_size
                finally:
                    os.close(fd)
        write(bytes(1024))  # the end of the archive
    finally:
        os.close(root)


# ---- writing ---------------------------------------------------------------------

class Writer:
    def __init__(self, root):
        self.root, self.n = root, 0
        self.written, self.errors, self.failed = 0, [], 0
        self.parent = (None, None)  # the last parent directory: (parts, fd)
        self.modes = []  # directories whose mode is applied at the end

    def fail(self, path, why):
        self.failed += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append("%s: %s" % (path, why))

    def dir_fd(self, parts):
        """The directory at parts, made if missing. An archive lists a directory's
        children right after it, so the last one is kept, and a deeper one is opened
        from it: a chain 1,200 deep costs 1,200 opens, not 720,000."""
        have, fd = self.parent
        if have == parts:
            return fd
        if have is not None and parts[:len(have)] == have:
            nfd = open_dir(fd, parts[len(have):], make=True)
        else:
            nfd = open_dir(self.root, parts, make=True)
        self.close()
        self.parent = (parts, nfd)
        return nfd

    def close(self):
        if self.parent[1] is not None:
            os.close(self.parent[1])
        self.parent = (None, None)

    def replace(self, d, name, make):
        """Makes a new entry with make(tmp) and renames it over name: whatever was there
        (a file or a link) is replaced, never written through."""
        self.n += 1
        tmp = ".codeinterp-%d-%d" % (os.getpid(), self.n)
        try:
            make(tmp)
            os.rename(tmp, name, src_dir_fd=d, dst_dir_fd=d)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=d)
            except OSError:
                pass
            raise

    def add(self, tar, m):
        parts = parts_of(m.name.rstrip("/"))
        if m.isdir():
            self.dir_fd(parts)
            if m.mode & 0o777 != 0o755:  # applied at the end: a read-only one must take its children first
                self.modes.append((parts, m.mode & 0o777))
            return
        d = self.dir_fd(parts[:-1])
        name = parts[-1]
        if m.issym():
            self.replace(d, name, lambda tmp: os.symlink(m.linkname, tmp, dir_fd=d))
        elif m.isreg():
            src = tar.extractfile(m)

            def make(tmp):
                # O_EXCL|O_NOFOLLOW: never opens what is there, a link least of all.
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             m.mode & 0o777, dir_fd=d)
                try:
                    while chunk := src.read(1 << 20):
                        write_all(fd, chunk)
                    os.utime(fd, (m.mtime, m.mtime))
                finally:
                    os.close(fd)

            # Most names are new (a restore fills an empty workspace): made in place,
            # one system call fewer than a rename, which counts under gVisor (each is
            # a round trip to its file server: 100,000 files take minutes). A name
            # that exists is replaced through a temporary name.
            try:
                make(name)
            except FileExistsError:
                self.replace(d, name, make)
            except BaseException:
                try:  # half a file is no restore
                    os.unlink(name, dir_fd=d)
                except OSError:
                    pass
                raise
        else:
            raise ValueError("only files, directories and links are written")
        self.written += 1

    def finish(self):
        self.close()
        for parts, mode in reversed(self.modes):
            try:
                fd = open_dir(self.root, parts)
                os.fchmod(fd, mode)
                os.close(fd)
            except OSError:
                pass


def write():
    import json

    print(json.dumps(write_tar(sys.stdin.buffer)))


def write_tar(fileobj):
    """Unpacks the tar stream fileobj into the workspace (see Writer) and says what
    was written and what failed. The kernel calls it too, for a one-off's inputs."""
    import tarfile

    old_umask = os.umask(0)  # each file gets the mode the archive gives it, without a chmod
    w = Writer(open_root())
    try:
        with tarfile.open(fileobj=fileobj, mode="r|") as tar:
            for m in tar:
                try:
                    w.add(tar, m)
                except BadPath:
                    w.fail(m.name, "not a clean workspace path")
                except IsADirectoryError:
                    w.fail(m.name, "a directory is in the way")
                except OSError as e:
                    if e.errno in (errno.ENOTDIR, errno.ELOOP):
                        w.fail(m.name, "a parent is a file or a symbolic link (links are never followed)")
                    else:
                        w.fail(m.name, e.strerror or str(e))
                except ValueError as e:
                    w.fail(m.name, str(e))
        w.finish()
    finally:
        w.close()
        os.close(w.root)
        os.umask(old_umask)
    return {"written": w.written, "failed": w.failed, "errors": w.errors}


# ---- skills (as the keeper user) -----------------------------------------------------

def remove_tree(parent, name):
    """Removes parent/name, whatever it is, never following a link. Only the keeper's
    skills tmpfs is ever removed from, where the code cannot write: its trees are as
    deep as a skill's paths allow (1024 bytes), so recursion is bounded."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=parent)
        return
    fd = open_entry(name, DIR_FLAGS, parent)
    try:
        os.fchmod(fd, 0o755)  # a skill's directories are read-only, to the keeper too
        for child in os.listdir(fd):
            remove_tree(fd, child)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)


def put_skill(name):
    import json
    import tarfile

    if "/" in name or name in ("", ".", "..") or name.startswith(".") or not good_name(name):
        print("bad skill name", file=sys.stderr)
        return 2
    os.umask(0)
    root = os.open(SKILLS, DIR_FLAGS)
    tmp, old = ".new-%d" % os.getpid(), ".old-%d" % os.getpid()
    remove_tree(root, tmp)
    os.mkdir(tmp, 0o755, dir_fd=root)
    done = False
    try:
        w = Writer(open_entry(tmp, DIR_FLAGS, root))
        with tarfile.open(fileobj=sys.stdin.buffer, mode="r|") as tar:
            for m in tar:
                if not (m.isreg() or m.isdir()):
                    w.fail(m.name, "only files and directories make a skill")
                    continue
                try:
                    w.add(tar, m)
                except BadPath:
                    w.fail(m.name, "not a clean path")
                except (OSError, ValueError) as e:
                    w.fail(m.name, getattr(e, "strerror", None) or str(e))
        w.finish()
        os.close(w.root)
        if w.failed == 0:
            os.chmod(tmp, 0o555, dir_fd=root)
            remove_tree(root, old)
            try:
                os.rename(name, old, src_dir_fd=root, dst_dir_fd=root)
            except FileNotFoundError:
                pass
            os.rename(tmp, name, src_dir_fd=root, dst_dir_fd=root)
            done = True
            remove_tree(root, old)
        print(json.dumps({"written": w.written, "failed": w.failed, "errors": w.errors}))
    finally:
        if not done:
            remove_tree(root, tmp)
    return 0


def unskill():
    root = os.open(SKILLS, DIR_FLAGS)
    for name in os.listdir(root):
        remove_tree(root, name)
    return 0


def listing():
    import json

    _, files, skipped = scan(open_root())
    print(json.dumps({"files": files, "skipped": skipped}))


def main(argv):
    """Runs argv[1:]; argv[0] is the program's name (or "-c")."""
    op = argv[1] if len(argv) > 1 else ""
    if op == "read" and len(argv) == 4:
        read(int(argv[2]), int(argv[3]))
    elif op == "write":
        write()
    elif op == "list":
        listing()
    elif op == "skill" and len(argv) == 3:
        return put_skill(argv[2])
    elif op == "unskill":
        return unskill()
    else:
        print("usage: fsop.py read EACH TOTAL | write | list | skill NAME | unskill", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
