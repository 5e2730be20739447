"""Write out/ atomically: everything goes to a temporary sibling folder first, which then
takes the place of the old out/ in one rename. A failed or interrupted plan leaves the
previous out/ as it was; artifacts of workloads that left the plan disappear with it.

The siblings are `.out.new-<pid>-*` (being written) and `.out.old-<pid>-*` (the previous
out/ during the swap). A run that was killed leaves one behind; the next run recovers:
if out/ is missing but an `.old` sibling exists, the kill came between the two renames of
the swap and that sibling is the previous out/, intact, so it is put back first. Siblings
of processes that are still alive are left alone (two plans may run side by side).

Test hook: ROUTER_TEST_PAUSE_BEFORE_SWAP=<seconds> sleeps after every file is written and
before the swap, so a test can kill the process there. It does nothing else.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from router.errors import PlanError

TEST_PAUSE_ENV = "ROUTER_TEST_PAUSE_BEFORE_SWAP"


def _safe(relative: str) -> PurePosixPath:
    p = PurePosixPath(relative)
    if p.is_absolute() or ".." in p.parts or not p.parts or "\\" in relative:
        raise PlanError(f"refusing to write outside out/: {relative!r}")
    return p


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


def write_out(out: Path, files: dict[str, str], protect: Iterable[Path] = ()) -> None:
    """Replace the folder `out` with exactly `files` ({relative path: text})."""
    out = Path(out)
    _check_protected(out, protect)
    paths = {rel: _safe(rel) for rel in files}  # every path checked before anything is written
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    recover(out)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise PlanError(f"{out} exists and is not a folder")
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-{os.getpid()}-", dir=parent))
    try:
        for rel, text in files.items():
            path = tmp.joinpath(*paths[rel].parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            if rel.endswith(".sbatch"):
                path.chmod(0o755)
        # One sync for the whole folder before the swap, not an fsync per file: a plan of
        # 100k workloads writes 100k files, and the swap only needs them durable as a set.
        os.sync()
        pause = os.environ.get(TEST_PAUSE_ENV)
        if pause:
            time.sleep(float(pause))
        _swap(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap(new: Path, out: Path) -> None:
    if not out.exists():
        os.rename(new, out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-{os.getpid()}-", dir=new.parent))
    os.rmdir(old)
    # Two renames: should the process die between them, out/ is missing but the previous
    # contents are intact in .out.old-*, never half-written; `recover` puts them back.
    os.rename(out, old)
    os.rename(new, out)
    shutil.rmtree(old, ignore_errors=True)


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
