"""Write out/ atomically: everything goes to a temporary sibling folder first, which then
takes the place of the old out/ in one rename. A failed or interrupted plan leaves the
previous out/ as it was; artifacts of workloads that left the plan disappear with it.

The siblings are `.out.new-<pid>-*` (being written) and `.out.old-<pid>-*` (the previous
out/ during the swap). A run that was killed leaves one behind; the next run recovers:
if out/ is missing but an `.old` sibling exists, the kill came between the two renames of
the swap and that sibling is the previous out/, intact, so it is put back first. Siblings
of processes that are still alive are left alone (two plans may run side by side).

Plans run side by side safely: each writes its own sibling, and the recovery and the swap
happen under an exclusive `flock` of the parent folder (no lock file is left behind; the
kernel drops the lock when a process dies). The last swap wins; none fails or leaves out/
missing.

A file whose bytes are unchanged since the previous out/ is not written again: the new folder
gets a hard link to the previous file (see _Previous), so a re-plan writes and deletes only
what changed. The previous out/ is only read; it stays whole until the swap.

The new folder may be filled by several processes (write_parts: a plan's plan.json here,
each backend's files in a forked child, router/fork.py); each writes only its own paths, and
the swap happens once, here, after every one has finished: a child that fails or is killed
fails the write, and out/ stays as it was.

Test hook: ROUTER_TEST_PAUSE_BEFORE_SWAP=<seconds> sleeps after every file is written and
before the swap, so a test can kill the process there. It does nothing else.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import lru_cache, partial
from pathlib import Path
from typing import TypeVar

from router.errors import PlanError
from router.fork import run_parts
from router.gcpause import paused_gc

TEST_PAUSE_ENV = "ROUTER_TEST_PAUSE_BEFORE_SWAP"


def _safe(relative: str) -> str:
    """`relative` as the path under out/ it names ("a//./b" is "a/b"), or PlanError for one
    that is absolute, empty, climbs with "..", or holds a backslash: PurePosixPath's rules,
    checked with string operations, since a plan writes 100k of them."""
    parts = [p for p in relative.split("/") if p and p != "."]
    if relative.startswith("/") or ".." in parts or not parts or "\\" in relative:
        raise PlanError(f"refusing to write outside out/: {relative!r}")
    return "/".join(parts)


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner(sibling: Path, prefix: str) -> int | None:
    """The pid in `<prefix><pid>-xxxx`, or None for a name without one."""
    pid = sibling.name[len(prefix) :].split("-", 1)[0]
    return int(pid) if pid.isdigit() and int(pid) > 0 else None


def recover(out: Path) -> list[Path]:
    """Undo what a killed run left next to `out`; return the siblings removed or restored."""
    out = Path(out)
    parent = out.resolve().parent
    if not parent.is_dir():
        return []
    dead = [
        p
        for prefix in (f".{out.name}.old-", f".{out.name}.new-")
        for p in sorted(parent.glob(f"{prefix}*"))
        if p.is_dir() and not _alive(_owner(p, prefix))
    ]
    touched: list[Path] = []
    olds = [p for p in dead if ".old-" in p.name]
    if not out.exists() and olds:
        newest = max(olds, key=lambda p: p.stat().st_mtime)
        os.rename(newest, out)
        dead.remove(newest)
        touched.append(newest)
    for p in dead:
        shutil.rmtree(p, ignore_errors=True)
        touched.append(p)
    return touched


def _check_protected(out: Path, protect: Iterable[Path]) -> None:
    """out/ is replaced wholesale: it must not be, or hold, the project or its inputs."""
    target = out.resolve()
    for p in protect:
        q = Path(p).resolve()
        if q == target or target in q.parents:
            raise PlanError(
                f"refusing to use {out} as the output folder: it holds {p}, "
                "which the plan would delete",
                hint="give -o/--out a folder of its own, e.g. out/",
            )


@contextmanager
def _swap_lock(parent: Path) -> Iterator[None]:
    """Exclusive use of the siblings of out/ in `parent` (recover and swap), across processes."""
    fd = os.open(parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _check_replaceable(out: Path, marker: str | None) -> None:
    """An existing out/ is replaced wholesale, so it must be one written before: empty, or
    holding `marker` (plan.json). `out: ..` in a pull request's router.yaml must not empty a
    folder of the runner's."""
    if marker is None or not out.is_dir() or (out / marker).is_file():
        return
    if next(os.scandir(out), None) is not None:
        raise PlanError(
            f"refusing to use {out} as the output folder: it is not empty and holds no"
            f" {marker}, so it is no plan's out/ (the plan would delete what it holds)",
            hint="give -o/--out (or router.yaml's out:) a new or empty folder, e.g. out/",
        )


Part = Callable[[], dict[str, str]]


def write_out(
    out: Path, files: dict[str, str], protect: Iterable[Path] = (), marker: str | None = None
) -> None:
    """Replace the folder `out` with exactly `files` ({relative path: text}). With `marker`,
    an existing out/ must be empty or hold that file (be one written before)."""
    write_parts(out, [lambda: files], protect, parallel=False, marker=marker)


@paused_gc()
def write_parts(
    out: Path,
    parts: Sequence[Part],
    protect: Iterable[Path] = (),
    parallel: bool = True,
    marker: str | None = None,
) -> list[str]:
    """Replace the folder `out` with the files of every part (each a function returning
    {relative path: text}; their paths are disjoint), in one swap; return the paths written,
    sorted. With `parallel`, parts after the first run in forked children (router.fork)
    that write into the same new folder while this process runs the first: the parts share
    nothing once the plan is fixed, and the files come out the same bytes either way. A part
    that fails fails the whole write, the first failing part in order being the error
    raised (as when they run one after the other), and out/ is left as it was. With
    `marker`, an existing out/ must be empty or hold that file (_check_replaceable)."""
    out = Path(out)
    _check_protected(out, protect)
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    with _swap_lock(parent):
        recover(out)
        if out.is_symlink() or (out.exists() and not out.is_dir()):
            raise PlanError(f"{out} exists and is not a folder")
        _check_replaceable(out, marker)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-{os.getpid()}-", dir=parent))
    fd = os.open(tmp, _FOLDER)
    try:
        _top_of_tree(fd)  # its subfolders spread over the file system (see there)
    finally:
        os.close(fd)
    old: Path | None = None
    try:
        me = os.getpid()

        def one(part: Part) -> list[str]:
            names = _write_part(out, str(tmp), part)
            if os.getpid() != me:
                # A child: its files go to disk while this process still works, so the one
                # sync below has less left to wait for.
                sync_file_system(str(tmp))
            return names

        written = sorted(path for names in run_parts(one, parts, parallel) for path in names)
        # One sync of the folder's file system before the swap, not an fsync per file: a plan
        # of 100k workloads writes 100k files, and the swap only needs them durable as a set.
        sync_file_system(str(tmp))
        pause = os.environ.get(TEST_PAUSE_ENV)
        if pause:
            time.sleep(float(pause))
        with _swap_lock(parent):
            recover(out)  # a run killed while this one wrote its files
            if out.is_symlink() or (out.exists() and not out.is_dir()):
                raise PlanError(f"{out} exists and is not a folder")
            _check_replaceable(out, marker)
            old = _swap(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        # Outside the lock: the folder is this process's own (`.out.old-<pid>`), and should
        # the process die here, the next run removes what is left.
        shutil.rmtree(old, ignore_errors=True)
    return written


@lru_cache(maxsize=1)
def _syncfs() -> Callable[[int], int] | None:
    """libc's syncfs(2) (Linux), or None where there is none."""
    import ctypes  # here: only a plan that writes needs it

    try:
        return getattr(ctypes.CDLL(None, use_errno=True), "syncfs", None)
    except OSError:
        return None


def sync_file_system(folder: str) -> None:
    """Flush the file system that holds `folder`, not every disk of the machine as os.sync
    does (Python has no os.syncfs); os.sync where syncfs is missing or fails. An fsync of
    each file and folder would do too, but costs ~30 s for L's 8,700 files (a journal commit
    each) where syncfs takes a fraction of a second."""
    syncfs = _syncfs()
    if syncfs is not None:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            if syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    os.sync()


def _write_part(out: Path, tmp: str, part: Part) -> list[str]:
    files = part()
    paths = {rel: _safe(rel) for rel in files}  # every path checked before anything is written
    with _Previous(out) as previous:
        _write_tree(tmp, files, paths, previous)
    return list(paths.values())


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # no /proc: read it by setting it, then put it back
    os.umask(mask)
    return mask


class _Previous:
    """The out/ being replaced, opened once, to reuse its files whose bytes are unchanged:
    the new folder gets a hard link to such a file instead of a copy. Writing 100k files and
    then deleting the 100k old ones costs far more than linking them, and a re-plan changes
    few. A file is reused only when it is a regular file of this user, with the mode a new
    one would get and exactly the new bytes, reached through real folders of out/ (no
    symbolic link is followed); the link is checked to be that very file (a concurrent plan
    may swap out/ meanwhile), else the file is written as usual."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.folders: dict[str, int | None] = {}
        self.uid = os.geteuid()
        self.modes = {False: 0o666 & ~_umask(), True: 0o755}

    def __enter__(self) -> _Previous:
        try:
            self.folders[""] = os.open(self.out, _FOLDER)
        except OSError:
            self.folders[""] = None  # no previous out/: every file is new
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self.folders.values():
            if fd is not None:
                os.close(fd)

    def _folder(self, folder: str) -> int | None:
        """A descriptor of out/'s `folder` (relative, "" for out/ itself), or None."""
        if folder in self.folders:
            return self.folders[folder]
        up, _, name = folder.rpartition("/")
        parent = self._folder(up)
        fd = None
        if parent is not None:
            with suppress(OSError):
                fd = os.open(name, _FOLDER | os.O_NOFOLLOW, dir_fd=parent)
        self.folders[folder] = fd
        return fd

    def link(self, folder: str, name: str, data: bytes, executable: bool, dest: str) -> bool:
        """Link the previous `folder/name` at `dest` if its bytes are `data`; True if so."""
        where = self._folder(folder)
        if where is None:
            return False
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=where)
        except OSError:
            return False
        try:
            st = os.fstat(fd)
            if not (
                stat.S_ISREG(st.st_mode)
                and st.st_size == len(data)
                and st.st_uid == self.uid
                and stat.S_IMODE(st.st_mode) == self.modes[executable]
                and _read(fd, len(data)) == data
            ):
                return False
            try:
                os.link(name, dest, src_dir_fd=where, follow_symlinks=False)
            except OSError:
                return False
            linked = os.stat(dest, follow_symlinks=False)
            if (linked.st_dev, linked.st_ino) != (st.st_dev, st.st_ino):
                os.unlink(dest)  # another file took that name meanwhile: write it instead
                return False
            return True
        finally:
            os.close(fd)


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def _read(fd: int, size: int) -> bytes:
    """`size` bytes and one more if there is one (a file that grew meanwhile differs)."""
    chunks = []
    while size > 0:
        chunk = os.read(fd, size)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    chunks.append(os.read(fd, 1))
    return b"".join(chunks)


# Linux's FS_IOC_GETFLAGS / FS_IOC_SETFLAGS (64-bit numbers; the kernel reads and writes an int)
# and FS_TOPDIR_FL (`chattr +T`).
_GETFLAGS, _SETFLAGS, _TOPDIR = 0x80086601, 0x40086602, 0x00020000


def _top_of_tree(fd: int) -> None:
    """Mark the folder open at `fd` as the top of a tree (`chattr +T`), where the file
    system has such a flag (ext4): its subfolders are then placed by the Orlov allocator
    like top-level ones, spread over block groups with room. Why: an ext4 without a
    journal skips, for each new file, every inode of the group freed in the last minutes
    (ext4 `recently_deleted`), and out/ folders just removed (ours, or any other on the
    machine) leave thousands there, so creating L's 8,944 files cost 2–7 s of kernel time
    in the parent folder's group, 0.2–1 s when spread. Nothing else changes."""
    if not sys.platform.startswith("linux"):
        return
    try:
        raw = fcntl.ioctl(fd, _GETFLAGS, struct.pack("i", 0))
        flags = struct.unpack("i", raw)[0]
        if not flags & _TOPDIR:
            fcntl.ioctl(fd, _SETFLAGS, struct.pack("i", flags | _TOPDIR))
    except OSError:
        pass  # tmpfs, overlayfs, a file system without the flag: placed as usual


def _make_folder(tmp: str, folder: str, made: set[str]) -> None:
    """Make `folder` (relative to `tmp`) and the folders above it, each a top of a tree
    (_top_of_tree). Each is made under a name of its own and then renamed into place: ext4
    starts its search for a group at a hash of the name, and the same names each run
    would pile the files of run after run (and their recently freed inodes) into the same
    groups. Two writers may make the same folder at once: the second rename finds it made
    (not empty: it fails, and the spare is removed; empty: it takes its place, which is as
    good, since every file is created by its path; a writer whose create went on in the
    folder so replaced gets ENOENT, and tries again by the path, _by_path)."""
    if folder in made:
        return
    up = folder.rpartition("/")[0]
    _make_folder(tmp, up, made)
    dest = os.path.join(tmp, folder)
    if not os.path.isdir(dest):
        spare = os.path.join(tmp, up, f".{os.getpid()}-{len(made)}-{time.monotonic_ns()}")
        _by_path(partial(os.mkdir, spare))
        fd = os.open(spare, _FOLDER)
        try:
            _top_of_tree(fd)
        finally:
            os.close(fd)
        try:
            os.rename(spare, dest)
        except OSError:
            os.rmdir(spare)
            if not os.path.isdir(dest):
                raise
    made.add(folder)


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
T = TypeVar("T")


def _by_path(create: Callable[[], T], tries: int = 8) -> T:
    """`create` (a mkdir or an open that creates, by path), again where it failed with
    ENOENT: its folder was looked up just before a concurrent writer's empty folder of the
    same name took its place (_make_folder), and the path now leads to the new one. Each
    writer replaces a folder at most once, so a few tries cover every writer."""
    for _ in range(tries - 1):
        try:
            return create()
        except FileNotFoundError:
            continue
    return create()


def _write_tree(
    tmp: str, files: dict[str, str], paths: dict[str, str], previous: _Previous
) -> None:
    made = {""}
    for rel, text in files.items():
        path = paths[rel]
        folder, _, name = path.rpartition("/")
        if folder not in made:
            _make_folder(tmp, folder, made)
        dest = os.path.join(tmp, path)
        data = text.encode("utf-8")
        executable = rel.endswith(".sbatch")
        if previous.link(folder, name, data, executable, dest):
            continue
        fd = _by_path(partial(os.open, dest, _NEW_FILE, 0o666))
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if executable:
                os.fchmod(fd, 0o755)
        finally:
            os.close(fd)


def _swap(new: Path, out: Path) -> Path | None:
    """Put `new` in the place of `out`; return the previous out/ (renamed aside) to delete."""
    if not out.exists():
        os.rename(new, out)
        return None
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-{os.getpid()}-", dir=new.parent))
    os.rmdir(old)
    # Two renames: should the process die between them, out/ is missing but the previous
    # contents are intact in .out.old-*, never half-written; `recover` puts them back.
    os.rename(out, old)
    os.rename(new, out)
    return old


def write_file_atomic(path: Path, text: str) -> None:
    """Write one file so that readers see the old or the new contents, never half of it."""
    parent = Path(path).resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{Path(path).name}.", dir=parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
