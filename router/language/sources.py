"""Policy files and texts → syntax trees, each file's tree kept between runs.

`parse_text` reads a file's tree (ast.PolicyFile) back from the cache folder (cache.py's)
when this router parsed the same text at the same path before, else parses it (parser.py)
and keeps the tree. The parser is lark with the grammar's tables: importing lark and making
the parser was ~0.1 s of every `router plan`, where reading a kept tree back takes ~3 ms,
and a run whose trees are all kept does not import lark at all.

A kept tree is keyed by its path and text and by the bytes of the grammar, of lark's
`__init__.py` (its version) and of the modules that make a tree or define what it holds
(TREE_MODULES), so an edited grammar, parser or ast, or another lark, never reads a stale
tree. One file per policy path (named by a hash of the
path): an edited policy replaces its entry. Only trees are kept, never errors, and only as
a speed-up: a file that is missing, broken, of another key or someone else's is ignored,
and one that cannot be written is not. `ROUTER_CACHE_DIR=""` turns it off with the tables.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import re
import sys
import tempfile
from pathlib import Path

from router.errors import ErrorGroup, PolicyError, RouterError, Span
from router.language import ast
from router.language.cache import _usable, cache_folder, grammar_file

_HERE = Path(__file__).resolve().parent
# Modules whose code makes a tree (parser, grammar, limits, names) or defines its classes
# (ast; errors for Source and Span; quantity for literal values): tests/language/
# test_sources.py checks that a tree holds nothing from elsewhere.
TREE_MODULES = (
    _HERE / "ast.py",
    _HERE / "parser.py",
    _HERE / "grammar.py",
    _HERE / "limits.py",
    _HERE / "names.py",
    _HERE.parent / "errors.py",
    _HERE.parent / "quantity.py",
)
_MAKERS: list[bytes] = []  # the bytes above and the grammar's, hashed once per process


def tree_key(text: str, path: str) -> bytes | None:
    """What a kept tree depends on, hashed; None where the modules' sources are not there
    to read (then no tree is kept)."""
    if not _MAKERS:
        digest = hashlib.sha256(sys.version.encode())
        # lark's version (the line in its __init__.py), read without importing it
        spec = importlib.util.find_spec("lark")
        try:
            if spec is None or spec.origin is None:
                return None
            for file in (*TREE_MODULES, grammar_file(), Path(spec.origin)):
                digest.update(file.read_bytes())
        except OSError:
            return None
        _MAKERS.append(digest.digest())
    parts = [_MAKERS[0], path.encode(errors="surrogatepass"), text.encode(errors="surrogatepass")]
    return hashlib.sha256(b"\0".join(parts)).digest()


def _entry(path: str) -> Path | None:
    name = hashlib.sha256(os.path.abspath(path).encode(errors="surrogatepass")).hexdigest()[:32]
    return _usable(cache_folder(), name, kind="tree", suffix=".pickle")


def _kept(entry: Path, key: bytes) -> ast.PolicyFile | None:
    try:
        kept = pickle.loads(entry.read_bytes())
    except Exception:  # none yet, or broken (half written): parsed anew, then replaced
        return None
    ok = isinstance(kept, tuple) and len(kept) == 2 and kept[0] == key
    return kept[1] if ok and isinstance(kept[1], ast.PolicyFile) else None


def _keep(entry: Path, key: bytes, tree: ast.PolicyFile) -> None:
    try:
        data = pickle.dumps((key, tree), protocol=pickle.HIGHEST_PROTOCOL)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tree-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, entry)  # whole or not at all, for a concurrent run
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, RecursionError, pickle.PicklingError):
        pass


def parse_text(text: str, path: str) -> ast.PolicyFile:
    """Parse one policy file's text; `path` is how errors name the file. The tree is the
    parser's (parser.parse_text), read back from the cache folder when it was kept."""
    entry = _entry(path)
    key = tree_key(text, path) if entry is not None else None
    if entry is not None and key is not None and (kept := _kept(entry, key)) is not None:
        return kept
    from router.language import parser  # lark: only when a tree is parsed

    tree = parser.parse_text(text, path)
    if entry is not None and key is not None:
        _keep(entry, key, tree)
    return tree


def policy_span(pf: ast.PolicyFile) -> Span:
    """Where the file's `policy NAME` is (the tree keeps the name, not the statement)."""
    pattern = re.compile(rf"(\s*)policy\s+{re.escape(pf.name or '')}\b")
    for number, line in enumerate(pf.span.source.text.splitlines(), 1):
        if m := pattern.match(line):
            start = len(m.group(1)) + 1
            return Span(pf.span.source, number, start, number, m.end() + 1)
    return Span(pf.span.source, 1, 1)


def parse_files(paths: list[str | Path] | list[str] | list[Path]) -> ast.Policy:
    """Parse several policy files, in file-name order, into one Policy (not yet checked)."""
    texts: list[tuple[str, str]] = []
    errors: list[RouterError] = []
    for path in sorted(paths, key=str):
        try:
            texts.append((str(path), Path(path).read_text(encoding="utf-8-sig")))
        except OSError as e:
            errors.append(PolicyError(f"cannot read {path}: {e.strerror}", path=str(path)))
        except UnicodeDecodeError:
            from router.models.yamlsource import read_source  # the same position and hint

            try:
                read_source(Path(path), str(path))
            except RouterError as e:
                errors.append(PolicyError(e.message, e.span, hint=e.hint, path=str(path)))
    return parse_sources(texts, errors)


def parse_sources(
    texts: list[tuple[str, str]], errors: list[RouterError] | None = None
) -> ast.Policy:
    """Parse (path, text) pairs, in the order given, into one Policy (not yet checked);
    `path` is how errors and rule sources name each text."""
    errors = list(errors or [])
    files: list[ast.PolicyFile] = []
    for path, text in texts:
        try:
            files.append(parse_text(text, path))
        except RouterError as e:
            errors.append(e)
    policy = ast.Policy(None, files)
    for pf in files:
        if policy.name is None:
            policy.name = pf.name
        elif pf.name is not None and pf.name != policy.name:
            message = f"policy `{pf.name}`, but another file names it `{policy.name}`"
            errors.append(PolicyError(message, policy_span(pf), hint="one name for all files"))
        for st in pf.statements:
            if isinstance(st, ast.Let):
                policy.lets.append(st)
            elif isinstance(st, ast.Deny):
                policy.denies.append(st)
            elif isinstance(st, ast.Rule):
                policy.rules.append(st)
            elif isinstance(st, ast.Quota):
                policy.quotas.append(st)
            elif isinstance(st, ast.Spread):
                policy.spreads.append(st)
            else:
                policy.checks.append(st)
    if errors:
        raise errors[0] if len(errors) == 1 else ErrorGroup(errors)
    return policy
