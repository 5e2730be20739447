"""out/ written by forked children (router.fork): the same results and errors as the parts
one after the other, the same bytes in out/, and a failure anywhere leaves out/ as it was."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

import router
import router.api
from router.emit import emit_all
from router.errors import PlanError
from router.fork import ChildFailed, run_parts
from router.models.placement import Placement
from router.output import write_parts
from tests.gitops.conftest import copy_example
from tests.gitops.test_output import tree


def _square(n: int) -> dict[str, int]:
    return {"n": n, "square": n * n, "pid": os.getpid()}


def test_results_come_back_in_order_from_children() -> None:
    got = run_parts(_square, list(range(5)))
    assert [g["square"] for g in got] == [0, 1, 4, 9, 16]
    assert got[0]["pid"] == os.getpid()  # the first part runs here, the others do not
    assert len({g["pid"] for g in got}) == 5
    big = run_parts(lambda n: "x" * n, [1, 3_000_000])  # more than a pipe holds
    assert big == ["x", "x" * 3_000_000]


def _fails(n: int) -> int:
    if n == 1:
        raise PlanError("part one is wrong", hint="fix part one")
    if n == 2:
        raise PlanError("part two is wrong")
    if n == 3:
        raise KeyError("bug")
    if n == 4:
        os.kill(os.getpid(), signal.SIGKILL)
    return n


@pytest.mark.parametrize("parallel", [True, False])
def test_the_first_failing_part_is_the_error(parallel: bool) -> None:
    with pytest.raises(PlanError, match="part two is wrong"):
        run_parts(_fails, [0, 2, 1], parallel=parallel)  # 2 comes first in the loop
    with pytest.raises(PlanError) as caught:
        run_parts(_fails, [0, 1, 2], parallel=parallel)
    assert (caught.value.message, caught.value.hint) == ("part one is wrong", "fix part one")


def test_a_child_that_crashes_or_is_killed_is_a_clean_error() -> None:
    with pytest.raises(ChildFailed, match="KeyError: 'bug'"):
        run_parts(_fails, [0, 3])
    with pytest.raises(ChildFailed, match="killed by signal 9"):
        run_parts(_fails, [0, 4])


def test_a_failing_part_leaves_out_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_parts(out, [lambda: {"a.txt": "1\n"}, lambda: {"b/c.txt": "2\n"}])
    before = tree(out)
    assert sorted(before) == ["a.txt", "b/c.txt"]

    def bad() -> dict[str, str]:
        raise PlanError("this part cannot be written")

    for parts in ([lambda: {"a.txt": "new\n"}, bad], [bad, lambda: {"x.txt": "new\n"}]):
        with pytest.raises(PlanError, match="cannot be written"):
            write_parts(out, parts)
        assert tree(out) == before
    with pytest.raises(PlanError, match="refusing to write outside out/"):
        write_parts(out, [lambda: {"a.txt": "new\n"}, lambda: {"../escape.txt": "x"}])
    assert tree(out) == before and not (tmp_path / "escape.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no sibling left behind


def test_a_folder_another_writer_replaced_is_looked_up_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forked writers make a shared folder (kubernetes/) each under a name of its own and
    rename it into place; a rename onto the other's still empty one replaces it, and a
    mkdir or create that had looked up the replaced folder fails with ENOENT (seen once
    in the suite: `.forked.new-*/kubernetes/.30579-2-*`). Here the other writer's rename
    happens just before this writer's mkdir and its open, each failing as the kernel
    fails them; the write looks the path up again and out/ is whole."""
    real_mkdir, real_open = os.mkdir, os.open
    hit: list[str] = []

    def replaced(folder: str) -> None:
        other = folder + ".other"
        real_mkdir(other)
        os.rename(other, folder)  # onto an empty folder: it takes its place
        hit.append(folder)

    def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if "/kubernetes/." in str(path) and not hit:
            replaced(os.path.dirname(path))
            raise FileNotFoundError(2, "No such file or directory", str(path))
        real_mkdir(path, *args, **kwargs)

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith("/kubernetes/c1/a.yaml") and len(hit) == 1:
            replaced(os.path.dirname(path))
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)
    files = {"kubernetes/c1/a.yaml": "a: 1\n", "kubernetes/c1/b.yaml": "b: 2\n"}
    assert write_parts(tmp_path / "out", [lambda: files], parallel=False) == sorted(files)
    monkeypatch.undo()
    assert len(hit) == 2 and sorted(tree(tmp_path / "out")) == sorted(files)
    assert {rel: (tmp_path / "out" / rel).read_text() for rel in files} == files


def test_a_plan_written_in_parallel_is_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = copy_example(tmp_path / "platform")
    plan = router.plan(router.load(project))
    alone = plan.write(tmp_path / "alone")  # the example is below PARALLEL_FROM
    monkeypatch.setattr(router.api, "PARALLEL_FROM", 0)
    forked = plan.write(tmp_path / "forked")
    assert forked == alone == sorted(plan.files())
    assert tree(tmp_path / "forked") == tree(tmp_path / "alone")
    again = plan.write(tmp_path / "forked")  # over the previous out/: files linked
    assert again == alone and tree(tmp_path / "forked") == tree(tmp_path / "alone")
    assert {p.backend for p in plan.placements} == {"slurm", "kubernetes"}


def test_emitted_files_are_split_by_whole_clusters_in_order(tmp_path: Path) -> None:
    project = copy_example(tmp_path / "platform")
    plan = router.plan(router.load(project))
    placements = plan.placements
    clusters = sorted({(p.backend, p.cluster) for p in placements})
    assert len(clusters) >= 3
    for count in (1, 2, 3, len(clusters), 50):
        chunks = router.api.emit_chunks(placements, count)
        assert 1 <= len(chunks) <= min(count, len(clusters))
        assert sorted(p.workload.name for c in chunks for p in c) == sorted(
            p.workload.name for p in placements
        )
        keys = [sorted({(p.backend, p.cluster) for p in c}) for c in chunks]
        assert [k for ks in keys for k in ks] == clusters  # whole clusters, in order
        files: dict[str, str] = {}
        for c in chunks:
            files.update(emit_all(c, plan.platform.project.kubernetes))
        assert files == {k: v for k, v in plan.files().items() if k != "plan.json"}

    # About the same cost each (a Kubernetes placement's manifests cost more than a Slurm
    # job's script): no part above its share and a cluster.
    def cost(ps: list[Placement]) -> int:
        return sum(router.api.EMIT_COST[p.backend] for p in ps)

    two = router.api.emit_chunks(placements, 2)
    largest = max(cost([p for p in placements if (p.backend, p.cluster) == k]) for k in clusters)
    assert max(cost(c) for c in two) <= cost(placements) / 2 + largest
    assert router.api.emit_chunks([], 4) == []


def _started(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the parts Plan.write starts in a child (router.fork.start)."""
    import router.fork

    calls: list[int] = []
    real = router.fork.start

    def counted(fn: Any) -> Any:
        calls.append(1)
        return real(fn)

    monkeypatch.setattr(router.fork, "start", counted)
    return calls


@pytest.mark.parametrize("against_previous", [False, True])
def test_plan_json_with_its_reasons_made_in_a_child_is_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, against_previous: bool
) -> None:
    project = copy_example(tmp_path / "platform")
    first = router.plan(router.load(project))
    first.write(tmp_path / "first")
    previous = str(tmp_path / "first" / "plan.json") if against_previous else None
    alone = router.plan(router.load(project), previous)
    text = alone.json()  # made here, in one piece, before any write
    assert alone.unplaced and '"unplaced": [\n    {' in text  # reasons to put in
    assert '"scale_out": [\n    {' in text  # and scale_out's checks
    monkeypatch.setattr(router.api, "PARALLEL_FROM", 0)
    calls = _started(monkeypatch)
    forked = router.plan(router.load(project), previous)
    forked.write(tmp_path / "forked")
    assert calls == [1]  # its reasons were made in a child
    assert ("_beside" in forked.__dict__) is not against_previous  # the diff reads them
    assert (tmp_path / "forked" / "plan.json").read_text() == forked.json() == text
    assert forked.document() == alone.document()
    assert forked.render("text") == alone.render("text")
    assert forked.diff() == alone.diff()
    forked.write(tmp_path / "again")  # made once: nothing started again
    assert calls == [1] and tree(tmp_path / "again") == tree(tmp_path / "forked")


@pytest.mark.parametrize(
    ("error", "kind", "words"),
    [
        (PlanError("the reasons cannot be made"), PlanError, "the reasons cannot be made"),
        (KeyError("bug"), ChildFailed, "KeyError: 'bug'"),
    ],
)
def test_a_failing_reasons_child_fails_the_write_and_leaves_out_as_it_was(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    kind: type[Exception],
    words: str,
) -> None:
    from click.testing import CliRunner

    from router.cli.main import cli
    from router.plan import document

    project = copy_example(tmp_path / "platform")
    out = tmp_path / "out"
    router.plan(router.load(project)).write(out)
    before = tree(out)
    monkeypatch.setattr(router.api, "PARALLEL_FROM", 0)
    real = document.plan_later

    def fails(plan: Any, text: bool = False) -> Any:
        if os.getpid() != parent:
            raise error  # in the child only
        return real(plan, text)

    parent = os.getpid()
    monkeypatch.setattr(document, "plan_later", fails)
    plan = router.plan(router.load(project))
    with pytest.raises(kind, match=words):
        plan.write(out)
    assert tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "platform"]  # no sibling
    result = CliRunner().invoke(cli, ["plan", str(project), "-o", str(out)])
    assert result.exit_code == 1 and words in result.output
    assert "Traceback" not in result.output and tree(out) == before
    # The plan is not left broken: written again, the same bytes.
    monkeypatch.setattr(document, "plan_later", real)
    assert plan.write(out) == sorted(before) and tree(out) == before
