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
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, NoReturn

from router.config import Project, load_project
from router.errors import LoadError, PlanError, RouterError, Source, Span
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
        raise LoadError("not a plan.json: the file is not UTF-8 text", path=str(path)) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        # Line, column and a caret: a minified plan.json is all one line.
        raise LoadError(
            f"not a plan.json: {e.msg}", Span(Source(str(path), text), e.lineno, e.colno)
        ) from None
    if not isinstance(doc, dict) or "placements" not in doc:
        raise LoadError("not a plan.json: no placements", path=str(path))
    if doc.get("format_version") != "1":
        raise LoadError(
            f"plan.json format_version {doc.get('format_version')!r} is not "
            'supported (expected "1")',
            path=str(path),
        )
    _check_entries(doc, Source(str(path), text))
    # Only the name: the same plan diffed from another folder gives the same bytes.
    return Previous(f"file:{path.name}", doc)


# What the diff and the solver read of each section's entries (a hand-edited plan.json may
# say anything): field -> the JSON types it may have.
_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "placements": {
        "workload": (str,),
        "target_id": (str,),
        "rule": (str, type(None)),
        "rule_source": (str, type(None)),
    },
    "denied": {
        "workload": (str,),
        "rule": (str, type(None)),
        "rule_source": (str, type(None)),
        "message": (str, type(None)),
    },
    "unplaced": {"workload": (str,), "rule": (str, type(None)), "reasons": (list,)},
    "unrouted": {"workload": (str,), "reasons": (list,)},
}
_REQUIRED = {"workload", "target_id"}


def _check_entries(doc: dict[str, Any], source: Source) -> None:
    """LoadError at the entry's line when a section is not a list of entries of the right
    types, or a workload appears twice (router never writes either)."""
    from router.models.yamlsource import compose, locate, span

    def fail(where: tuple[Any, ...], message: str) -> NoReturn:
        try:  # JSON is YAML: its nodes know their lines
            roots = compose(source)
        except RouterError:
            roots = []
        if not roots:
            raise LoadError(message, path=source.path)
        raise LoadError(message, span(source, locate(roots[0], where)[1]))

    seen: dict[str, str] = {}
    for section, fields in _FIELDS.items():
        entries = doc.get(section, [])
        if not isinstance(entries, list):
            fail((section,), f"{section}: expected a list, got {_json_type(entries)}")
        for n, entry in enumerate(entries):
            at = f"{section}[{n}]"
            if not isinstance(entry, dict):
                fail((section, n), f"{at}: expected an object, got {_json_type(entry)}")
            for name, types in fields.items():
                if name not in entry:
                    if name in _REQUIRED:
                        fail((section, n), f'{at}: missing required field "{name}"')
                    continue
                value = entry[name]
                strings = not isinstance(value, list) or all(isinstance(r, str) for r in value)
                if not isinstance(value, types) or not strings:
                    want = "a list of strings" if name == "reasons" else "a string"
                    fail(
                        (section, n, name), f"{at}.{name}: expected {want}, got {_json_type(value)}"
                    )
            name = entry["workload"]
            if name in seen:
                fail(
                    (section, n, "workload"),
                    f"{at}: workload {name!r} is already in the "
                    f"previous plan at {seen[name]}; a plan names each workload once",
                )
            seen[name] = at


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
