"""The routing language: parse `.route` files, check them, and format them.

policy = load_policy("policies/")     # parse every .route file below, in name order, check
"""

from __future__ import annotations

from pathlib import Path

from router.errors import PolicyError
from router.language.ast import Policy
from router.language.checker import check_policy
from router.language.sources import parse_files, parse_sources, parse_text

__all__ = [
    "check_policy",
    "load_policy",
    "parse_files",
    "parse_sources",
    "parse_text",
    "policy_files",
]


def policy_files(path: str | Path | list[str] | list[Path] | list[str | Path]) -> list[Path]:
    """The .route files of a file, a folder (searched recursively) or a list of them, sorted."""
    paths = path if isinstance(path, list) else [path]
    found: list[Path] = []
    for item in paths:
        p = Path(item)
        if p.is_dir():
            files = sorted(p.rglob("*.route"))
            if not files:
                raise PolicyError(f"no .route files in {p}", path=str(p))
            found.extend(files)
        elif p.is_file():
            found.append(p)
        else:
            raise PolicyError(f"policy path not found: {p}", path=str(p))
    if not found:
        raise PolicyError("no policy files given")
    return found


def load_policy(path: str | Path | list[str] | list[Path] | list[str | Path]) -> Policy:
    """Parse and check the policy at `path` (a .route file, a folder of them, or a list)."""
    return check_policy(parse_files(policy_files(path)))
