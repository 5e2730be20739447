"""Every Slurm layout in data/ (real outputs, see data/README.md) → the inventory it must give.

For each fixture: the node sets (usable nodes, powered-down headroom), the partitions and the
node sets they draw on, the nodes left out, GPU types and limits; then probes through
`router plan`: whole-node jobs, single-GPU jobs of each type and long jobs placed must be
exactly what the cluster holds, each node counted once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from router.importers import ImportedCluster, render_inventory
from router.importers.slurm import import_slurm, read_nodes, read_partitions
from router.models import Inventory, Partition
from tests.importers.probe import held, placed, single_gpus, whole_nodes

DATA = Path(__file__).parent / "data"


def imported(nodes: str, partitions: str | None = None, **kw: Any) -> ImportedCluster:
    n = read_nodes((DATA / nodes).read_text(encoding="utf-8"), nodes)
    p = (
        read_partitions((DATA / partitions).read_text(encoding="utf-8"), partitions)
        if partitions
        else None
    )
    return import_slurm(n, p, source=nodes, partitions_source=partitions, **kw)


def inventory(nodes: str, partitions: str | None = None) -> tuple[str, Inventory]:
    text = render_inventory(imported(nodes, partitions))
    return text, Inventory.model_validate(yaml.safe_load(text))


def parts(inv: Inventory) -> dict[str, Partition]:
    return {r.target.name: r.target for r in inv.targets() if isinstance(r.target, Partition)}


# fixture → node sets {name: (usable, ceiling)}, targets {name: (partition, node sets)},
# nodes left out
CASES: dict[
    tuple[str, str | None],
    tuple[dict[str, tuple[int, int]], dict[str, tuple[str, list[str]]], set[str]],
] = {
    ("sinfo-21.08.json", None): (
        {"cpu64": (3, 3)},
        {"hw": ("hw", ["cpu64"])},
        {"cs5.example.company.com"},
    ),
    ("live-22.05-sinfo.json", "live-22.05-scontrol-partitions.txt"): (
        {"h100x8": (1, 1)},
        {"gpu": ("gpu", ["h100x8"]), "equity-high-priority": ("EquityHighPriority", ["h100x8"])},
        {"cpu-n1", "cpu-n2", "cpu-n3", "gpu-n2", "gpu-n3", "gpu-n4"},
    ),
    ("live-22.05-scontrol-nodes.txt", "live-22.05-scontrol-partitions.txt"): (
        {"h100x8": (1, 1)},
        {"gpu": ("gpu", ["h100x8"]), "equity-high-priority": ("EquityHighPriority", ["h100x8"])},
        {"cpu-n1", "cpu-n2", "cpu-n3", "gpu-n2", "gpu-n3", "gpu-n4"},
    ),
    ("sinfo-25.11.json", None): (
        {
            "cpu22": (1, 16),
            "cpu32": (0, 8),
            "cpu8": (0, 8),
            "gpux1": (0, 8),
            "spot-cpu16": (0, 32),
            "standard-cpu16": (0, 32),
        },
        {
            "computehigh": ("computehigh", ["cpu22"]),
            "gpul4": ("gpul4", ["gpux1"]),
            "highmem": ("highmem", ["cpu32"]),
            "nvmescratch": ("nvmescratch", ["cpu8"]),
            "spot": ("spot", ["spot-cpu16"]),
            "standard": ("standard", ["standard-cpu16"]),
        },
        set(),
    ),
    ("restd-nodes-23.11.json", "restd-partitions-23.11.json"): (
        {"cpu64": (2, 2), "h200x4": (2, 2)},
        {
            "ia": ("ia", ["h200x4"]),
            "normal": ("normal", ["cpu64"]),
            "standard": ("standard", ["cpu64"]),
        },
        {"cn1", "cn4"},
    ),
    ("restd-nodes-23.11.1.json", "restd-partitions-23.11.1.json"): (
        {
            "a100x1": (1, 1),
            "cpu28": (2, 2),
            "cpu40": (1, 1),
            "gpu-gpux3": (2, 2),
            "h100x8": (1, 1),
            "interactivegpu-gpux3": (1, 1),
        },
        {
            "amt": ("amt", ["cpu40"]),
            "gpu-a100x1": ("gpu", ["a100x1"]),
            "gpu-gpux3": ("gpu", ["gpu-gpux3"]),
            "gpulong": ("gpulong", ["gpu-gpux3"]),
            "interactive": ("interactive", ["cpu28"]),
            "interactivegpu": ("interactivegpu", ["interactivegpu-gpux3"]),
            "kerngpu": ("kerngpu", ["h100x8"]),
            "preempt-a100x1": ("preempt", ["a100x1"]),
            "preempt-cpu28": ("preempt", ["cpu28"]),
            "preempt-cpu40": ("preempt", ["cpu40"]),
            "preempt-gpux3": ("preempt", ["gpu-gpux3", "interactivegpu-gpux3"]),
            "preempt-h100x8": ("preempt", ["h100x8"]),
        },
        {"dtn1", "dtn2", "n0164", "n0999"},
    ),
    ("scontrol-nodes-23.02-3nodes.json", None): (
        {"a100x2": (1, 1), "cpu256": (1, 1), "cpu72": (1, 1)},
        {
            "jinx-a100x2": ("jinx", ["a100x2"]),
            "jinx-cpu256": ("jinx", ["cpu256"]),
            "jinx-cpu72": ("jinx", ["cpu72"]),
            "magic-cpu256": ("magic", ["cpu256"]),
            "magic-cpu72": ("magic", ["cpu72"]),
            "sorcery": ("sorcery", ["a100x2"]),
        },
        set(),
    ),
    ("scontrol-nodes-23.02-2nodes.json", None): (
        {"a100x2": (1, 1), "a100x8": (1, 1)},
        {
            "jinx-a100x2": ("jinx", ["a100x2"]),
            "jinx-a100x8": ("jinx", ["a100x8"]),
            "sorcery-a100x2": ("sorcery", ["a100x2"]),
            "sorcery-a100x8": ("sorcery", ["a100x8"]),
        },
        set(),
    ),
    ("restd-nodes-24.05-0.0.41.json", "restd-partitions-24.05-0.0.41.json"): (
        {"batch-cpu64": (80, 80), "debug-cpu64": (19, 19), "interactive-cpu64": (1, 1)},
        {
            "batch": ("batch", ["batch-cpu64"]),
            "debug": ("debug", ["debug-cpu64"]),
            "interactive": ("interactive", ["interactive-cpu64"]),
        },
        set(),
    ),
    ("restd-nodes-24.11-0.0.42.json", "restd-partitions-24.11-0.0.42.json"): (
        {"cpu64": (2, 2), "h200x4": (2, 2)},
        {"ia": ("ia", ["h200x4"]), "standard": ("standard", ["cpu64"])},
        {"cn3", "cn4"},
    ),
    ("restd-nodes-25.05-0.0.43.json", "restd-partitions-25.05-0.0.43.json"): (
        {"cpu64": (2, 2), "h100x4": (2, 2)},
        {"gpu": ("gpu", ["h100x4"]), "normal": ("normal", ["cpu64"])},
        {"cn3", "cn4"},
    ),
    ("restd-nodes-25.11-0.0.44.json", "restd-partitions-25.11-0.0.44.json"): (
        {"cpu64": (2, 2), "gpux4": (2, 2), "h100x4": (2, 2)},
        {
            "gpu-gpux4": ("gpu", ["gpux4"]),
            "gpu-h100x4": ("gpu", ["h100x4"]),
            "normal": ("normal", ["cpu64"]),
        },
        {"cn1", "cn2"},
    ),
    ("scontrol-nodes-25.05.json", None): (
        {"gh200x1": (2, 2)},
        {"all": ("all", ["gh200x1"]), "gh200": ("gh200", ["gh200x1"])},
        set(),
    ),
    ("scontrol-nodes-24.11.txt", None): (
        {
            "cpu-cpu32": (7, 7),
            "cpu-cpu32-2": (2, 2),
            "cpu-cpu32-3": (1, 1),
            "model-ax2": (2, 2),
            "model-ax4": (4, 4),
            "model-bx4": (4, 4),
        },
        {
            "cpu": ("cpu", ["cpu-cpu32", "cpu-cpu32-2", "cpu-cpu32-3"]),
            "debug": ("debug", ["cpu-cpu32-2"]),
            "high": ("high", ["cpu-cpu32-2", "cpu-cpu32-3"]),
            "gpu-model-ax2": ("gpu", ["model-ax2"]),
            "gpu-model-ax4": ("gpu", ["model-ax4"]),
            "gpu-model-bx4": ("gpu", ["model-bx4"]),
        },
        set(),
    ),
    ("scontrol-nodes-25.11.txt", None): (
        {"cpu32": (2, 2)},
        {"cpu": ("cpu", ["cpu32"])},
        {"c1", "c2", "c3", "c4", "c5"},
    ),
}


@pytest.mark.parametrize(("files", "expected"), CASES.items(), ids=[k[0] for k in CASES])
def test_fixture_imports_to_its_inventory(
    files: tuple[str, str | None], expected: tuple[Any, Any, set[str]]
) -> None:
    sets, targets, out = expected
    cluster = imported(*files)
    text = render_inventory(cluster)
    inv = Inventory.model_validate(yaml.safe_load(text))
    got_sets = {
        s.spec.name: (s.spec.nodes, s.spec.capacity_nodes)
        for s in inv.node_sets()
        if hasattr(s.spec, "name")
    }
    assert got_sets == sets
    got = {name: (t.slurm_name, t.node_sets) for name, t in parts(inv).items()}
    assert got == targets
    assert {line.split(":", 1)[0] for line in cluster.exclusions} == out
    for line in cluster.exclusions:  # each is a comment in the YAML too
        assert line.endswith(", left out") and f"    #   {line}" in text.splitlines()
    assert held(text) == sum(c for _, c in sets.values())
    # every usable node is in exactly one node set, each named once
    names = [n for s in inv.node_sets() for n in s.spec.node_names]
    assert len(names) == len(set(names)) == sum(c for _, c in sets.values())


def test_live_22_05_limits_names_and_exclusion_reasons() -> None:
    cluster = imported("live-22.05-sinfo.json", "live-22.05-scontrol-partitions.txt")
    assert "gpu-n3: down, drained (reason: bad GPU), left out" in cluster.exclusions
    assert "cpu-n3: down (reason: power supply), left out" in cluster.exclusions
    _, inv = inventory("live-22.05-sinfo.json", "live-22.05-scontrol-partitions.txt")
    p = parts(inv)
    eq, gpu = p["equity-high-priority"], p["gpu"]
    assert eq.max_time is not None and eq.max_time >= 10**9  # UNLIMITED
    assert (eq.max_nodes_per_job, eq.oversubscribe) == (2, "exclusive")
    assert eq.allow_accounts == ["equity", "research"]
    assert gpu.max_time == 3 * 86400 and gpu.allow_accounts is None
    assert (gpu.gpu_type, gpu.gpus_per_node, gpu.cpus_per_node) == ("h100", 8, 96)
    assert gpu.memory_per_node == 512 * 1024 and gpu.features == ["ib"]
    # cpu and long have no usable node: left out, saying so
    assert any("partition long: no usable node" in n for n in cluster.notes)


def test_text_and_json_of_the_same_live_moment_give_the_same_inventory() -> None:
    a = imported("live-22.05-sinfo.json", "live-22.05-scontrol-partitions.txt")
    b = imported("live-22.05-scontrol-nodes.txt", "live-22.05-scontrol-partitions.txt")
    assert [t.fields for t in a.targets] == [t.fields for t in b.targets]
    assert [s.fields for s in a.node_sets] == [s.fields for s in b.node_sets]
    assert a.exclusions == b.exclusions


def test_scontrol_without_o_gives_the_same_inventory_as_with_it() -> None:
    a = imported("live-22.05-scontrol-nodes.txt", "live-22.05-scontrol-partitions.txt")
    b = imported("live-22.05-scontrol-nodes-long.txt", "live-22.05-scontrol-partitions-long.txt")
    assert [t.fields for t in a.targets] == [t.fields for t in b.targets]
    assert [s.fields for s in a.node_sets] == [s.fields for s in b.node_sets]
    assert a.exclusions == b.exclusions and len(b.targets) == 2


def test_cloud_nodes_are_headroom_and_unlimited_time_passes_where(tmp_path: Path) -> None:
    text, inv = inventory("sinfo-25.11.json")
    ch = parts(inv)["computehigh"]
    assert (ch.nodes, ch.capacity_nodes, ch.cpus_per_node) == (1, 16, 22)
    assert inv.cluster("ucrslurmcl").name == "ucrslurmcl"  # meta.slurm.cluster
    # 104 nodes (16 + 8 × 3 + 32 × 2) Slurm can power up, each once; MaxTime=UNLIMITED
    assert whole_nodes(tmp_path / "a", text, 110) == 104
    assert whole_nodes(tmp_path / "b", text, 110, duration="30d") == 104
    assert single_gpus(tmp_path / "c", text, 12, "any") == 8
    assert single_gpus(tmp_path / "d", text, 3, "l4") == 0  # gres gpu:1 names no model


def test_probes_count_shared_nodes_once(tmp_path: Path) -> None:
    text, _ = inventory("live-22.05-sinfo.json", "live-22.05-scontrol-partitions.txt")
    # gpu-n1 is in gpu and EquityHighPriority: one node, 8 GPUs, however many partitions
    assert whole_nodes(tmp_path / "a", text, 4) == 1
    assert single_gpus(tmp_path / "b", text, 12, "h100") == 8
    # 10 days: only EquityHighPriority (UNLIMITED) and only for its accounts
    assert whole_nodes(tmp_path / "c", text, 3, duration="10d") == 0
    assert (
        placed(tmp_path / "d", text, 3, labels={"probe": "whole"}, duration="10d", account="equity")
        == 1
    )


def test_probes_of_a_mixed_partition(tmp_path: Path) -> None:
    text, _ = inventory("scontrol-nodes-24.11.txt")
    assert held(text) == 20  # 10 CPU nodes (in cpu, debug, high) + 10 GPU nodes
    assert (held(text, "model-a"), held(text, "model-b")) == (20, 16)
    # model_a: 2 nodes × 2 (nodes with both models) + 4 × 4; model_b: 4 × 4 (the 2 × 2 of
    # the two-model nodes are left out: understated, never overstated)
    assert single_gpus(tmp_path / "b", text, 24, "model-a") == 20
    assert single_gpus(tmp_path / "c", text, 24, "model-b") == 16


def test_whole_node_probe_of_partitions_sharing_nodes(tmp_path: Path) -> None:
    text, _ = inventory("scontrol-nodes-24.11.txt")
    assert whole_nodes(tmp_path / "a", text, 24) == 20


def test_probes_of_slurmrestd_25_11(tmp_path: Path) -> None:
    text, _ = inventory("restd-nodes-25.11-0.0.44.json", "restd-partitions-25.11-0.0.44.json")
    assert whole_nodes(tmp_path / "a", text, 8) == 6  # cn1 drained, cn2 down
    assert single_gpus(tmp_path / "b", text, 12, "h100") == 8
    assert single_gpus(tmp_path / "c", text, 20, "any") == 16  # h100 and untyped
    assert whole_nodes(tmp_path / "d", text, 3, duration="3h") == 0  # MaxTime 2h


def test_probes_of_slurmrestd_24_05(tmp_path: Path) -> None:
    text, inv = inventory("restd-nodes-24.05-0.0.41.json", "restd-partitions-24.05-0.0.41.json")
    assert (parts(inv)["debug"].max_time, parts(inv)["interactive"].max_time) == (3600, 600)
    assert whole_nodes(tmp_path / "a", text, 104, duration="5min") == 100
    assert whole_nodes(tmp_path / "c", text, 104, duration="30min") == 99  # interactive: 10min
    assert whole_nodes(tmp_path / "b", text, 84, duration="90min") == 80  # batch only


def test_scontrol_partitions_json_limits() -> None:
    got = {
        p.name: p
        for p in read_partitions((DATA / "scontrol-partitions-25.05.json").read_text(), "p.json")
    }
    assert sorted(got) == ["cpu", "default-partition", "gpu"]
    assert got["gpu"].nodes == ("node-001", "node-002") and got["cpu"].nodes == ()
    assert all(p.max_time == "unlimited" and p.max_nodes == "unlimited" for p in got.values())
    assert got["gpu"].state == "UP" and got["gpu"].allow_accounts is None
    restd = {
        p.name: p
        for p in read_partitions(
            (DATA / "restd-partitions-24.05-0.0.41.json").read_text(), "r.json"
        )
    }
    assert restd["debug"].max_time == 3600 and restd["interactive"].max_time == 600
    assert len(restd["batch"].nodes or ()) == 80 + 432  # cn[001-080,101-532]


def test_gres_types_normalised_and_kept() -> None:
    cluster = imported("scontrol-nodes-24.11.txt")
    fields = {s.fields["name"]: s.fields for s in cluster.node_sets}
    assert fields["model-ax4"]["gpu_type"] == "model-a"
    assert fields["model-ax4"]["gres_type"] == "model_a"  # what --gpus-per-node must say
    notes = [n for s in cluster.node_sets for n in s.notes]
    assert any("several GPU models" in n and "model_b left out" in n for n in notes)


def test_same_input_same_bytes() -> None:
    a = render_inventory(imported("sinfo-25.11.json"))
    b = render_inventory(imported("sinfo-25.11.json"))
    assert a == b


def test_production_23_11_mig_gres_types_and_constraints(tmp_path: Path) -> None:
    text, inv = inventory("restd-nodes-23.11.1.json", "restd-partitions-23.11.1.json")
    p = parts(inv)
    # gpu:1g.10gb:21 is 21 MIG slices: 3 A100s cut into 7, never 21 GPUs
    mig = p["gpu-gpux3"]
    assert (mig.gpus_per_node, mig.whole_gpus_per_node, mig.slices_per_node) == (
        3,
        0,
        {"1g.10gb": 21},
    )
    assert (p["kerngpu"].gpu_type, p["kerngpu"].gres_type) == ("h100", "nvidia_h100_80gb_hbm3")
    # preempt mixes 7 node types: each sub-target lands on its type
    assert p["preempt-h100x8"].constraint == "8480cl"
    assert p["preempt-cpu28"].constraint == "broadwell"
    assert p["preempt-gpux3"].constraint == "gpu-10gb"
    assert p["gpu-a100x1"].nodelist == "n0160"  # n0164's features hold all of n0160's
    assert p["gpulong"].constraint == "gpu-10gb"  # the drained n0164 is gpulong's other type
    assert (p["preempt-cpu28"].max_nodes_per_job, p["preempt-cpu28"].max_time) == (48, 7 * 86400)
    assert held(text) == 8 and held(text, "h100") == 8 and held(text, "a100") == 1


def test_single_gpu_probe_of_a_node_in_two_partitions(tmp_path: Path) -> None:
    text, _ = inventory("restd-nodes-23.11.1.json", "restd-partitions-23.11.1.json")
    assert single_gpus(tmp_path / "a", text, 4, "a100") == 1  # n0160, in gpu and preempt


def test_23_02_constraints_from_site_features_and_specialised_memory(tmp_path: Path) -> None:
    text, inv = inventory("scontrol-nodes-23.02-2nodes.json")
    p = parts(inv)
    # two A100 node types in both partitions, told apart by a Slurm feature only each has
    assert p["sorcery-a100x8"].constraint == "ETH:100G"
    assert p["sorcery-a100x2"].constraint == "ETH:25G"
    # gx03: RealMemory 512000 less MemSpecLimit 16384; 48 effective CPUs
    assert (p["sorcery-a100x2"].memory_per_node, p["sorcery-a100x2"].cpus_per_node) == (495616, 48)
    # KEY:VALUE features constrain but are not inventory features: a comment says so
    assert p["sorcery-a100x8"].features == ["g", "x"]
    assert "features left out (not valid names): ARCH:X86" in text
    assert held(text, "a100") == 10
