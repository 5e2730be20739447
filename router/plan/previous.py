"""The previous plan a new one is diffed against: a plan.json file, or `git:REF`.

For `git:REF` the previous policy, inventory and workloads are read from that revision of
the project's git repository (`git ls-tree` and `git cat-file`, never a checkout, so the
working tree and the index are not touched) into a temporary folder and planned there.
A revision that holds none of the project's inputs yet (the pull request that adds them)
is an empty previous plan: everything is added.

The previous placements also feed the solver's stability level (`SolveOptions.previous`),
so among equally good plans the one that keeps workloads where they were wins.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import UnionType
from typing import Annotated, Any, Literal, NoReturn, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from router.config import Project, load_project
from router.errors import LoadError, PlanError, RouterError, Source, Span, did_you_mean
from router.models.plan import PlanDocument
from router.solve.cpsat import SolveOptions

GIT_PREFIX = "git:"
EMPTY_DOC: dict[str, Any] = {"denied": [], "placements": [], "unplaced": [], "unrouted": []}


@dataclass
class Previous:
    against: str  # how plan.json names it: "git:REF" or "file:NAME"
    doc: dict[str, Any]
    note: str | None = None  # said on stderr (e.g. "origin/main has no router project yet")
    assignment: dict[str, str] = field(default_factory=dict)  # workload -> target id

    def __post_init__(self) -> None:
        if not self.assignment:
            self.assignment = {
                p["workload"]: p["target_id"] for p in self.doc.get("placements", [])
            }


# Plans a project (the one at a git revision) into its plan document. router.api passes its
# own, so that the stages are put together in one place.
Planner = Callable[[Project, SolveOptions], dict[str, Any]]


def load_previous(
    spec: str, project: Project, options: SolveOptions | None = None, *, planner: Planner
) -> Previous:
    if spec.startswith(GIT_PREFIX):
        return previous_from_git(spec[len(GIT_PREFIX) :], project, options, planner=planner)
    return previous_from_file(Path(spec))


def previous_from_file(path: Path) -> Previous:
    try:
        text = path.read_text(encoding="utf-8-sig")  # an editor's byte order mark is fine
    except OSError as e:
        raise LoadError(
            f"cannot read the previous plan: {e.strerror}",
            path=str(path),
            hint="give a plan.json written by `router plan`, or git:REF",
        ) from None
    except UnicodeDecodeError:
        from router.models.yamlsource import read_source

        try:
            read_source(path, str(path))  # the error at the line and column of the bad byte
        except LoadError as e:
            raise LoadError(f"not a plan.json: {e.message}", e.span, hint=e.hint) from None
        raise
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        # Line, column and a caret: a minified plan.json is all one line.
        raise LoadError(
            f"not a plan.json: {e.msg}", Span(Source(str(path), text), e.lineno, e.colno)
        ) from None
    except (RecursionError, ValueError):  # nested past Python's stack, or a 4,300-digit number
        raise _json_limit(path, text) from None
    source = Source(str(path), text)
    if not isinstance(doc, dict) or "placements" not in doc:
        _fail(source, (), "not a plan.json: no placements",
              "give a plan.json written by `router plan`, or git:REF")  # fmt: skip
    if doc.get("format_version") != "1":
        _fail(
            source,
            ("format_version",),
            f"plan.json format_version {doc.get('format_version')!r} is not "
            'supported (expected "1")',
        )
    _check_entries(doc, source)
    # Only the name: the same plan diffed from another folder gives the same bytes.
    return Previous(f"file:{path.name}", doc)


_LONG_NUMBER = re.compile(r"\d{4300,}")


def _json_limit(path: Path, text: str) -> LoadError:
    """Where a JSON text passes a limit of Python's reader: a number of 4,300 digits or more,
    or arrays and objects nested hundreds deep (brackets counted outside strings)."""
    source = Source(str(path), text)

    def at(offset: int) -> Span:
        line = text.count("\n", 0, offset) + 1
        return Span(source, line, offset - (text.rfind("\n", 0, offset) + 1) + 1)

    if m := _LONG_NUMBER.search(text):
        return LoadError("not a plan.json: a number of more than 4,300 digits", at(m.start()))
    depth, in_string, escaped = 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > 500:
                return LoadError("not a plan.json: nested more than 500 deep", at(i))
        elif ch in "]}":
            depth -= 1
    return LoadError("not a plan.json: JSON that Python cannot read", at(0))


def _fail(source: Source, where: tuple[Any, ...], message: str, hint: str | None = None
          ) -> NoReturn:  # fmt: skip
    """LoadError at the node of the JSON document at path `where` (as deep as it goes)."""
    from router.models.yamlsource import compose, locate, span

    try:  # JSON is YAML: its nodes know their lines
        roots = compose(source)
    except RouterError:
        roots = []
    if not roots:
        raise LoadError(message, path=source.path, hint=hint)
    raise LoadError(message, span(source, locate(roots[0], where)[1]), hint=hint)


def _check_entries(doc: dict[str, Any], source: Source) -> None:
    """LoadError at the fault's line when the document is not what PlanDocument (the model
    router writes plan.json through) reads, or a workload appears twice (router never writes
    either)."""

    def fail(where: tuple[Any, ...], message: str, hint: str | None = None) -> NoReturn:
        _fail(source, where, message, hint)

    try:
        PlanDocument.model_validate(doc, strict=True)
    except ValidationError as e:
        error = e.errors()[0]
        loc = tuple(error["loc"])
        if error["type"] == "missing":
            fail(loc[:-1], f'{_dotted(loc[:-1])}: missing required field "{loc[-1]}"')
        if error["type"] == "extra_forbidden":
            known = _model_at(loc[:-1]).model_fields
            fail(
                loc,
                f'{_dotted(loc[:-1])}: unknown field "{loc[-1]}" (router does not write it)',
                did_you_mean(str(loc[-1]), known),
            )
        want = _expected(loc) or error["msg"]
        fail(loc, f"{_dotted(loc)}: expected {want}, got {_json_type(error['input'])}")
    seen: dict[str, str] = {}
    for section in ("placements", "denied", "unplaced", "unrouted"):
        for n, entry in enumerate(doc[section]):
            at, name = f"{section}[{n}]", entry["workload"]
            if name in seen:
                fail(
                    (section, n, "workload"),
                    f"{at}: workload {name!r} is already in the "
                    f"previous plan at {seen[name]}; a plan names each workload once",
                )
            seen[name] = at


def _dotted(loc: tuple[Any, ...]) -> str:
    """("placements", 0, "rank") -> "placements[0].rank"."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out or "the document"


def _unwrap(t: Any) -> Any:
    """The type inside Annotated[...] and X | None."""
    while True:
        if get_origin(t) is Annotated:
            t = get_args(t)[0]
        elif get_origin(t) in (Union, UnionType):
            rest = [a for a in get_args(t) if a is not type(None)]
            if len(rest) != 1:
                return t
            t = rest[0]
        else:
            return t


def _type_at(loc: tuple[Any, ...]) -> Any:
    """The model's type at a location of the document (None where it cannot tell)."""
    t: Any = PlanDocument
    for part in loc:
        t = _unwrap(t)
        if isinstance(t, type) and issubclass(t, BaseModel) and part in t.model_fields:
            t = t.model_fields[part].annotation
        elif get_origin(t) is list and isinstance(part, int):
            t = get_args(t)[0]
        elif get_origin(t) is dict:
            t = get_args(t)[1]
        else:
            return None
    return _unwrap(t)


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel]:
    t = _type_at(loc)
    return t if isinstance(t, type) and issubclass(t, BaseModel) else PlanDocument


def _expected(loc: tuple[Any, ...]) -> str | None:
    """What the model wants at `loc`, in words."""
    t = _type_at(loc)
    names = {str: "a string", int: "an integer", bool: "a boolean", float: "a number"}
    if t in names:
        return names[t]
    if (isinstance(t, type) and issubclass(t, BaseModel)) or get_origin(t) is dict:
        return "an object"
    if get_origin(t) is list:
        item = _unwrap(get_args(t)[0])
        return "a list of strings" if item is str else "a list"
    if get_origin(t) is Literal:
        return " or ".join(json.dumps(a) for a in get_args(t))
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"[:80]
    return "a list" if isinstance(value, list) else "an object"


def _git(cwd: Path, *args: str, data: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-C", str(cwd), *args], input=data, capture_output=True, check=False
        )
    except FileNotFoundError:
        raise PlanError("--previous git:REF needs git on the PATH") from None
    if done.returncode:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise PlanError(
            f"git {' '.join(args[:2])} failed: {message[-1] if message else done.returncode}"
        )
    return done.stdout


def _in_repo(path: Path, top: Path, what: str) -> str:
    try:
        rel = path.resolve().relative_to(top)
    except ValueError:
        raise PlanError(f"{what} {path} is outside the git repository {top}") from None
    return rel.as_posix() if rel.parts else "."


def previous_from_git(
    ref: str, project: Project, options: SolveOptions | None = None, *, planner: Planner
) -> Previous:
    """Plan the project as it was at `ref` with `planner`; the caller's project gives the
    paths."""
    against = f"{GIT_PREFIX}{ref}"
    root = project.root
    try:
        top = Path(_git(root, "rev-parse", "--show-toplevel").decode().strip()).resolve()
    except PlanError as e:
        raise PlanError(
            f"--previous {against}: the project {root} is not in a git repository ({e.message})",
            hint="give a plan.json instead, or run inside the platform's repo",
        ) from None
    try:
        commit = _git(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except PlanError:
        raise PlanError(
            f"no git revision {ref!r} in {top}",
            hint="in CI, fetch the history (actions/checkout with fetch-depth: 0)",
        ) from None
    sha = commit.decode().strip()
    parts = {
        "project": _in_repo(root, top, "the project folder"),
        "policy": _in_repo(project.policy, top, "the policy"),
        "inventory": _in_repo(project.inventory, top, "the inventory"),
        "workloads": _in_repo(project.workloads, top, "the workloads"),
    }
    out_rel = (
        PurePosixPath(_in_repo(project.out, top, "out/")) if _inside(project.out, top) else None
    )
    with tempfile.TemporaryDirectory(prefix="router-previous-") as tmp:
        base = Path(tmp)
        present = {k: _extract(top, sha, rel, base, out_rel) for k, rel in parts.items()}
        inputs = ("policy", "inventory", "workloads")
        if not any(present[k] for k in inputs):
            return Previous(
                against, dict(EMPTY_DOC), note=f"{ref} has no router project yet: everything is new"
            )
        missing = [k for k in inputs if not present[k]]
        if missing:
            raise PlanError(
                f"{ref} has no {' or '.join(parts[k] for k in missing)}",
                hint="--previous compares with the project as it was at REF",
            )

        def moved(p: Path) -> Path:
            return base / _in_repo(p, top, "path")

        # Today's layout applied to the revision's files: router.yaml and -p/-i/-w as given now.
        at_ref = load_project(
            moved(project.root),
            policy=moved(project.policy),
            inventory=moved(project.inventory),
            workloads=moved(project.workloads),
            out=base / ".router-previous-out",
        )
        solve_options = SolveOptions(
            workers=options.workers if options else SolveOptions().workers,
            deterministic_limit=options.deterministic_limit if options else None,
        )
        try:
            doc = planner(at_ref, solve_options)
        except RouterError as e:
            text = e.format().replace(f"{base}/", f"{ref}:")
            raise PlanError(f"cannot plan the previous revision {against}:\n{text}") from None
        return Previous(against, doc)


def _inside(path: Path, top: Path) -> bool:
    try:
        path.resolve().relative_to(top)
    except ValueError:
        return False
    return True


def _extract(top: Path, sha: str, rel: str, base: Path, skip: PurePosixPath | None) -> bool:
    """Write the files under `rel` at revision `sha` to base/rel; False if there are none."""
    listing = _git(top, "ls-tree", "-r", "-z", "--full-tree", sha, "--", rel)
    blobs: list[tuple[str, str]] = []
    for entry in listing.decode("utf-8", errors="surrogateescape").split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        mode, kind, blob = meta.split()
        # Symlinks and submodules are not inputs router reads from a revision.
        if kind != "blob" or mode == "120000":
            continue
        if skip is not None and skip.parts and PurePosixPath(path).is_relative_to(skip):
            continue
        blobs.append((path, blob))
    if not blobs:
        return False
    data = _git(top, "cat-file", "--batch", data="".join(f"{b}\n" for _, b in blobs).encode())
    pos = 0
    for path, _ in blobs:
        header_end = data.index(b"\n", pos)
        size = int(data[pos:header_end].split()[2])
        content = data[header_end + 1 : header_end + 1 + size]
        pos = header_end + 1 + size + 1
        target = base.joinpath(*PurePosixPath(path).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return True
