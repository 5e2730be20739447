"""Write out/ atomically: everything goes to a temporary sibling folder first, which then
takes the place of the old out/ in one rename. A failed or interrupted plan leaves the
previous out/ as it was; artifacts of workloads that left the plan disappear with it."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from router.errors import PlanError


def _safe(relative: str) -> PurePosixPath:
    p = PurePosixPath(relative)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise PlanError(f"refusing to write outside out/: {relative!r}")
    return p


def write_out(out: Path, files: dict[str, str]) -> None:
    """Replace the folder `out` with exactly `files` ({relative path: text})."""
    out = Path(out)
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    if out.exists() and not out.is_dir():
        raise PlanError(f"{out} exists and is not a folder")
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=parent))
    try:
        for rel, text in files.items():
            path = tmp.joinpath(*_safe(rel).parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            if rel.endswith(".sbatch"):
                path.chmod(0o755)
        _swap(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap(new: Path, out: Path) -> None:
    if not out.exists():
        os.rename(new, out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=new.parent))
    os.rmdir(old)
    # Two renames: should the process die between them, out/ is missing but the previous
    # contents are intact in .out.old-*, never half-written.
    os.rename(out, old)
    os.rename(new, out)
    shutil.rmtree(old, ignore_errors=True)
