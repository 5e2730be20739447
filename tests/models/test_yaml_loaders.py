"""libyaml's loader (the fast path) and PyYAML's own (the fallback when PyYAML has no libyaml)
give the same nodes, values and errors, at the same positions, on the example files and on
mutations of them (the fuzzer's mutations: deleted, duplicated, swapped spans, hostile
tokens). Only the wording of a YAML syntax error is the parser's own ("did not find expected
',' or ']'" in libyaml, "expected ',' or ']', but got '<stream end>'" in PyYAML); its position,
caret and the line of its context (when elsewhere) are the same.

Two known differences are left out. An empty value inside a flow collection (`{a: , b: 1}`)
is a column apart: before the space for PyYAML, after it for libyaml (a block one, `key:` and
nothing, is at the end of its line for both; the walk below compares an empty value's line,
not its column). And a tab inside a line: libyaml reads `gpu_\ttype` as one plain scalar, as
the YAML spec has it; PyYAML's own scanner stops at the tab and fails there. A syntax error
found at the end of the text is a line apart too, and where a block mapping or list ends
(libyaml counts the comments after it in)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from yaml.nodes import MappingNode, Node, SequenceNode

from router.errors import RouterError, Source
from router.models.yamlsource import C_PARSER, Builder, Loader, PureLoader, compose
from tests.fuzz.strategies import mutated
from tests.profiles import BOUNDED

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ml-platform"
FILES = {
    "inventory.yaml": (EXAMPLE / "inventory.yaml").read_text(encoding="utf-8"),
    **{
        f"workloads/{p.name}": p.read_text(encoding="utf-8")
        for p in sorted((EXAMPLE / "workloads").glob("*.yaml"))[:3]
    },
}

pytestmark = pytest.mark.skipif(not C_PARSER, reason="PyYAML here is built without libyaml")


def _walk(node: Node, out: list[Any], seen: set[int]) -> None:
    """Every node's kind, tag, value (scalars) and span, in document order."""
    start, end = node.start_mark, node.end_mark
    if node.value == "" and node.tag == "!plain":  # an empty value: a column apart in flow
        out.append(("empty", start.line if start.line == end.line else None))
        return
    scalar = not isinstance(node, (MappingNode, SequenceNode))
    # A block mapping or list ends where the next token is (after comments, for libyaml)
    ends = (end.line, end.column) if scalar else None
    out.append((type(node).__name__, node.tag, start.line, start.column, ends))
    if id(node) in seen:  # an alias: its node again, not its children again
        return
    seen.add(id(node))
    if isinstance(node, MappingNode):
        for key, value in node.value:
            _walk(key, out, seen)
            _walk(value, out, seen)
    elif isinstance(node, SequenceNode):
        for item in node.value:
            _walk(item, out, seen)
    else:
        out.append(node.value)


_WORDING = re.compile(r"(invalid YAML: ).*")
_CONTEXT = re.compile(r"\n  \S.*?( at line \d+)$")  # the hint: where the context began


def _load(text: str, loader: Any) -> Any:
    """(nodes, values, builder errors), or the load error as printed (its position, source
    line, caret and hint), the parser's wording of a syntax error left out."""
    source = Source("w.yaml", text)
    try:
        docs = compose(source, loader)
    except RouterError as e:
        shown = _CONTEXT.sub(r"\n  ...\1", _WORDING.sub(r"\1...", e.format(), count=1))
        # libyaml names a context where PyYAML names none, when it is where the error is
        return shown.removesuffix(f"\n  ... at line {e.line}")
    nodes: list[Any] = []
    for doc in docs:
        _walk(doc, nodes, set())
    builder = Builder(source)
    values = [builder.value(doc) for doc in docs]
    return nodes, repr(values), [e.format() for e in builder.errors]


def test_the_example_files_load_the_same() -> None:
    for text in FILES.values():
        fast = _load(text, Loader)
        assert isinstance(fast, tuple) and fast[1] != "[]"
        assert fast == _load(text, PureLoader)


@pytest.mark.parametrize(
    "text",
    [
        "a: [1, 2\n",  # an unclosed flow list
        "a: b: c\n",
        "- a\nb: c\n",
        "a: 'x\n",
        "a: *nope\n",
        "a: &x 1\nb: &x 2\n",
        "k: \x07\n",  # a control character: the reader's error, at its column
        "é: ü\nk: \x07\n",  # ... after characters that are two bytes in UTF-8
        "a: 1\n---\nb: [\n",
        "\t- a\n",
    ],
)
def test_syntax_errors_are_the_same(text: str) -> None:
    fast = _load(text, Loader)
    assert isinstance(fast, str) and ":" in fast  # a positioned error
    assert fast == _load(text, PureLoader)


@settings(
    BOUNDED,
    max_examples=60,
    suppress_health_check=[*BOUNDED.suppress_health_check, HealthCheck.filter_too_much],
)
@given(name=st.sampled_from(sorted(FILES)), data=st.data())
def test_mutated_files_load_the_same(name: str, data: st.DataObject) -> None:
    text = data.draw(mutated(FILES[name]), label="text")
    assume("\t" not in text.lstrip("\t"))  # the known difference (see above)
    fast, pure = _load(text, Loader), _load(text, PureLoader)
    if isinstance(fast, str) and isinstance(pure, str):
        # Both refuse the text. At the end of the text libyaml places the error at the
        # start of the line after, PyYAML at the end of the last: a line apart at most.
        lines = [int(e.split(":")[1]) for e in (fast, pure)]
        assert abs(lines[0] - lines[1]) <= 1, (fast, pure)
        if lines[0] == lines[1]:
            assert fast == pure
    else:
        assert fast == pure


@pytest.mark.parametrize(
    "text",
    [
        "a: [1, 2\n",  # libyaml: "did not find expected ',' or ']'"
        "gpu_\ttype: 1\n",  # libyaml reads one plain scalar; PyYAML stops at the tab
        "a: 1\n  b: 2\n",
    ],
)
def test_the_default_compose_answers_as_pyyaml_does(text: str) -> None:
    """What router reads by default is what PyYAML's own parser makes of the text whenever
    libyaml would differ (a tab, an error): the same error, wording and line on a machine
    with libyaml as on one without."""

    def read(loader: Any) -> str:
        try:
            docs = compose(Source("w.yaml", text), loader)
        except RouterError as e:
            return e.format()  # the whole message, the parser's wording included
        return repr([Builder(Source("w.yaml", text)).value(d) for d in docs])

    assert read(None) == read(PureLoader)
