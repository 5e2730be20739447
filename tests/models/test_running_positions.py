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


@pytest.mark.parametrize(
    ("node_set", "profile", "message", "hint"),
    [
        # a near miss of the pool's profile: the slices it holds would be dropped, not counted
        ("a100-serving", "1g.20gb", "whose GPUs are cut into 1g.10gb only", '"1g.10gb"'),
        # a profile the pool is not cut into (a stale inventory)
        ("a100-serving", "3g.40gb", "whose GPUs are cut into 1g.10gb only", None),
        ("l4-serving", "1g.10gb", "whose GPUs are not cut into MIG slices", None),
    ],
)
def test_slices_of_a_profile_the_node_lacks_are_an_error(
    tmp_path: Path, node_set: str, profile: str, message: str, hint: str | None
) -> None:
    project = tmp_path / "p"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("out"))
    running = project / "running.yaml"
    running.write_text(
        "running:\n"
        f"  - cluster: k8s-prod\n    node_set: {node_set}\n    node: 0\n"
        f"    mig: {{{profile}: 7}}\n    cpus: 4\n"
    )
    result = CliRunner().invoke(cli, ["plan", str(project), "-r", str(running), "--no-write"])
    assert result.exit_code == 1, result.output
    first = result.output.splitlines()[0]
    assert first.startswith(f"{running}:5:11: error: running work holds {profile} MIG slices")
    assert f"k8s-prod/{node_set} node 0, {message}" in first, first
    assert "^" in result.output and "internal error" not in result.output
    assert (hint in result.output) if hint else "did you mean" not in result.output
    # the pool's own profile is packed around, not refused
    if node_set == "a100-serving":
        running.write_text(running.read_text().replace(profile, "1g.10gb"))
        args = ["plan", str(project), "-r", str(running), "--no-write", "-q"]
        assert CliRunner().invoke(cli, args).exit_code == 3
