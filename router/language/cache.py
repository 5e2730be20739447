"""The LALR tables of the grammar, kept between runs in the user's cache folder.

lark takes ~0.3 s to build the tables of router.lark and ~0.05 s to read them back
(`Lark.save` / `Lark.load`). The file is named by a hash of everything that shapes the
tables (the grammar text, the options, lark's and Python's versions), so an edited grammar or
another lark never reads stale tables; the lexer and the transformer are not in the file (lark
makes the lexer anew from its class, and takes the transformer when loading).

The cache is only a speed-up: a folder that cannot be written, a file that does not load (lark
checks the hash on its first line, and builds the tables anew when reading fails, as it does
for a file half written by a concurrent run), or a file another user owns (it is a pickle)
means the tables are built as without it.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import sys
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lark import Lark, Transformer

CACHE_ENV = "ROUTER_CACHE_DIR"  # where the tables go; "" turns the cache off


def grammar_file() -> Traversable:
    """router.lark: the copy shipped in the wheel first, else the repository's."""
    packaged = importlib.resources.files("router") / "grammar" / "router.lark"
    here = Path(__file__).resolve().parents[2] / "grammar" / "router.lark"
    return packaged if packaged.is_file() else here


def cache_folder() -> Path | None:
    """$ROUTER_CACHE_DIR, else $XDG_CACHE_HOME/router, else ~/.cache/router; None if off."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None:
        return Path(chosen) if chosen else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "router")


def table_key(grammar: str, options: dict[str, Any]) -> str:
    """What the tables depend on, hashed: the file name of the cached tables."""
    import lark  # here: a run whose policy trees are all kept (sources.py) never imports it

    shown = repr(sorted((k, getattr(v, "__qualname__", repr(v))) for k, v in options.items()))
    text = "\0".join([grammar, shown, lark.__version__, sys.version])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cached_lark(grammar: str, transformer: Transformer[Any, Any], **options: Any) -> Lark:
    """`Lark(grammar, transformer=transformer, **options)`, its tables read from the cache
    folder when they are there, and saved there when they were not."""
    from lark import Lark

    path = _usable(cache_folder(), table_key(grammar, options))
    if path is None:
        return Lark(grammar, transformer=transformer, **options)
    return Lark(grammar, transformer=transformer, cache=str(path), **options)


def _usable(
    folder: Path | None, key: str, kind: str = "grammar", suffix: str = ".lark"
) -> Path | None:
    """The cache file, if the cache is on, its folder can be made, and the file is not
    someone else's (it is a pickle: only the user's own is read)."""
    if folder is None:
        return None
    path = folder / f"{kind}-{key}{suffix}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if path.exists() and path.stat().st_uid != os.getuid():
            return None
    except OSError:
        return None
    return path
