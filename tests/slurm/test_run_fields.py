"""The workload and inventory fields of how a Slurm job runs (issue 13), as a user meets
them: errors at the line of the field, with what was expected."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from router.errors import RouterError
from router.models.loader import load_inventory, load_workloads


def _error(tmp_path: Path, text: str, inventory: bool = False) -> str:
    path = tmp_path / "x.yaml"
    path.write_text(textwrap.dedent(text).lstrip())
    with pytest.raises(RouterError) as e:
        (load_inventory if inventory else load_workloads)(path)
    return e.value.format()


@pytest.mark.parametrize(
    ("fields", "line", "message"),
    [
        (
            "launcher: torchrun\n  ranks_per_node: 4",
            4,
            "ranks_per_node is for launcher mpi, not torchrun",
        ),
        ("launcher: mpi\n  procs_per_node: 4", 4, "procs_per_node is for launcher torchrun"),
        ("launcher: deepspeed", 3, 'must be one of "torchrun", "mpi", "plain"'),
        ("mounts: [/lustre, 'data:/data']", 3, "mounts[1]: a mount's path must be an absolute"),
        ("mounts: ['/a:/b:rwx']", 3, 'must be "SRC", "SRC:DST" or "SRC:DST:ro|rw"'),
        ('setup: ["module load a\\nsrun evil"]', 3, "must be one line"),
        ("array: {count: 0}", 3, "array.count: must be a whole number ≥ 1"),
        ("array: {count: 4, paralel: 2}", 3, 'unknown field "paralel"'),
        ("checkpoint: {signal_lead: 30h}", 3, "signal_lead must be 1 s to 65535 s"),
        ("after: [x]", 3, "cannot start after itself"),
        ("replicas: 2\n  array: {count: 3}", 4, "a service (replicas, or kind inference) cannot"),
    ],
)
def test_bad_run_fields_fail_at_their_line(
    tmp_path: Path, fields: str, line: int, message: str
) -> None:
    text = _error(tmp_path, f"- name: x\n  command: run\n  {fields}\n")
    assert f"x.yaml:{line}:" in text.splitlines()[0], text
    assert message in text


def test_slurm_settings_belong_to_a_slurm_cluster(tmp_path: Path) -> None:
    text = _error(tmp_path, """
        clusters:
          - name: k
            backend: kubernetes
            slurm: {log_dir: /logs}
            node_pools: [{name: p, nodes: 1, cpus_per_node: 4, memory_per_node: 4GiB}]
        """, inventory=True)  # fmt: skip
    assert "slurm: settings are for a slurm cluster" in text


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ("{log_dir: logs}", "slurm.log_dir: the folder must be an absolute path"),
        ("{qos_by_priority: {urgent: x}}", "urgent"),
        ("{nice_by_priority: {low: -5}}", "must be a whole number ≥ 0"),
        ("{qos_by_priority: {high: 'a b'}}", "letters, digits"),
    ],
)
def test_bad_slurm_settings_are_explained(tmp_path: Path, settings: str, message: str) -> None:
    text = _error(tmp_path, f"""
        clusters:
          - name: h
            backend: slurm
            slurm: {settings}
            partitions: [{{name: p, nodes: 1, cpus_per_node: 4, memory_per_node: 4GiB}}]
        """, inventory=True)  # fmt: skip
    assert "x.yaml:4:" in text.splitlines()[0] and message in text, text
