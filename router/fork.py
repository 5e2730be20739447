"""Independent parts of one job side by side, in forked children: `run_parts(fn, items)` is
`[fn(item) for item in items]`, the first item run here and the others each in a child of
this process, which sends its result back (pickled, through a pipe) and exits.

Why fork and not threads or a process pool: writing out/ is Python code (rendering) and
system calls (creating files) over data this process already holds; a thread would hold the
GIL, and a pool would pickle the whole plan to its workers. A forked child reads the plan
where it is (the pages stay shared until written; the cyclic collector, off while `router
plan` runs, does not touch them).

The results and the error are what the loop would give: results in item order, and when
items fail, the first failing item's exception (a RouterError comes back as itself, with its
message, hint and span; anything else as ChildFailed naming it). Every child is waited for,
and on an error of this process (or Ctrl-C) the children are killed first. Where fork is
missing (or `parallel` is False) the items simply run one after the other here.

`start(fn)` runs one part in a child and returns at once: its `result()` is read when this
process needs it (as the result of run_parts' children), and `cancel()` kills a child whose
result is no longer wanted.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any, Generic, TypeVar

from router.errors import RouterError

T = TypeVar("T")
R = TypeVar("R")


class ChildFailed(Exception):
    """A part run in a child raised something that is not a RouterError (a bug)."""


def can_fork() -> bool:
    return hasattr(os, "fork") and sys.platform != "win32"


def run_parts(fn: Callable[[T], R], items: Sequence[T], parallel: bool = True) -> list[R]:
    if not parallel or len(items) < 2 or not can_fork():
        return [fn(item) for item in items]
    sys.stdout.flush()  # nothing buffered here is written twice (the children _exit)
    sys.stderr.flush()
    children = [_start(fn, item) for item in items[1:]]
    try:
        first = fn(items[0])
    except BaseException:
        for pid, fd in children:
            _kill(pid, fd)
        raise
    outcomes = [_finish(pid, fd) for pid, fd in children]
    for ok, value in outcomes:
        if not ok:
            raise value
    return [first, *(value for _, value in outcomes)]


class Started(Generic[R]):
    """A part running in a child (start): its result, read once, or the child killed."""

    def __init__(self, pid: int, fd: int) -> None:
        self._child: tuple[int, int] | None = (pid, fd)

    def result(self) -> R:
        """The part's result (waiting for the child), or its error raised here."""
        if self._child is None:
            raise RuntimeError("a started part's result is read once")
        child, self._child = self._child, None
        ok, value = _finish(*child)
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def cancel(self) -> None:
        """Kill the child unless its result was read; nothing once it was."""
        if self._child is not None:
            child, self._child = self._child, None
            _kill(*child)


def start(fn: Callable[[], R]) -> Started[R]:
    """Run `fn()` in a child of this process (fork must be available: can_fork)."""
    sys.stdout.flush()  # as in run_parts
    sys.stderr.flush()
    pid, fd = _start(lambda _: fn(), None)
    return Started(pid, fd)


def _start(fn: Callable[[T], Any], item: T) -> tuple[int, int]:
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: run the item, send the outcome, and never return
        code = 1
        try:
            os.close(read)
            _die_with(parent)
            try:
                outcome: tuple[bool, Any] = (True, fn(item))
            except RouterError as e:
                outcome = (False, _portable(e))
            except BaseException as e:  # a bug, reported by the parent
                outcome = (False, ChildFailed(f"{type(e).__name__}: {e}"))
            _send(write, pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL))
            code = 0
        finally:
            os._exit(code)  # no atexit, no finally of the parent's frames, no buffers
    os.close(write)
    return pid, read


def _portable(e: RouterError) -> RouterError | ChildFailed:
    """`e` if it survives pickling as itself, else ChildFailed with its text."""
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:
        return ChildFailed(f"{type(e).__name__}: {e}")


def _send(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.close(fd)


def _receive(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _finish(pid: int, fd: int) -> tuple[bool, Any]:
    """The child's (ok, result or exception), once it has exited."""
    data = _receive(fd)  # read before waiting: a large result fills the pipe
    _, status = os.waitpid(pid, 0)
    if data:
        ok, value = pickle.loads(data)
        return bool(ok), value
    if os.WIFSIGNALED(status):
        why = f"was killed by signal {os.WTERMSIG(status)}"
    else:
        why = f"exited with status {os.waitstatus_to_exitcode(status)}"
    return False, ChildFailed(f"a process writing part of out/ {why}")


def _kill(pid: int, fd: int) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(fd)


def _die_with(parent: int) -> None:
    """Linux: the kernel kills this child should `parent` die (kill -9), so no child goes
    on writing into a folder the next run is removing. Elsewhere nothing (it ends anyway)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl
        os._exit(1)
