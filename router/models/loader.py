"""Loading inventory and workload YAML files into models, with errors at file:line:column.

`yamlsource` turns the YAML into plain data and keeps the nodes; a pydantic error's `loc` is
mapped back to a line by walking the nodes along it (the deepest part of the path that the file
has) — only when there is an error, which keeps the good path fast. Workloads equal but for
their names are validated once (classes.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError
from yaml.nodes import Node, ScalarNode, SequenceNode

from router.errors import ErrorGroup, LoadError, RouterError, Source, Span, did_you_mean
from router.gcpause import paused_gc
from router.models import prescan
from router.models.blockyaml import plain_reader, scan
from router.models.classes import WorkloadClasses
from router.models.dependencies import dependency_errors
from router.models.fields import show, value_problem
from router.models.inventory import Inventory
from router.models.running import Running
from router.models.workload import Workload
from router.models.yamlsource import Builder, compose, locate, read_source, span

__all__ = [
    "WorkloadSpans",
    "check_running",
    "load_inventory",
    "load_running",
    "load_workloads",
    "validate_node",
    "workload_files",
]

MAX_ERRORS = 100
_TAG = re.compile(r"\[key\]|[a-z][a-z-]*\[.*\]")  # pydantic's own parts of a loc
YAML_SUFFIXES = (".yaml", ".yml")


# ---- mapping pydantic errors back to the file -----------------------------------------------


def _model_at(model: type[BaseModel], path: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that validates the mapping at path, if any."""
    current: type[BaseModel] | None = model
    for part in path:
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part) if current else None
        current = _inner_model(field.annotation) if field else None
    return current


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _inner_model(arg)
        if found:
            return found
    return None


def _path_text(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = part if part.replace("_", "a").isalnum() else show(part)
            out += f".{text}" if out else text
    return out


def _expected(ctx: dict[str, Any]) -> list[str]:
    return [s.strip("'") for s in str(ctx.get("expected", "")).replace(" or ", ", ").split(", ")]


def _convert(error: Any, root: Node, source: Source, model: type[BaseModel]) -> LoadError:
    """One pydantic error as a LoadError at the line of the field it is about."""
    loc = tuple(p for p in error["loc"] if isinstance(p, int) or not _TAG.fullmatch(p))
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    on_key = error["loc"][-1:] == ("[key]",)
    hint = None
    if kind == "extra_forbidden":
        loc, name, on_key = loc[:-1], loc[-1], True
        message = f'unknown field "{name}"'
        fields = _model_at(model, loc)
        hint = did_you_mean(str(name), fields.model_fields) if fields else None
        key, node = locate(root, (*loc, name))
    elif kind == "missing":
        loc, name = loc[:-1], loc[-1]
        message = f'missing required field "{name}"'
        key, node = locate(root, loc)
    elif kind == "router_cross":  # about several fields: the message names them
        message = error["msg"]
        hint = ctx.get("hint")
        where = ctx.get("path") or [ctx.get("field", "")]
        key, node = locate(root, (*loc, *where))
    else:
        message = _message(kind, error["msg"], value, ctx)
        if kind == "literal_error" and isinstance(value, str):
            hint = did_you_mean(value, _expected(ctx))
        key, node = locate(root, loc)
    if key is not None and (on_key or not isinstance(node, ScalarNode)):
        node = key  # the key of a field whose value spans lines, or of an unknown field
    text = _path_text(loc)
    return LoadError(f"{text}: {message}" if text else message, span(source, node), hint=hint)


def _message(kind: str, msg: str, value: Any, ctx: dict[str, Any]) -> str:
    if kind == "router":
        return msg
    if kind == "literal_error":
        names = ", ".join(f'"{e}"' for e in _expected(ctx))
        return f"must be one of {names}, got {show(value)}"
    simple = {
        "model_type": "a mapping",
        "model_attributes_type": "a mapping",
        "dict_type": "a mapping",
        "list_type": "a list",
        "string_type": "a string",
        "int_type": "a whole number",
        "bool_type": "true or false",
        "float_type": "a number",
    }
    if kind in simple:
        return f"must be {simple[kind]}, got {show(value)}"
    return msg[:1].lower() + msg[1:]


def _validate(
    model: type[BaseModel], data: Any, root: Node, source: Source, errors: list[RouterError]
) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raw = e.errors(include_url=False)
        seen = {(_plain(err["loc"]), err["msg"]) for err in raw}
        found = [
            err for err in raw if not _from_node_set(_plain(err["loc"]), err["msg"], seen, data)
        ]
        errors.extend(_convert(err, root, source, model) for err in found)
        return None


def _plain(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(p for p in loc if isinstance(p, int) or not _TAG.fullmatch(p))


def _from_node_set(
    loc: tuple[Any, ...], msg: str, seen: set[tuple[tuple[Any, ...], str]], data: Any
) -> bool:
    """Whether an error is at a target's field that the target drew from a node set whose own
    error says the same: said once, at the node set, not again at every target naming it."""
    if len(loc) < 5 or loc[0] != "clusters" or loc[2] not in ("partitions", "node_pools"):
        return False
    cluster, target, field = _at(data, loc[:2]), _at(data, loc[:4]), loc[4]
    if not isinstance(cluster, dict) or not isinstance(target, dict) or field in target:
        return False
    names, sets = target.get("node_sets"), cluster.get("node_sets")
    if not isinstance(names, list) or not isinstance(sets, list):
        return False
    index = {s.get("name"): k for k, s in enumerate(sets) if isinstance(s, dict)}
    return any(
        ((*loc[:2], "node_sets", index[n], *loc[4:]), msg) in seen for n in names if n in index
    )


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        if isinstance(data, dict) and isinstance(part, str):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        else:
            return None
    return data


def _raise(errors: list[RouterError]) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        shown = errors[:MAX_ERRORS]
        if len(errors) > MAX_ERRORS:
            shown.append(LoadError(f"... and {len(errors) - MAX_ERRORS} more errors"))
        raise ErrorGroup(shown)


# ---- public ---------------------------------------------------------------------------------


def validate_node(
    model: type[BaseModel], data: Any, node: Node, source: Source
) -> tuple[Any, list[RouterError]]:
    """`data`, the value of the YAML `node` of `source`, as `model`: (the model, or None, and
    its errors at the lines of their fields). For YAML that holds a model inside other data
    (the workload of a `router test` case)."""
    errors: list[RouterError] = []
    return _validate(model, data, node, source, errors), errors


def load_inventory(path: str | os.PathLike[str]) -> Inventory:
    """The inventory in a YAML file holding one mapping with `clusters:`."""
    found = _load_one(path, Inventory, "an inventory", "clusters")
    assert isinstance(found, Inventory)
    return found


def load_running(path: str | os.PathLike[str]) -> Running:
    """What is already running (router/models/running.py): one mapping with `running:`."""
    found = _load_one(path, Running, "the running work", "running")
    assert isinstance(found, Running)
    return found


def check_running(
    inventory: Inventory, running: Running | None, path: str | os.PathLike[str] | None
) -> None:
    """Every running item names a node of the inventory; else a LoadError at the item's
    key in the running-work file (read again for the position: only on the error path)."""
    from router.models.capacity import UnknownNode, node_classes

    if running is None:
        return
    try:
        node_classes(inventory, running)
    except UnknownNode as e:
        if path is None:
            raise
        display = os.fspath(path)
        source = read_source(Path(path), display)
        docs = compose(source)
        at = None
        if docs:
            key, value = locate(docs[0], ("running", e.index, e.field, *([e.key] if e.key else [])))
            at = span(source, key if e.key and key is not None else value)
        raise LoadError(e.message, at, hint=e.hint, path=display) from None


def _load_one(
    path: str | os.PathLike[str],
    model: type[BaseModel],
    what: str,
    key: str,
) -> BaseModel:
    display = os.fspath(path)
    source = read_source(Path(path), display)
    with paused_gc():
        docs = compose(source)
        if len(docs) != 1:
            found = "is empty" if not docs else f"holds {len(docs)} YAML documents"
            message = f"{what} file holds one YAML document; this one {found}"
            raise LoadError(message, path=display)
        builder = Builder(source)
        data = builder.value(docs[0])
        _raise(builder.errors)
        if not isinstance(data, dict):
            message = f"{what} is a mapping with {key}:, got {show(data)}"
            raise LoadError(message, span(source, docs[0]))
        errors: list[RouterError] = []
        result = _validate(model, data, docs[0], source, errors)
        _raise(errors)
    assert isinstance(result, model)
    return result


def workload_files(path: str | os.PathLike[str]) -> list[tuple[Path, str]]:
    """(path, display name) of the file, or of every *.yaml/*.yml below the folder, sorted by
    relative path. Hidden files and folders (".git") are skipped; symlinked folders are not
    followed."""
    root = Path(path)
    display = os.fspath(path)
    if root.is_file():
        return [(root, display)]
    if not root.is_dir():
        raise LoadError(f"no such file or folder: {display}", path=display)
    found: list[tuple[str, Path]] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.endswith(YAML_SUFFIXES) and not name.startswith("."):
                full = Path(folder, name)
                found.append((full.relative_to(root).as_posix(), full))
    return [(full, os.path.join(display, rel)) for rel, full in sorted(found)]


def load_workloads(path: str | os.PathLike[str]) -> list[Workload]:
    """The workloads of a file (one mapping, a list of them, or several YAML documents) or of
    every YAML file below a folder, in file order. Names must be unique across all of them."""
    workloads: list[Workload] = []
    errors: list[RouterError] = []
    first: dict[str, Workload] = {}
    classes = WorkloadClasses()
    for file, display in workload_files(path):
        with paused_gc():
            errors.extend(_load_file(read_source(file, display), first, workloads, classes))
    _raise(errors)
    _raise(list(dependency_errors(workloads)))  # `after:` names and cycles (issue 13)
    return workloads


def _load_file(
    source: Source,
    first: dict[str, Workload],
    workloads: list[Workload],
    classes: WorkloadClasses,
) -> list[RouterError]:
    """Appends the file's good workloads to `workloads`; returns its errors by line."""
    fast = _load_fast(source, first, classes)
    if fast is not None:
        for each in fast:
            first[each.name] = each
        workloads.extend(fast)
        return []
    try:
        docs = compose(source)
    except LoadError as e:
        return [e]
    builder = Builder(source)
    found: list[RouterError] = []
    for doc in docs:
        data = builder.value(doc)
        if isinstance(doc, SequenceNode) and isinstance(data, list):
            items = list(zip(doc.value, data, strict=True))
        else:
            items = [(doc, data)]
        for node, item in items:
            if not isinstance(item, dict):
                message = f"expected a workload (a mapping with name:), got {show(item)}"
                found.append(LoadError(message, span(source, node)))
                continue
            # A file with aliases shares parts between its workloads: no class keys of it
            # (repr would walk the shared parts as often as they are named).
            key, workload = classes.known(item) if not builder.aliased else (None, None)
            if workload is None:
                workload = _validate(Workload, item, node, source, found)
                if workload is None:
                    continue
                classes.add(key, workload)
            bad = workload.workdir and value_problem("sbatch", workload.workdir)
            if bad:  # what the Slurm emitter refuses, here with its line (chdir in #SBATCH)
                where = span(source, locate(node, ("workdir",))[1])
                found.append(LoadError(f"workdir: {bad}, got {show(workload.workdir)}", where))
                continue
            workload._source = (source.path, node.start_mark.line + 1)
            if workload.after:  # the default () is already there
                workload._after_spans = tuple(
                    span(source, locate(node, ("after", i))[1]) for i in range(len(workload.after))
                )
            seen = first.setdefault(workload.name, workload)
            if seen is workload:
                workloads.append(workload)
                continue
            file0, line0 = seen.source or ("?", 0)
            message = f'duplicate workload name "{workload.name}"; first defined at {file0}:{line0}'
            found.append(LoadError(message, span(source, locate(node, ("name",))[1])))
    return sorted(builder.errors + found, key=lambda e: e.line or 0)


def _load_fast(
    source: Source, first: dict[str, Workload], classes: WorkloadClasses
) -> list[Workload] | None:
    """The file's workloads read by blockyaml's scanner, or None: when the file is outside
    what it reads, or anything in it is wrong, it is loaded again by _load_file, which has
    the nodes for its messages. The positions of `after` entries are found only if an error
    asks for them (_AfterAt)."""
    known, items = prescan.scanned(source.path, source.text)  # scanned in a child, or not
    if not known:
        items = scan(source.text, plain_reader(Builder(source)))
    if items is None:
        return None
    nodes: _Nodes | None = None
    out: list[Workload] = []
    names: set[str] = set()
    keys: dict[int, str | None] = {}  # template -> class key: its items differ in name only
    for item, line, template in items:
        if type(item) is not dict:
            return None
        name = item.get("name")
        if template is None or type(name) is not str:
            key, workload = classes.known(item)
        elif template in keys:
            key = keys[template]
            workload = classes.named(key, name) if key is not None else None
        else:
            key, workload = classes.known(item)
            keys[template] = key
        if workload is None:
            try:
                workload = Workload.model_validate(item)
            except ValidationError:
                return None
            classes.add(key, workload)
        if workload.workdir and value_problem("sbatch", workload.workdir):
            return None
        if workload.name in first or workload.name in names:
            return None
        names.add(workload.name)
        workload._source = (source.path, line)
        if workload.after:
            if nodes is None:
                nodes = _Nodes(source)
            workload._after_at = _AfterAt(nodes, line, len(workload.after))
        out.append(workload)
    return out


class _Nodes:
    """A file's YAML nodes, composed when first needed (once per file): the fast scanner
    keeps no positions, and only an error about an `after` entry asks for one."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self._docs: list[Node] | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Nodes) and other.source == self.source

    def item_at(self, line: int) -> Node | None:
        """The workload node that starts on `line` (a list item, or the file's mapping)."""
        if self._docs is None:
            self._docs = compose(self.source)
        for doc in self._docs:
            for node in doc.value if isinstance(doc, SequenceNode) else [doc]:
                if node.start_mark.line + 1 == line:
                    return node
        return None  # not met (the scanner's lines are the loader's): errors keep file:line


@dataclass(frozen=True)
class _AfterAt:
    """Where the `after` entries of the workload at `line` are, as _load_file finds them."""

    nodes: _Nodes
    line: int
    count: int

    def __call__(self) -> tuple[Span, ...]:
        node = self.nodes.item_at(self.line)
        if node is None:
            return ()
        source = self.nodes.source
        return tuple(span(source, locate(node, ("after", i))[1]) for i in range(self.count))


class WorkloadSpans:
    """Where a field of a loaded workload is written, found from its (file, line) when a
    finding asks: the fast scanner keeps no positions, so each file is composed again once,
    and only if one of its workloads is asked about. `files` are workload_files' pairs."""

    def __init__(self, files: list[tuple[Path, str]]) -> None:
        self._paths = {display: path for path, display in files}
        self._files: dict[str, _Nodes] = {}

    def span(self, w: Workload, key: str) -> Span | None:
        """The value of `key` in w's mapping, else its name; None for a workload of no file."""
        if w.source is None or w.source[0] not in self._paths:
            return None
        display, line = w.source
        nodes = self._files.get(display)
        if nodes is None:
            nodes = self._files[display] = _Nodes(read_source(self._paths[display], display))
        node = nodes.item_at(line)
        if node is None:
            return None
        found, value = locate(node, (key,))
        if found is None:
            value = locate(node, ("name",))[1]
        return span(nodes.source, value)
