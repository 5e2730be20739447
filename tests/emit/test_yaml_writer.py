"""The block writer (router/emit/k8s/yamlio.py) writes the bytes PyYAML's pure-Python dumper
writes: over every manifest of bench platforms and of every kind the emitter makes, and over
generated documents of strings that need quoting, escaping, folding or several lines (those
that the writer leaves to PyYAML must come out the same too). tests/emit/yamlcheck.py extends
the comparison to every manifest a whole test run writes."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import router
from router.bench.generator import generate
from router.config import KubernetesSettings
from router.emit.k8s import yamlio
from router.emit.kubernetes import KubernetesEmitter, manifests, namespaces
from tests.emit.pure_yaml import pure_dump
from tests.emit.test_kubernetes_emit import every_kind, job, service
from tests.profiles import BOUNDED


def _same(docs: list[dict[str, Any]], fast: bool = True) -> None:
    """The file dump_documents writes is pure PyYAML's; `fast`: the block writer wrote it."""
    expected = pure_dump(docs)
    assert yamlio.dump_documents(docs) == yamlio.HEADER + expected
    if fast:
        assert yamlio._fast(docs) == expected


@pytest.mark.parametrize(("size", "seed"), [("S", 0), ("S", 1), ("S", 2)])
def test_every_bench_manifest_is_written_by_the_block_writer_as_pyyaml_writes_it(
    size: str, seed: int
) -> None:
    bench = generate(size, seed)
    platform = router.Platform.from_objects(
        policy=bench.policy, inventory=bench.inventory, workloads=bench.workloads
    )
    plan = router.plan(platform, workers=1)
    placed = [p for p in plan.placements if p.backend == "kubernetes"]
    assert len(placed) >= 5
    for p in placed:
        _same(manifests(p))
    _same(namespaces(placed))


def test_every_kind_of_manifest_and_the_cluster_files() -> None:
    placements = every_kind()
    for p in placements:
        _same(manifests(p))
    _same(namespaces(placements))
    emitter = KubernetesEmitter(KubernetesSettings(create_namespaces=True))
    files = emitter.finish("k8s-prod", placements)
    assert len(files) == 2
    for text in files.values():
        docs = list(yaml.safe_load_all(text))
        _same(docs)


def test_hostile_values_come_out_as_pyyaml_writes_them() -> None:
    hostile = {"A": "y", "B": "1e3", "C": "multi\nline", "D": "0o17", "E": "é: #x", "F": ""}
    _same(manifests(job(env=hostile)))
    script = "set -e\n  cd /w\n\nexec python train.py\n"  # a literal block, indented
    _same(manifests(job(env={"SCRIPT": script, "X": " lead\ntrail", "Y": "a\n  b"})))
    _same([{"a": [{"b": [script, [script]]}], "c": "x\n\n"}], fast=False)  # `|+`: PyYAML's
    assert yamlio._fast([{"c": "x\n\n"}]) is None


def test_the_fallback_dumper_is_pure_python_and_writes_what_plain_pyyaml_writes() -> None:
    # Never libyaml's emitter, which writes some documents differently (an empty key):
    # the bytes must not depend on how PyYAML was built.
    assert not issubclass(yamlio._Dumper, getattr(yaml, "CSafeDumper", ()))
    hostile = {"A": "y", "B": "1e3", "C": "multi\nline", "D": "0o17", "E": "é: #x"}
    placements = [service(), job(nodes=2, options={"operator": "pytorchjob"}), job(env=hostile)]
    for p in placements:
        docs = manifests(p)
        assert yamlio._pyyaml(docs) == pure_dump(docs)
    assert yamlio.dump_documents([{"": "x"}]) == yamlio.HEADER + "---\n? ''\n: x\n"


# Pieces of strings that YAML readers treat specially: indicators, comments, booleans and
# numbers of YAML 1.1, null, unicode (printable and not), line breaks of every kind, quotes.
PIECES = [
    ":", ": ", "#", " #", "-", "- ", "?", "? ", "yes", "No", "y", "n", "on", "OFF", "true",
    "0x1", "0o17", "0b1", "1e3", "1_000", "08", "1.5", ".5", "-1", "+1", ".inf", ".NaN", "~",
    "null", "2001-12-14", "2001-12-14 21:59:43.10", "12:30", "190:20:30", "=", "<<", "---",
    "...", "@", "%", "!", "&a", "*a", "|", ">", "[", "]", "{", "}", ",", "'", '"', "\\", "`",
    " ", "  ", "\t", "\n", "\r", "\x85", "\u2028", "\ufeff", "\x00", "\x7f", "\x1b", "é",
    "日本", "😀", "a", "B", "z9", "w000012-inference", "registry.example.com/a/b:1.0", "/bin/sh",
    "-c", "python main.py", "app.kubernetes.io/name", "8192Mi", "3e-4", "$(NODE_RANK)",
]  # fmt: skip
pieces = st.lists(st.sampled_from(PIECES), max_size=6).map("".join)
strings = pieces | st.text(max_size=12)
# Long lines with spaces, around the width (4096) past which PyYAML may fold one.
keys = strings | st.sampled_from(["a" * 127, "b" * 128, "apiVersion", "metadata"])
scalars = strings | st.integers() | st.booleans() | st.none()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)
documents = st.lists(st.dictionaries(keys, values, min_size=1, max_size=5), min_size=1, max_size=3)


@settings(BOUNDED, max_examples=100, suppress_health_check=list(HealthCheck))
@given(documents)
def test_generated_documents_are_written_as_pyyaml_writes_them(docs: list[dict[str, Any]]) -> None:
    _same(docs, fast=False)
    body = yamlio._fast(docs)
    assert body is None or body == pure_dump(docs)


@pytest.mark.parametrize("word", ["abcd", "a:b", "x'y", "é", 'q"', "a b", "-"])
def test_long_lines_around_the_width_come_out_as_pyyaml_writes_them(word: str) -> None:
    # PyYAML may fold a line past its width (4096): the writer leaves those to it.
    for n in (790, 800, 805, 815, 830):
        line = " ".join([word] * n)
        _same([{"k": line, "deep": {"deeper": [{"key": line}]}, "seq": [line]}], fast=False)


plain = st.from_regex(yamlio._PLAIN, fullmatch=True).filter(lambda s: not s.endswith(" "))


@settings(BOUNDED, max_examples=100, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.tuples(plain.filter(lambda s: len(s) < 128), plain | st.sampled_from(PIECES)),
        min_size=1,
        max_size=8,
    )
)
def test_strings_the_writer_styles_itself_come_out_as_pyyaml_writes_them(
    pairs: list[tuple[str, str]],
) -> None:
    docs: list[dict[str, Any]] = [dict(pairs), {"list": [v for _, v in pairs]}]
    expected = pure_dump(docs)
    body = yamlio._fast(docs)
    assert body is None or body == expected
    if all("\n" not in v and "\x85" not in v and "\u2028" not in v for _, v in pairs):
        assert body == expected  # single-line values and simple keys: the writer's own
