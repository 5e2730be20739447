"""YAML text → plain data, keeping every node's position for error messages.

The text is composed into nodes (libyaml's parser when available) and turned into plain data
by a small walker rather than PyYAML's constructor, so that:

- mapping keys stay the text the user wrote (`on:` is the key "on", not True);
- a key written twice in one mapping is an error, not a silent overwrite;
- only plain YAML types are accepted (no `!!python/...`, `!!binary`, `!!set`);
- `1:30:00` stays text for the quantity parser (YAML 1.1 would read it as base 60);
- an alias is built once and shared, so "billion laughs" documents cannot blow up.

Speed: the resolver that PyYAML calls for every node is replaced by a constant (plain scalars
are resolved here, once per distinct text), and the cyclic garbage collector is paused while
nodes are built (router.gcpause, in the loader): with it running, composing 10k workloads
takes four times as long.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from router.errors import LoadError, RouterError, Source, Span

_TAG = "tag:yaml.org,2002:"
_STR, _MAP, _SEQ = _TAG + "str", _TAG + "map", _TAG + "seq"
_PLAIN = "!plain"  # the tag our resolver gives every plain scalar; resolved in Builder
_TYPED = {_TAG + t for t in ("int", "float", "bool", "null")}
_MISSING = object()
_MAX_INT_TEXT = 100
_NOWHERE = yaml.Mark("", 0, 0, 0, "", 0)  # where a scanned scalar is: never shown
_RESOLVED = frozenset(Resolver.yaml_implicit_resolvers)


def show_text(text: str) -> str:
    """A scalar as written, quoted and cut short for a message."""
    return repr(text if len(text) <= 40 else text[:37] + "...")


class _Resolving:
    """A resolver that costs nothing: the tag of a node is its kind (plain scalars are
    resolved in Builder, once per distinct text)."""

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass

    def resolve(self, kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            return _PLAIN if implicit[0] else _STR
        return _MAP if kind is MappingNode else _SEQ


class PureLoader(_Resolving, yaml.SafeLoader):
    """PyYAML's own (Python) parser: what is used when libyaml is not there."""


_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
C_PARSER = _Base is not yaml.SafeLoader


class Loader(_Resolving, _Base):  # type: ignore[misc]
    """libyaml's parser and composer when PyYAML was built with them: the same nodes, marks
    and errors as PureLoader (tests/models/test_yaml_loaders.py holds them to that), several
    times faster."""


def read_source(path: Path, display: str) -> Source:
    """The text of a file as a Source named `display`; LoadError if unreadable or not UTF-8."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise LoadError(f"cannot read {display}: {e.strerror or e}", path=display) from None
    try:
        return Source(display, raw.decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        before = raw[raw.rfind(b"\n", 0, e.start) + 1 : e.start]
        column = len(before.decode("utf-8", errors="replace")) + 1
        shown = Source(display, raw.decode("utf-8", errors="replace"))
        raise LoadError("the file is not UTF-8 text", Span(shown, line, column),
                        hint=f"byte 0x{raw[e.start]:02x} cannot start or continue a UTF-8 "
                             "character") from None  # fmt: skip


def span(source: Source, node: Node) -> Span:
    start, end = node.start_mark, node.end_mark
    return Span(source, start.line + 1, start.column + 1, end.line + 1, end.column + 1)


def _yaml_error(source: Source, e: yaml.YAMLError, loader: Any) -> LoadError:
    if isinstance(e, yaml.MarkedYAMLError) and e.problem_mark is not None:
        mark = e.problem_mark
        hint = None
        if e.context and e.context_mark is not None:
            hint = f"{e.context} at line {e.context_mark.line + 1}"
        where = Span(source, mark.line + 1, mark.column + 1)
        return LoadError(f"invalid YAML: {e.problem}", where, hint=hint)
    if isinstance(e, yaml.reader.ReaderError):
        # libyaml counts bytes of UTF-8; the pure-Python reader counts characters
        if loader is Loader and C_PARSER:
            text = source.text.encode()[: e.position].decode(errors="ignore")
        else:
            text = source.text[: e.position]
        line = text.count("\n") + 1
        column = len(text) - (text.rfind("\n") + 1) + 1
        return LoadError(f"invalid YAML: {e.reason}", Span(source, line, column))
    return LoadError(f"invalid YAML: {e}", path=source.path)


# Mappings and lists nest at most this deep in a YAML file (docs/limits.md); a workload
# needs 3 levels. libyaml's composer recurses in C and crashes past some ten thousand levels,
# so a file that could nest that deep is first read as events, which do not recurse.
MAX_YAML_DEPTH = 100
_C_SAFE = 1000
_DEEP_INLINE = re.compile(rf"(?:[-?][ \t]+){{{_C_SAFE // 2}}}")
_DEEP_INDENT = re.compile(rf"^[ \t]{{{_C_SAFE}}}", re.MULTILINE)


_INDICATOR_PAIR = re.compile(r"[-?][ \t]+[-?]")  # what a deep `- - - ...` run starts with


def _could_nest_deep(text: str) -> bool:
    """Whether the text could nest past what libyaml's composer survives: depth comes from
    flow brackets, indentation, and `- `/`? ` runs on a line (each bounded here). The
    regexes cost more than composing a big file; cheaper tests that each match needs (a tab
    or _C_SAFE spaces in a row; two indicators in a row) rule them out first."""
    if text.count("[") + text.count("{") > _C_SAFE:
        return True
    if ("\t" in text or " " * _C_SAFE in text) and _DEEP_INDENT.search(text) is not None:
        return True
    return _INDICATOR_PAIR.search(text) is not None and _DEEP_INLINE.search(text) is not None


def _check_depth(source: Source, loader: Any) -> None:
    depth = 0
    for event in yaml.parse(source.text, Loader=loader):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                mark = event.start_mark
                line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
                raise LoadError(_too_deep(), Span(source, line, column))
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def _too_deep() -> str:
    return f"mappings and lists nest more than {MAX_YAML_DEPTH} deep here (see docs/limits.md)"


def compose(source: Source, loader: Any = None) -> list[Node]:
    """The root node of every non-empty document of the file; LoadError on a syntax error.
    `loader`: the one told, or else Loader (libyaml's, when there) with PyYAML's own parser
    as the reference: a text with a tab (which libyaml reads differently) is composed by it,
    and so is a text libyaml refuses, so that an error, its wording and its line are the same
    with or without libyaml."""
    told = loader is not None
    if loader is None:
        loader = PureLoader if "\t" in source.text else Loader
    try:
        if _could_nest_deep(source.text):
            _check_depth(source, loader)
        return [n for n in yaml.compose_all(source.text, Loader=loader) if n is not None]
    except yaml.YAMLError as e:
        if not told and loader is not PureLoader:
            return compose(source, PureLoader)
        raise _yaml_error(source, e, loader) from None


def _is_merge(key: Node) -> bool:
    return key.tag == _PLAIN and key.value == "<<"


class Builder:
    """Turns the nodes of one file into plain data (dict, list, str, int, float, bool, None);
    what it cannot accept goes to `errors`."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.errors: list[RouterError] = []
        self._memo: dict[int, Any] = {}
        self._plain: dict[str, Any] = {}
        self._ctor = yaml.constructor.SafeConstructor()
        self._depth = 0
        # An alias to a mapping or list was followed: the data shares parts (and walking it
        # as a tree, as repr does, could take as long as a "billion laughs" file asks for).
        self.aliased = False

    def error(self, node: Node, message: str) -> None:
        self.errors.append(LoadError(message, span(self.source, node)))

    def value(self, node: Node) -> Any:
        tag = node.tag
        if tag is _PLAIN:  # the common case first: a plain scalar, resolved once per text
            text: str = node.value
            found = self._plain.get(text, _MISSING)
            return self._resolve(node) if found is _MISSING else found
        if tag == _STR:
            return node.value
        seen = self._memo.get(id(node))
        if seen is not None:
            self.aliased = True
            return seen
        if (tag == _MAP and isinstance(node, MappingNode)) or (
            tag == _SEQ and isinstance(node, SequenceNode)
        ):
            if self._depth >= MAX_YAML_DEPTH:  # the walk recurses once per level
                self.error(node, _too_deep())
                return None
            self._depth += 1
            try:
                return self._container(node)
            finally:
                self._depth -= 1
        if tag in _TYPED and isinstance(node, ScalarNode):  # explicit !!int and the like
            return self._construct(tag, node)
        self.error(node, f'unsupported YAML tag "{tag}"')
        return None

    def plain(self, text: str) -> Any:
        """A plain scalar's value as value() reads it (blockyaml's scanner asks); ValueError
        where value() would report an error."""
        found = self._plain.get(text, _MISSING)
        if found is _MISSING:
            if text[:1] not in _RESOLVED:  # no implicit type starts so: text (most names)
                return text
            errors = len(self.errors)
            found = self._resolve(ScalarNode(_PLAIN, text, _NOWHERE, _NOWHERE))
            if len(self.errors) > errors:
                del self.errors[errors:]
                del self._plain[text]
                raise ValueError(text)
        return found

    def _container(self, node: Node) -> Any:
        if isinstance(node, MappingNode):
            return self._mapping(node)
        out: list[Any] = []
        self._memo[id(node)] = out
        out.extend(self.value(item) for item in node.value)
        return out

    def _resolve(self, node: Node) -> Any:
        text: str = node.value
        resolvers = Resolver.yaml_implicit_resolvers.get(text[:1], [])
        tag = next((t for t, regex in resolvers if regex.match(text)), _STR)
        found = self._construct(tag, node) if tag in _TYPED else text
        self._plain[text] = found
        return found

    def _construct(self, tag: str, node: Node) -> Any:
        if ":" in node.value and tag != _TAG + "null":  # base 60 (1:30:00): keep the text
            return node.value
        if tag == _TAG + "int" and len(node.value) > _MAX_INT_TEXT:
            # Python refuses to read more than 4,300 digits; no field takes more than 16.
            self.error(node, f"the number is too long ({len(node.value)} characters; at most "
                             f"{_MAX_INT_TEXT}): see docs/limits.md")  # fmt: skip
            return None
        try:
            return self._ctor.yaml_constructors[tag](self._ctor, node)
        except (ValueError, OverflowError, yaml.YAMLError):  # `!!int abc`, `!!bool maybe`
            self.error(node, f"{show_text(node.value)} is not a valid {tag.rsplit(':', 1)[-1]}")
            return None

    def _mapping(self, node: MappingNode) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self._memo[id(node)] = out
        merged: dict[str, Any] = {}
        plain = self._plain
        for key, value in node.value:
            name = key.value  # a str for a scalar key, a list for a mapping or sequence key
            if name == "<<" and key.tag is _PLAIN:
                self._merge(value, merged)
            elif type(name) is not str:
                self.error(key, "mapping keys must be plain names")
            elif name in out:
                self.error(key, f'the key "{name}" is written twice in this mapping')
            elif value.tag is _PLAIN:  # value()'s first case, inline: most values are these
                found = plain.get(value.value, _MISSING)
                out[name] = self._resolve(value) if found is _MISSING else found
            else:
                out[name] = self.value(value)
        if merged:
            out.update({k: v for k, v in merged.items() if k not in out})
        return out

    def _merge(self, value: Node, into: dict[str, Any]) -> None:
        """`<<: *base` or `<<: [*a, *b]`: keys not yet set come from the bases, first wins."""
        for base in value.value if isinstance(value, SequenceNode) else [value]:
            data = self.value(base)
            if not isinstance(data, dict):
                self.error(base, "a merge key (<<) takes a mapping or a list of them")
                continue
            for k, v in data.items():
                into.setdefault(k, v)


def _find_key(node: MappingNode, name: str) -> tuple[Node, Node] | None:
    merges: list[Node] = []
    for key, value in node.value:
        if _is_merge(key):
            merges.extend(value.value if isinstance(value, SequenceNode) else [value])
        elif isinstance(key, ScalarNode) and key.value == name:
            return key, value
    for base in merges:
        if isinstance(base, MappingNode):
            found = _find_key(base, name)
            if found:
                return found
    return None


def locate(root: Node, path: tuple[Any, ...]) -> tuple[Node | None, Node]:
    """(key node, value node) of the deepest prefix of `path` (keys and list indices) that the
    document has; the key is None at the root and for list items."""
    key: Node | None = None
    node = root
    for part in path:
        if isinstance(node, MappingNode) and isinstance(part, str):
            found = _find_key(node, part)
            if found is None:
                break
            key, node = found
        elif isinstance(node, SequenceNode) and isinstance(part, int) and part < len(node.value):
            key, node = None, node.value[part]
        else:
            break
    return key, node
