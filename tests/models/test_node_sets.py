"""Node sets shared by targets, the MIG layout, running work and the node classes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from router.errors import RouterError
from router.models import (
    Inventory,
    Partition,
    Running,
    load_running,
    node_classes,
)
from router.models.capacity import NodeShape
from tests.helpers import inventory_error

H100 = {
    "name": "h100",
    "nodes": 4,
    "max_nodes": 6,
    "gpus_per_node": 8,
    "gpu_type": "h100",
    "cpus_per_node": 96,
    "memory_per_node": "1TiB",
    "features": ["ib", "nvlink"],
    "node_names": ["g1", "g2", "g3", "g4"],
    "mig": [{"gpus": 2, "slices": {"1g.10gb": 7}}],
}


def hpc(**change: Any) -> dict[str, Any]:
    cluster: dict[str, Any] = {
        "name": "hpc",
        "backend": "slurm",
        "node_sets": [H100],
        "partitions": [
            {"name": "gpu", "node_sets": ["h100"], "max_time": "72h"},
            {
                "name": "preempt",
                "partition": "Preempt_Low",
                "node_sets": ["h100"],
                "features": ["spot"],
            },
            {"name": "cpu", "nodes": 3, "cpus_per_node": 64, "memory_per_node": "256GiB"},
        ],
    }
    cluster.update(change)
    return {"clusters": [cluster]}


def test_targets_draw_on_one_node_set() -> None:
    inv = Inventory.model_validate(hpc())
    gpu, pre = inv.target("hpc/gpu"), inv.target("hpc/preempt")
    assert gpu.node_sets == pre.node_sets == ("hpc/h100",)
    assert inv.target("hpc/cpu").node_sets == ("hpc/cpu",)
    # The target knows its nodes; its features are the set's plus its own.
    assert (pre.target.nodes, pre.target.capacity_nodes, pre.target.cpus_per_node) == (4, 6, 96)
    assert pre.target.features == ["ib", "nvlink", "spot"]
    assert isinstance(pre.target, Partition) and isinstance(gpu.target, Partition)
    assert pre.target.slurm_name == "Preempt_Low" and gpu.target.slurm_name == "gpu"
    sets = {s.id: s for s in inv.node_sets()}
    assert sorted(sets) == ["hpc/cpu", "hpc/h100"]
    assert sets["hpc/h100"].targets == ("hpc/gpu", "hpc/preempt")


def test_mig_layout_whole_and_slices_apart() -> None:
    t = Inventory.model_validate(hpc()).target("hpc/gpu").target
    assert (t.gpus_per_node, t.whole_gpus_per_node, t.slices_per_node) == (8, 6, {"1g.10gb": 14})


@pytest.mark.parametrize(
    ("change", "text"),
    [
        ({"partitions": [{"name": "gpu", "node_sets": ["h200"]}]}, 'no node set "h200"'),
        (
            {"partitions": [{"name": "gpu", "node_sets": ["h100"], "nodes": 2}]},
            "give either node_sets or the node fields",
        ),
        (
            {"partitions": [{"name": "cpu", "nodes": 1, "cpus_per_node": 1, "memory_per_node": 1}]},
            'node set "h100" is named by no target',
        ),
        (
            {
                "node_sets": [
                    H100,
                    {**H100, "name": "h100b", "cpus_per_node": 48, "node_names": []},
                ],
                "partitions": [{"name": "gpu", "node_sets": ["h100", "h100b"]}],
            },
            "have different nodes",
        ),
        ({"node_sets": [{**H100, "mig": {"1g.10gb": 56}}]}, "mig must say how the GPUs are cut"),
        ({"node_sets": [{**H100, "node_names": ["a"] * 2}]}, 'node "a" is named twice'),
    ],
)
def test_node_set_errors(change: dict[str, Any], text: str) -> None:
    with pytest.raises(ValueError, match=text):
        Inventory.model_validate(hpc(**change))


def test_node_set_error_is_positioned(tmp_path: Path) -> None:
    f = tmp_path / "inventory.yaml"
    text = inventory_error(
        f,
        "clusters:\n"
        "  - name: hpc\n"
        "    backend: slurm\n"
        "    node_sets:\n"
        "      - {name: h100, nodes: 2, cpus_per_node: 8, memory_per_node: 8GiB}\n"
        "    partitions:\n"
        "      - {name: gpu, node_sets: [h10]}\n",
    )
    assert f"{f}:7:" in text and 'no node set "h10"' in text and "h100" in text


def test_a_node_set_error_is_said_once_not_at_every_target(tmp_path: Path) -> None:
    """A bad field of a node set three partitions name: one error, at the set's field, and
    not three more at the partitions (which drew the field from the set); stop 23's notes."""
    f = tmp_path / "inventory.yaml"
    text = inventory_error(
        f,
        "clusters:\n"
        "  - name: hpc\n"
        "    backend: slurm\n"
        "    node_sets:\n"
        "      - name: h100\n"
        "        nodes: 2\n"
        "        cpus_per_node: 8\n"
        "        memory_per_node: 8GiB\n"
        "        mig: {1g.10gb: 7}\n"
        "    partitions:\n"
        "      - {name: gpu, node_sets: [h100]}\n"
        "      - {name: gpu-long, node_sets: [h100]}\n"
        "      - {name: preempt, node_sets: [h100]}\n"
        "      - {name: cpu, nodes: 1, cpus_per_node: 4, memory_per_node: 4GiB, mig: {a: 1}}\n",
    )
    assert text.count("mig must say how the GPUs are cut") == 2, text
    assert f"{f}:9:9" in text and "node_sets[0].mig" in text, text
    # A target that gives the field itself is still told, at its own line.
    assert "partitions[3].mig" in text and f"{f}:14:" in text, text
    assert not any(f"partitions[{i}]" in text for i in range(3)), text


def test_node_set_clash_with_a_target_is_at_the_sets_name(tmp_path: Path) -> None:
    """A node set named like a target with nodes of its own: the error is at the set's name
    (6:15), not at the cluster's `node_sets:` key (4:5); as A22's unused set."""
    f = tmp_path / "inventory.yaml"
    text = inventory_error(
        f,
        "clusters:\n"
        "  - name: hpc\n"
        "    backend: slurm\n"
        "    node_sets:\n"
        "      - {name: h100, nodes: 2, cpus_per_node: 8, memory_per_node: 8GiB}\n"
        "      - {name: cpu, nodes: 2, cpus_per_node: 8, memory_per_node: 8GiB}\n"
        "    partitions:\n"
        "      - {name: gpu, node_sets: [h100]}\n"
        "      - {name: cpu, nodes: 1, cpus_per_node: 4, memory_per_node: 4GiB}\n",
    )
    assert f"{f}:6:16" in text and 'node set "cpu" has the name of a target' in text, text


def test_node_classes_pack_around_running_work() -> None:
    inv = Inventory.model_validate(hpc())
    running = Running.model_validate(
        {
            "running": [
                {
                    "cluster": "hpc",
                    "node": "g2",
                    "gpus": 4,
                    "cpus": 32,
                    "memory": "100GiB",
                    "job": "7",
                },
                {
                    "cluster": "hpc",
                    "node": "g3",
                    "gpus": 4,
                    "cpus": 32,
                    "memory": "100GiB",
                    "job": "8",
                },
                {"cluster": "hpc", "node_set": "h100", "node": 3, "whole": True, "job": "9"},
                {"cluster": "hpc", "node_set": "cpu", "node": 0, "cpus": 60},
            ]
        }
    )
    classes = node_classes(inv, running)
    h100 = classes["hpc/h100"]
    # node 0 idle, nodes 4-5 headroom (idle too); 1 and 2 share a residual; 3 is taken whole.
    assert [(c.indices, c.idle) for c in h100] == [
        ((0, 4, 5), True),
        ((1, 2), False),
        ((3,), False),
    ]
    assert h100[0].free == NodeShape(6, (("1g.10gb", 14),), 96, 1024 * 1024)
    assert h100[1].free == NodeShape(2, (("1g.10gb", 14),), 64, 1024 * 1024 - 100 * 1024)
    assert h100[2].free.empty
    assert [(c.count, c.free.cpus) for c in classes["hpc/cpu"]] == [(2, 64), (1, 4)]


@pytest.mark.parametrize(
    ("item", "text"),
    [
        ({"cluster": "hpc", "node": "g9"}, 'node "g9", which no node set'),
        ({"cluster": "k8s", "node": "g1"}, 'cluster "k8s"'),
        ({"cluster": "hpc", "node_set": "h100", "node": 4}, "node 4 of hpc/h100, which has 4"),
    ],
)
def test_running_work_that_fits_no_node(item: dict[str, Any], text: str) -> None:
    inv = Inventory.model_validate(hpc())
    with pytest.raises(RouterError, match=text):
        node_classes(inv, Running.model_validate({"running": [item]}))


def test_running_work_above_its_node_fills_it_with_a_note() -> None:
    # More than the node has (an OverSubscribe partition's jobs, or an old inventory): the node
    # is full on that axis, what else it has stays free (tests/importers/test_oversubscribe.py).
    inv = Inventory.model_validate(hpc())
    item = {"cluster": "hpc", "node": "g1", "gpus": 2, "cpus": 97, "memory": "1GiB", "job": "x"}
    busy = [c for c in node_classes(inv, Running.model_validate({"running": [item]}))["hpc/h100"]
            if not c.idle]  # fmt: skip
    assert [(c.free.gpus, c.free.cpus, len(c.over)) for c in busy] == [(4, 0, 1)]
    assert "counted full on CPUs: its running work (x) holds 97 of its 96 CPUs" in busy[0].over[0]


def test_load_running_positions_errors(tmp_path: Path) -> None:
    f = tmp_path / "running.yaml"
    f.write_text("running:\n  - {cluster: hpc, node: 3}\n  - {cluster: hpc, node: g1, gpus: -1}\n")
    with pytest.raises(RouterError) as e:
        load_running(f)
    text = str(e.value)
    assert f"{f}:2:" in text and "give node_set too" in text
    assert f"{f}:3:" in text and "gpus" in text


NODE_SETS = (
    "clusters:\n"
    "  - name: hpc\n"
    "    backend: slurm\n"
    "    node_sets:\n"
    "      - name: gpus\n"
    "        nodes: 2\n"
    "        cpus_per_node: 8\n"
    "        memory_per_node: 8GiB\n"
    "SECOND"
    "    partitions:\n"
    "      - name: gpu\n"
    "        node_sets:\n"
    "NAMED"
)


@pytest.mark.parametrize(
    ("second", "named", "where", "text"),
    [
        # the caret at the name to fix, not at `node_sets:` a line above (the audit's A21)
        ("", "          - gpus\n          - gpsu\n", "13:13", 'no node set "gpsu"'),
        ("", "          [gpus, gpsu]\n", "12:18", 'no node set "gpsu"'),
        # one error saying what node_sets is, not three about the node fields it would give
        (
            "",
            "          gpus\n",
            "12:11",
            'node_sets is a list of the cluster\'s node set names, got "gpus"',
        ),
        # an empty list: at its key
        ("", "          []\n", "11:9", "got an empty list"),
        # the second of two node sets of one name
        (
            "      - {name: gpus, nodes: 1, cpus_per_node: 1, memory_per_node: 1GiB}\n",
            "          - gpus\n",
            "9:16",
            'two node sets are named "gpus"',
        ),
    ],
)
def test_node_set_mistakes_point_at_what_to_fix(
    tmp_path: Path, second: str, named: str, where: str, text: str
) -> None:
    f = tmp_path / "inventory.yaml"
    message = inventory_error(f, NODE_SETS.replace("SECOND", second).replace("NAMED", named))
    assert message.startswith(f"{f}:{where}: error:"), message
    assert text in message and message.count("error:") == 1, message


def test_a_bad_running_node_is_one_error(tmp_path: Path) -> None:
    f = tmp_path / "running.yaml"
    f.write_text("running:\n  - {cluster: hpc, node_set: gpus, node: -1}\n")
    with pytest.raises(RouterError) as e:
        load_running(f)
    text = str(e.value)
    assert f"{f}:2:" in text and text.count("must be") == 1, text
    f.write_text("running: []\n---\nrunning: []\n")
    with pytest.raises(RouterError, match="the running work file holds one YAML document"):
        load_running(f)
