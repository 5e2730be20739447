"""blockyaml's scanner (the fast path of loading workload files) reads what compose + Builder
read: the same data (same types, same key order) and the same line for each item, on every
text it accepts; on texts it does not, it says so (None) and the full loader reads them.
Texts are generated from a grammar of block YAML with tokens at and over the edge of what the
scanner reads (quotes, anchors, indicators, comments, odd indentation), and mutated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from yaml.nodes import SequenceNode

from router.errors import RouterError, Source
from router.models import Workload, load_workloads, loader
from router.models.blockyaml import plain_reader, scan
from router.models.yamlsource import Builder, compose
from router.testing.strategies import workload_dicts
from tests.fuzz.strategies import mutated
from tests.profiles import BOUNDED

SAFE = [
    "x", "a b", "1", "-1", "1.5", "yes", "null", "~", "'q'", '"dq"', "1:30:00", "0x1f", "x[1]",
]  # fmt: skip
EDGY = [
    "x", "a b", "a  b", "1", "-1", "+1", "1.5", "1e3", ".inf", "-.inf", ".nan", "0x1f", "0o17",
    "017", "1_000", "1:30:00", "yes", "No", "on", "OFF", "true", "null", "~", "Null", "2001-12-14",
    "=", "<<", "1" * 120, "1" * 5000, "'q'", "'it''s'", "''", "'a'b'", "'unclosed", '"dq"',
    '""', '"a\\"b"', '"a"b"', "é ü", "x[1]", "a,b", "{a: 1}", "[1, 2]", "a: b", "a:", "a:b",
    "-", "- x", "-x", "&a", "&a 1", "&b x", "*a", "*b", "!!int 1", "!x", "|", ">", "a#b", "a #b",
    "?x", "%x", "@x", "`x", "--- x", "...", "*", "&", "1 #c", "a\tb", "&a\n  b: *a",
]  # fmt: skip
KEYS = ["kind", "a", "b", "on", "1", "a.b/c", "x-y"] * 4 + ["<<", "a b", "'q'", "-k", "k:", "name"]
# Mostly what the scanner reads, with an edge or worse now and then.
SCALARS = SAFE * 10 + EDGY


@st.composite
def _block(draw: st.DrawFn, indent: int, depth: int) -> list[str]:
    """The lines of a block node at `indent`: a mapping, a list, or (deep down) a scalar."""
    kind = draw(st.sampled_from(["map", "seq"] if depth < 3 else ["map"]))
    pad = " " * indent
    lines: list[str] = []
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=3, max_size=3, unique=True))
    keys[2] = draw(st.sampled_from([*keys[:2]] + [keys[2]] * 8))  # now and then a key twice
    for n in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["", "# c", pad + "  # c", "   "])))
        if draw(st.integers(0, 39)) == 0:
            pad = " " * draw(st.integers(0, indent + 3))  # indentation gone wrong
        value = draw(st.sampled_from(SCALARS))
        nested = depth < 3 and draw(st.integers(0, 3)) == 0
        step = draw(st.sampled_from([2, 2, 4, 1]))
        if kind == "map":
            key = keys[n]
            if nested:
                anchor = draw(st.sampled_from(["", "", " &a", " &c"]))
                lines.append(f"{pad}{key}:{anchor}")
                at = indent + draw(st.sampled_from([step] * 5 + [0]))
                lines.extend(draw(_block(at, depth + 1)))
            else:
                lines.append(f"{pad}{key}: {value}".rstrip() if value else f"{pad}{key}:")
        elif nested and draw(st.booleans()):
            lines.append(pad + "-")
            lines.extend(draw(_block(indent + step, depth + 1)))
        elif nested:  # a mapping starting on the item's line
            inner = draw(_block(indent + 2, depth + 1))
            lines.append(pad + "- " + inner[0].lstrip(" "))
            lines.extend(inner[1:])
        else:
            lines.append(f"{pad}- {value}")
    return lines


@st.composite
def _texts(draw: st.DrawFn) -> str:
    """A file: a list of items, some of them the same but for their names, or one node."""
    if draw(st.booleans()):
        return "\n".join(draw(_block(draw(st.sampled_from([0, 0, 1])), 0))) + "\n"
    items = draw(st.lists(_block(2, 1), min_size=1, max_size=3))
    out = draw(st.sampled_from(["", "# head\n", "\n"]))
    for _ in range(draw(st.integers(1, 6))):
        lines = list(draw(st.sampled_from(items)))
        name = draw(
            st.sampled_from(["n1", "n2", "'n3'", "n4 ", "1"] * 3 + ["", "&z", "a: b", "[x]"])
        )
        where = draw(st.integers(0, len(lines)))
        lines.insert(where, f"  name: {name}")
        out += "- " + "\n".join(lines).removeprefix("  ") + "\n"
    return out


def _full(text: str) -> Any:
    """What compose + Builder read (items of a top-level list one by one, as the loader
    takes them), or None if they report an error."""
    source = Source("w.yaml", text)
    try:
        docs = compose(source)
    except RouterError:
        return None
    builder = Builder(source)
    items: list[tuple[Any, int]] = []
    for doc in docs:
        data = builder.value(doc)
        if isinstance(doc, SequenceNode) and isinstance(data, list):
            items.extend((d, n.start_mark.line + 1) for d, n in zip(data, doc.value, strict=True))
        else:
            items.append((data, doc.start_mark.line + 1))
    return None if builder.errors else repr(items)


def _scanned(text: str) -> tuple[str | None, list[int | None]]:
    found = scan(text, plain_reader(Builder(Source("w.yaml", text))))
    if found is None:
        return None, []
    return repr([(data, line) for data, line, _ in found]), [t for _, _, t in found]


def _check(text: str) -> bool:
    """The scanner's reading is the full loader's; True if it read the text at all."""
    fast, _ = _scanned(text)
    if fast is None:
        return False
    assert fast == _full(text), text
    # Items of one template are equal but for their names.
    found = scan(text, plain_reader(Builder(Source("w.yaml", text)))) or []
    firsts: dict[int, dict[str, Any]] = {}
    for data, _, template in found:
        if template is not None:
            first = firsts.setdefault(template, data)
            assert {**first, "name": data["name"]} == data
    return True


EXAMPLES = [
    "- name: a\n  kind: batch\n  labels:\n    app: x\n  gpus: 1\n",
    "- name: a\n  replicas: &id1\n    min: 1\n    max: 2\n- name: b\n  replicas: *id1\n",
    "# head\n\nname: a\nkind: batch\ncommand:\n- python\n- 'main.py'\n",
    "- kind: batch\n  name: a\n  cpus: 2\n- kind: batch\n  name: b\n  cpus: 2\n",
    "- name: a\n  mounts:\n  - name: x\n    path: /x\n  after:\n  - b\n",
    "- name: a\n  memory: 1:30:00\n  on: yes\n  x: 0x1f\n  y: ~\n  z:\n",
]


@pytest.mark.parametrize("text", EXAMPLES)
def test_block_yaml_reads_as_the_full_loader(text: str) -> None:
    assert _check(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: [1, 2]\n",  # flow
        "a: |\n  x\n",  # block scalar
        "a: b # c\n",  # comment after a value
        "a: b\n  c\n",  # a plain scalar on two lines
        "a: 1\n---\nb: 2\n",  # two documents
        "<<: *a\n",  # merge
        "a: &x 1\nb: &x 2\nc: *x\n",  # an anchor named twice
        "a: *nope\n",
        "a: &x\n  b: *x\n",  # an alias inside its own anchor
        "- a: &x\n    b: &x\n      c: 1\n  name: n\n",  # an anchor named twice, nested
        "a:\tb\n",
        "a: 1\n a: 2\n",
        "- a\n- b\n",  # a list of scalars: items, but not workloads (the loader says so)
        "  - name: a\n",  # a list not at column 0
        "- name: a\n  n: " + "1" * 200 + "\n",  # a number Builder refuses
        "",
        "# only a comment\n",
    ],
)
def test_what_it_does_not_read_is_left_to_the_full_loader(text: str) -> None:
    fast, _ = _scanned(text)
    assert fast is None or (text.startswith("- a") and fast == _full(text))


def test_names_of_a_template_are_read_each_on_its_own() -> None:
    text = "".join(f"- name: {n}\n  kind: batch\n" for n in ["a", "'b'", "1", "on", '"d"'])
    fast, templates = _scanned(text)
    assert fast == _full(text)
    assert len(set(templates[:4])) == 1  # one template (the last item ends the text)
    assert _scanned(text + "- name: 'x\n  kind: batch\n")[0] is None


@settings(BOUNDED, max_examples=300)
@given(text=_texts())
def test_generated_texts_read_as_the_full_loader(text: str) -> None:
    _check(text)


@settings(BOUNDED, max_examples=150)
@given(base=st.sampled_from(EXAMPLES), data=st.data())
def test_mutated_texts_read_as_the_full_loader(base: str, data: st.DataObject) -> None:
    _check(data.draw(mutated(base * 2), label="text"))


def test_generated_texts_are_mostly_read() -> None:
    """The generator reaches the scanner's reading, not only its refusals."""

    @settings(BOUNDED, max_examples=200)
    @given(text=_texts())
    def count(text: str) -> None:
        read.append(_check(text))

    read: list[bool] = []
    count()
    assert sum(read) >= len(read) // 10, sum(read)


# ---- load_workloads: the same workloads, sources and errors with and without it ----------


def _outcome(path: Path, fast: bool, mp: pytest.MonkeyPatch) -> Any:
    if not fast:
        mp.setattr(loader, "_load_fast", lambda *args: None)
    try:
        found = load_workloads(path)
    except RouterError as e:
        return e.format()
    finally:
        mp.undo()
    # `after` positions first: the fast path finds them when first asked (loader._AfterAt).
    spans = [[(a.line, a.column, a.end_line, a.end_column) for a in w.after_spans] for w in found]
    return [
        (w.model_dump(), sorted(w.model_fields_set), w.source, at, w.__pydantic_private__)
        for w, at in zip(found, spans, strict=True)
    ]


@st.composite
def _workload_file(draw: st.DrawFn) -> str:
    classes = draw(st.lists(workload_dicts(max_gpus=4), min_size=1, max_size=3))
    items = []
    for _ in range(draw(st.integers(1, 8))):
        item = dict(draw(st.sampled_from(classes)))
        item["name"] = draw(st.sampled_from(["a", "b", "c-1", "Bad_Name", "a"]))
        items.append(item)
    # yaml.dump writes anchors for shared parts, as bench --project's files have
    return yaml.dump(items, sort_keys=draw(st.booleans()), default_flow_style=False)


@settings(BOUNDED, max_examples=60)
@given(text=_workload_file())
def test_files_load_the_same_with_and_without_the_scanner(
    text: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("blockyaml") / "w.yaml"
    path.write_text(text)
    with pytest.MonkeyPatch.context() as mp:
        assert _outcome(path, True, mp) == _outcome(path, False, mp)


def test_the_scanner_is_what_loads_a_big_generated_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = {"min": 1, "max": 3}
    items = [
        {"name": f"w{i}", "kind": "inference", "gpus": 1, "replicas": shared, "labels": {"r": "x"}}
        for i in range(50)
    ]
    path = tmp_path / "w.yaml"
    path.write_text(yaml.dump(items, sort_keys=False))
    assert "&id" in path.read_text()
    real = loader._load_fast
    used: list[int] = []

    def counting(*args: Any) -> list[Workload] | None:
        found = real(*args)
        used.append(len(found) if found is not None else -1)
        return found

    monkeypatch.setattr(loader, "_load_fast", counting)
    found = load_workloads(path)
    assert used == [50]
    assert [w.source for w in found[:2]] == [(str(path), 1), (str(path), 9)]
    assert found[3].replicas is not None and found[3].replicas.max == 3


def test_aliases_that_stand_for_more_than_the_file_go_to_the_full_loader(tmp_path: Path) -> None:
    """Each level names the one below twice ("billion laughs"): what the aliases stand for
    doubles per level, and a class key (repr) would walk all of it."""
    levels = ["- name: a\n  l0: &a0\n    x: 1\n"]
    for k in range(1, 25):
        levels.append(f"  l{k}: &a{k}\n    - *a{k - 1}\n    - *a{k - 1}\n")
    text = "".join(levels)
    assert _scanned("".join(levels[:4]))[0] == _full("".join(levels[:4]))  # 8 times: read
    assert _scanned(text)[0] is None
    path = tmp_path / "w.yaml"
    path.write_text(text)
    with pytest.raises(RouterError, match="unknown field"):
        load_workloads(path)


AFTER = [
    "- name: a\n  kind: batch\n- name: b\n  after:\n  - a\n- name: c\n  after:\n    - a\n    - b\n",
    "name: b\nkind: batch\nafter:\n- 'a'\n",  # one mapping, a quoted entry (no such workload)
    '- name: x\n  kind: batch\n  after:\n  - "y"\n- name: y\n  kind: batch\n  after:\n  - z\n'
    "- name: z\n  kind: batch\n  after:\n  - x\n",  # a cycle: x -> y -> z -> x
    "- name: a\n  after:\n  - nope\n",  # an unknown name
    "- name: t1\n  kind: batch\n  after:\n  - p\n- name: t2\n  kind: batch\n  after:\n  - p\n"
    "- name: p\n",  # t2 a copy of t1's class (a template), its own positions
]


@pytest.mark.parametrize("text", AFTER)
def test_files_with_after_are_read_once_with_the_same_positions(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(text)
    composed: list[str] = []

    def counting(source: Source) -> Any:
        composed.append(source.path)
        return compose(source)

    monkeypatch.setattr(loader, "compose", counting)
    assert _scanned(text)[0] is not None  # the scanner reads it
    try:
        found = load_workloads(path)
    except RouterError:
        assert composed == [str(path)]  # composed once, for the error's position
    else:
        assert composed == []  # read once, by the scanner
        assert all(w.after for w in found if w.name != "a" and w.name != "p")
    with pytest.MonkeyPatch.context() as mp:
        assert _outcome(path, True, mp) == _outcome(path, False, mp)
