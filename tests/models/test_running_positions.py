"""Running work that names no node of the inventory is an error at the item's key in the
running-work file: line, column, caret, and a did-you-mean (the audit of stop 18 found
these errors with no position)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from router.cli.main import cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ml-platform"
ITEM = """running:
  - {cluster: hpc-east, node_set: gpu-h100, node: 1, gpus: 2, cpus: 8, memory: 16GiB}
  - cluster: CLUSTER
    node_set: SET
    node: NODE
    cpus: 4
"""


@pytest.mark.parametrize(
    ("cluster", "node_set", "node", "where", "message", "hint"),
    [
        ("hpc-eastt", "cpu", "0", "3:14", 'cluster "hpc-eastt"', 'did you mean "hpc-east"?'),
        ("hpc-east", "gpu-h10", "0", "4:15", 'node set "hpc-east/gpu-h10"', '"gpu-h100"'),
        ("hpc-east", "cpu", "64", "5:11", "node 64 of hpc-east/cpu, which has 64 nodes", None),
    ],
)
def test_unknown_node_is_an_error_at_its_key(
    tmp_path: Path,
    cluster: str,
    node_set: str,
    node: str,
    where: str,
    message: str,
    hint: str | None,
) -> None:
    project = tmp_path / "p"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("out"))
    running = project / "running.yaml"
    text = ITEM.replace("CLUSTER", cluster).replace("SET", node_set).replace("NODE", node)
    running.write_text(text)
    result = CliRunner().invoke(cli, ["plan", str(project), "-r", str(running), "--no-write"])
    assert result.exit_code == 1, result.output
    first = result.output.splitlines()[0]
    assert first.startswith(f"{running}:{where}: error: running work on "), result.output
    assert message in first
    assert "^" in result.output and "internal error" not in result.output
    if hint:
        assert hint in result.output
    # the first item alone is fine: the plan packs around it
    running.write_text("\n".join(text.splitlines()[:2]) + "\n")
    ok = CliRunner().invoke(cli, ["plan", str(project), "-r", str(running), "--no-write", "-q"])
    assert ok.exit_code == 3, ok.output  # some workloads stay unplaced in the example
