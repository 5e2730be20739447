"""A scanner for the block YAML that workload files are written in, for speed.

Composing a workload file with libyaml makes a node and two marks per scalar, and most of
the time of loading 50,000 workloads went there. Workload files use a small part of YAML:
block mappings and lists, plain and one-line quoted scalars, an anchor and alias here and
there (yaml.dump writes them for shared `replicas`), comments on lines of their own. This
scanner reads that part straight into the data `yamlsource.Builder` makes (plain scalars are
resolved by Builder itself, so `on`, `1:30:00`, `0x1f` are read the same way), with each
item's line. Anything else — a tab, a flow collection, a block scalar, a `#` after a value,
a merge key, a second document, a tag, odd indentation, a value Builder refuses — makes it
give up (None), and the file is loaded by the full loader, errors and all.
tests/models/test_blockyaml.py holds the two to the same data and lines, on examples and on
generated and mutated texts.

Lists of workloads are mostly the same text but for the name: each item of a top-level list
is looked up by its text with the name's value cut out, and an item seen before is a copy of
the first one's data with its own name, without scanning it again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from router.models.yamlsource import MAX_YAML_DEPTH, Builder

__all__ = ["Item", "plain_reader", "scan"]

# (data, line of its node (1-based), template: equal for items equal but for `name`, or None)
Item = tuple[Any, int, int | None]

# What the scanner does not read at all: tabs, other line breaks, a BOM inside the text,
# and characters YAML does not allow (the full loader gives their error).
_REFUSED = re.compile(
    "[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*")
_ANCHOR = re.compile(r"[A-Za-z0-9_-]+")
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
_PENDING = object()
_NAME_FIRST = "name: "
_NAME_LATER = "\n  name: "


class Outside(Exception):
    """The text uses YAML beyond what this scanner reads."""


Line = tuple[int, str, int]  # indentation, text without it (trimmed), line number


def _lines(text: str, first: int) -> list[Line]:
    out: list[Line] = []
    for number, raw in enumerate(text.split("\n"), first):
        body = raw.lstrip(" ")
        if not body or body[0] == "#":
            continue
        indent = len(raw) - len(body)
        body = body.rstrip(" ")
        if "#" in body:  # maybe a comment after a value: left to the full loader
            raise Outside
        out.append((indent, body, number))
    return out


def _is_entry(body: str) -> bool:
    return body[0] == "-" and (len(body) == 1 or body[1] == " ")


class _Aliases:
    """A file's anchors (name -> node and its size in lines, aliases inside counted in), and
    how many lines its aliases stand for. Aliases share nodes; a class key (repr) and the
    validation walk what they stand for, so that is kept within the file's own size
    ("billion laughs" files go to the full loader, which keeps no class keys of them)."""

    def __init__(self, lines: int) -> None:
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.expanded = 0
        self.most = lines + 1000

    def add(self, lines: int) -> None:
        self.expanded += lines
        if self.expanded > self.most:
            raise Outside


class _Parser:
    """Reads block nodes from lines; raises Outside on anything it does not know."""

    def __init__(self, lines: list[Line], plain: Callable[[str], Any], aliases: _Aliases) -> None:
        self.lines = lines
        self.i = 0
        self.plain = plain
        self.aliases = aliases
        self.anchors = aliases.anchors
        self.depth = 0

    def node(self) -> Any:
        """The block node whose first line is the next line."""
        indent, body, _ = self.lines[self.i]
        self.depth += 1
        if self.depth > MAX_YAML_DEPTH:  # the full loader says how deep is too deep
            raise Outside
        if _is_entry(body):
            found: Any = self.sequence(indent)
        else:
            self.i += 1
            found = self.mapping(indent, body)
        self.depth -= 1
        return found

    def sequence(self, indent: int) -> list[Any]:
        out: list[Any] = []
        lines = self.lines
        while self.i < len(lines):
            at, body, _ = lines[self.i]
            if at < indent:
                break
            if at > indent:
                raise Outside
            if not _is_entry(body):
                break  # a key of the mapping this list is the value of
            rest = body[1:].lstrip(" ")
            self.i += 1
            if not rest:
                out.append(self.after_key(indent, False))
            else:
                out.append(self.inline(rest, indent, indent + len(body) - len(rest)))
        return out

    def mapping(self, indent: int, body: str) -> dict[str, Any]:
        """A block mapping whose keys are at `indent`; `body` is its first line."""
        out: dict[str, Any] = {}
        lines = self.lines
        while True:
            colon = body.find(": ")
            if colon < 0:
                if body[-1] != ":":
                    raise Outside
                key, rest = body[:-1], ""
            else:
                key, rest = body[:colon], body[colon + 2 :].lstrip(" ")
            if key in out or not _KEY.fullmatch(key):
                raise Outside
            out[key] = self.inline(rest, indent, -1) if rest else self.after_key(indent, True)
            if self.i >= len(lines):
                break
            at, body, _ = lines[self.i]
            if at < indent:
                break
            if at > indent or _is_entry(body):
                raise Outside
            self.i += 1
        return out

    def after_key(self, indent: int, list_here: bool) -> Any:
        """The value after `key:` or `-` with nothing more on the line: a block below, a
        list at the key's own indentation (`list_here`), or null."""
        if self.i < len(self.lines):
            at, body, _ = self.lines[self.i]
            if at > indent or (at == indent and list_here and _is_entry(body)):
                return self.node()
        return self.plain("")

    def inline(self, rest: str, indent: int, column: int) -> Any:
        """The value written after `key: ` or `- ` (column ≥ 0: after `- `, where a mapping
        may start on the same line); what follows must not be more indented."""
        first = rest[0]
        if first == "&":
            name, _, after = rest[1:].partition(" ")
            if not _ANCHOR.fullmatch(name) or name in self.anchors:
                raise Outside  # an anchor named twice: the full loader's aliases are right
            self.anchors[name] = (_PENDING, 0)  # named before its node is read, as in YAML
            after = after.lstrip(" ")
            start, expanded = self.i, self.aliases.expanded
            found = self.inline(after, indent, -1) if after else self.after_key(indent, column < 0)
            size = self.i - start + 1 + self.aliases.expanded - expanded
            self.anchors[name] = (found, size)
            return found
        if first == "*":
            value, size = self.anchors.get(rest[1:], (_PENDING, 0))
            if value is _PENDING:  # no such anchor, or an alias inside its own anchor
                raise Outside
            self.aliases.add(size)
        elif column >= 0 and (": " in rest or rest[-1] == ":") and first not in "'\"":
            self.depth += 1
            value = self.mapping(column, rest)
            self.depth -= 1
            return value
        else:
            value = scalar(rest, self.plain)
        if self.i < len(self.lines) and self.lines[self.i][0] > indent:
            raise Outside  # a plain scalar going on to the next line, or worse
        return value


def scalar(text: str, plain: Callable[[str], Any]) -> Any:
    """One-line scalar text (trimmed, not empty) as Builder reads it; Outside if it is not
    a plain or quoted scalar this scanner knows."""
    first = text[0]
    if first == "'":
        inner = text[1:-1]
        if len(text) < 2 or text[-1] != "'" or "'" in inner.replace("''", ""):
            raise Outside
        return inner.replace("''", "'")
    if first == '"':
        inner = text[1:-1]
        if len(text) < 2 or text[-1] != '"' or '"' in inner or "\\" in inner:
            raise Outside
        return inner
    if first in _INDICATORS and (first != "-" or len(text) == 1 or text[1] == " "):
        raise Outside
    if ": " in text or text[-1] == ":":
        raise Outside
    return plain(text)


def plain_reader(builder: Builder) -> Callable[[str], Any]:
    """Builder's reading of plain scalars, raising Outside where it reports an error."""

    def plain(text: str) -> Any:
        try:
            return builder.plain(text)
        except ValueError:
            raise Outside from None

    return plain


def scan(text: str, plain: Callable[[str], Any]) -> list[Item] | None:
    """The items of a workload file's text: a top-level list's items, or the one mapping
    (or other node) it holds; None if the text is outside what this scanner reads (also when
    it is empty: the full loader says what an empty file is). `plain` resolves a plain
    scalar's text (Builder's rules) and raises Outside where Builder would report an error."""
    if _REFUSED.search(text) is not None:
        return None
    try:
        return _scan(text, plain)
    except Outside:
        return None


def _scan(text: str, plain: Callable[[str], Any]) -> list[Item]:
    # Where the first node starts: after blank and comment lines.
    start, line = 0, 1
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        stripped = text[start:end].strip(" ")
        if stripped and stripped[0] != "#":
            break
        start, line = end + 1, line + 1
    if start >= len(text):
        raise Outside
    aliases = _Aliases(text.count("\n") + 1)
    if not text.startswith("- ", start):
        lines = _lines(text[start:], line)
        parser = _Parser(lines, plain, aliases)
        data = parser.node()
        if parser.i != len(lines) or type(data) is not dict:
            raise Outside  # a list not at column 0 (its items' lines are not kept here)
        return [(data, lines[0][2], None)]
    return _scan_list(text[start + 2 :].split("\n- "), line, plain, aliases)


def _scan_list(
    chunks: list[str], line: int, plain: Callable[[str], Any], aliases: _Aliases
) -> list[Item]:
    """The items of a list at column 0, one chunk of text each ("- " cut off)."""
    items: list[Item] = []
    # text but the name -> (data, template number, lines its aliases stand for)
    templates: dict[str, tuple[dict[str, Any], int, int]] = {}
    for chunk in chunks:
        # The name's value: on the item's first line, or on a line of the item's own keys.
        if chunk.startswith(_NAME_FIRST):
            at = len(_NAME_FIRST)
        else:
            at = chunk.find(_NAME_LATER)
            at = at + len(_NAME_LATER) if at >= 0 else -1
        key = None
        if at >= 0:
            end = chunk.find("\n", at)
            end = len(chunk) if end < 0 else end
            key = chunk[:at] + "\n" + chunk[end:]
            seen = templates.get(key)
            if seen is not None:
                value = chunk[at:end].strip(" ")
                if not value:
                    raise Outside
                named = dict(seen[0])
                named["name"] = scalar(value, plain)
                aliases.add(seen[2])
                items.append((named, line, seen[1]))
                line += chunk.count("\n") + 1
                continue
        lines = _lines("- " + chunk, line)
        first = lines[0][1][1:].lstrip(" ")
        if not first or first[0] == "&":
            raise Outside  # the item's node starts on a later line, or at an anchor
        parser = _Parser(lines, plain, aliases)
        expanded = aliases.expanded
        data = parser.sequence(0)
        if parser.i != len(lines) or len(data) != 1:
            raise Outside
        (item,) = data
        # A template only if the name's line is a plain `name: value` (so that any value
        # there reads as a scalar) and the item names no anchor (naming one again would
        # make later aliases mean another node).
        if (
            key is not None
            and type(item) is dict
            and "&" not in chunk
            and chunk[at:end].strip(" ")
            and "name" in item
        ):
            templates[key] = (item, len(templates), aliases.expanded - expanded)
        items.append((item, lines[0][2], templates[key][1] if key in templates else None))
        line += chunk.count("\n") + 1
    return items
