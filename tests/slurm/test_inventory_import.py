"""`router inventory import slurm`: from the live cluster, from saved JSON, and through the CLI.

tests/slurm/data/sinfo.json is `sinfo --json` of the session cluster (harness
ROUTERTEST_PARTITIONS), with partitions added by hand (their nodes' "comment" says so):
`mixed` (3 × 8 h100, 1 × 4 h100, 2 × a100+a10, 1 without GPUs), `debug` (shares mixed-n1),
`mig` (MIG slices only) and `Legacy_GPU` (not a DNS label, untyped GPUs).
data/scontrol_partitions.txt is `scontrol show partition -o` of the same, extended likewise.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from router.cli.main import cli
from router.config import load_project
from router.importers import render_inventory
from router.importers.slurm import import_sinfo, parse_gres, parse_max_time
from router.models import Inventory, Partition, load_inventory
from router.plan.build import build_plan
from tests.helpers import job, make_project

from .harness import ROUTERTEST_PARTITIONS, PartitionSpec, SlurmCluster

DATA = Path(__file__).parent / "data"
SINFO = DATA / "sinfo.json"
SCONTROL = DATA / "scontrol_partitions.txt"


def saved() -> str:
    """The YAML imported from the saved files, as the CLI names the source."""
    cluster = import_sinfo(
        json.loads(SINFO.read_text()),
        SCONTROL.read_text(),
        cluster="saved",
        source="sinfo.json and scontrol_partitions.txt",
    )
    return render_inventory(cluster)


def assert_matches(part: Partition, spec: PartitionSpec) -> None:
    assert part.nodes == spec.nodes
    assert part.gpus_per_node == spec.gpus_per_node
    assert part.gpu_type == spec.router_gpu_type
    assert part.cpus_per_node == spec.cpus_per_node
    assert part.memory_per_node == spec.memory_mb  # Slurm's MB are MiB
    expected = spec.max_time_minutes * 60 if spec.max_time_minutes is not None else None
    assert part.max_time == expected
    assert part.features == sorted(spec.features)
    assert part.default == spec.default


# ---- parsing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gpu:h100:8", [("gpu", "h100", 8)]),
        ("gpu:h100:8(S:0-1)", [("gpu", "h100", 8)]),
        ("gpu:8", [("gpu", None, 8)]),
        ("gpu", [("gpu", None, 1)]),
        ("gpu:a100:4,gpu:a10:2", [("gpu", "a100", 4), ("gpu", "a10", 2)]),
        ("gpu:a100:4(S:0,2),gpu:1g.10gb:7(S:1)", [("gpu", "a100", 4), ("gpu", "1g.10gb", 7)]),
        (
            "gpu:nvidia_a100_3g.40gb:2,shard:h100:32",
            [("gpu", "nvidia_a100_3g.40gb", 2), ("shard", "h100", 32)],
        ),
        ("", []),
        ("(null)", []),
    ],
)
def test_parse_gres(text: str, expected: list[tuple[str, str | None, int]]) -> None:
    assert [(g.name, g.type, g.count) for g in parse_gres(text)] == expected


@pytest.mark.parametrize(
    ("gres", "gpus", "gpu_type"),
    [
        ("gpu:h100:4(S:0),gpu:h100:4(S:1)", 8, "h100"),  # one type on two sockets
        ("gpu:a100:4,gpu:a10:2", 4, "a100"),  # the most GPUs
        ("gpu:1g.10gb:7,gpu:a100:1", 1, "a100"),  # whole GPUs before MIG slices
        ("gpu:1g.10gb:7(S:0-1)", 7, "1g.10gb"),  # MIG slices only: Slurm requests them so
        ("gpu:4", 4, "any"),  # untyped: GPUs of no stated type, asked for untyped
        ("gpu:a100:4,gpu:2", 4, "a100"),  # typed before untyped
        ("gpu:A100:4", None, None),  # Slurm types are case-sensitive; router's are lowercase
        ("mps:100", None, None),
    ],
)
def test_gpu_choice(gres: str, gpus: int | None, gpu_type: str | None) -> None:
    node = {"name": "n1", "partitions": ["p"], "gres": gres, "cpus": 8, "real_memory": 1024}
    part = yaml.safe_load(render_inventory(import_sinfo({"nodes": [node]})))
    fields = part["clusters"][0]["partitions"][0]
    assert fields.get("gpus_per_node") == gpus
    assert fields.get("gpu_type") == gpu_type


def test_parse_max_time() -> None:
    assert parse_max_time("3-00:00:00") == 3 * 86400
    assert parse_max_time("12:00:00") == 12 * 3600
    assert parse_max_time("00:30:00") == 1800
    assert parse_max_time("90") == 90 * 60
    assert parse_max_time("UNLIMITED") is None
    with pytest.raises(ValueError):
        parse_max_time("soon")


# ---- from saved JSON (no cluster needed) ----------------------------------------------------


def test_saved_json_imports_the_harness_layout_and_the_hand_made_partitions(tmp_path: Path) -> None:
    text = saved()
    assert text == saved()  # deterministic
    assert text.startswith(
        '# Inventory of Slurm cluster "saved", imported by `router '
        "inventory import slurm`\n# from sinfo.json and "
        "scontrol_partitions.txt (Slurm 22.05.8).\n"
    )
    assert "20" not in text.split("\n", 2)[1].replace("22.05.8", "")  # no timestamps
    path = tmp_path / "inventory.yaml"
    path.write_text(text)
    inv = load_inventory(path)
    cluster = inv.cluster("saved")
    parts = {p.name: p for p in cluster.partitions}
    assert sorted(parts) == ["cpu", "debug", "gpu-a100", "gpu-h100", "gpu-plain", "mig", "mixed"]
    for spec in ROUTERTEST_PARTITIONS:
        assert_matches(parts[spec.name], spec)
    # mixed: the 4 h100 nodes (most nodes), their smallest shape; a100 and GPU-less left out.
    mixed = parts["mixed"]
    assert (mixed.nodes, mixed.gpus_per_node, mixed.gpu_type) == (4, 4, "h100")
    assert (mixed.cpus_per_node, mixed.memory_per_node) == (64, 1024 * 1024)
    assert mixed.features == ["ib"] and mixed.max_time == 12 * 3600
    block = text[text.index("# Heterogeneous partition mixed") : text.index("- name: mixed")]
    assert "4 nodes with h100 GPUs" in block
    assert "3 × 8 h100 GPUs, 96 CPUs, 2TiB, features ib,lustre, e.g. mixed-n1" in block
    assert "2 × 4 a100 GPUs, 64 CPUs, 512GiB, features ib, e.g. mixed-n5 (left out: a100" in block
    assert "e.g. mixed-n7 (left out: no GPUs)" in block
    assert "are used as 4 × a100" in block
    # debug: mixed-n1 (8 h100) and the GPU-less mixed-n7 tie on nodes; more GPUs wins.
    debug = parts["debug"]
    assert (debug.nodes, debug.gpus_per_node, debug.max_time) == (1, 8, 1800)
    assert "# Nodes shared with partition(s) mixed (1): router counts them in each" in text
    # mig: MIG slices are the GPUs Slurm offers there; MaxTime=UNLIMITED is no max_time.
    assert (parts["mig"].gpus_per_node, parts["mig"].gpu_type) == (7, "1g.10gb")
    assert parts["mig"].max_time is None
    assert '# Partition "Legacy_GPU" left out: a target name must be a DNS-1123 label' in text
    # gpu-plain: untyped GRES (gpu:4) are GPUs of no stated type, with a comment saying so.
    plain = text[text.index("- name: gpu-a100") : text.index("- name: gpu-plain")]
    assert "# GPUs without a type (GRES gpu:4): gpu_type any, so only workloads" in plain


def test_saved_json_without_partition_text_says_what_is_unknown() -> None:
    text = render_inventory(import_sinfo(json.loads(SINFO.read_text())))
    assert "max_time and default are unknown" in text
    inv = Inventory.model_validate(yaml.safe_load(text))
    parts = {p.name: p for p in inv.cluster("slurm").partitions}
    assert parts["gpu-h100"].max_time is None and not parts["cpu"].default


def test_cli_from_json(tmp_path: Path) -> None:
    runner = CliRunner()
    args = [
        "inventory",
        "import",
        "slurm",
        "--from-json",
        str(SINFO),
        "--partitions-from",
        str(SCONTROL),
        "--cluster",
        "saved",
    ]
    printed = runner.invoke(cli, args)
    assert printed.exit_code == 0, printed.output
    assert printed.stdout == saved()
    assert "warning: mixed: Heterogeneous partition mixed" in printed.stderr
    out = tmp_path / "sub" / "inventory.yaml"
    written = runner.invoke(cli, [*args, "-o", str(out)])
    assert written.exit_code == 0, written.output
    assert out.read_text() == saved()
    assert written.stdout == f"Wrote {out}: 7 partitions, 37 nodes\n"
    assert [p.name for p in tmp_path.joinpath("sub").iterdir()] == ["inventory.yaml"]


def test_cli_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = runner.invoke(cli, ["inventory", "import", "slurm", "--from-json", str(bad)])
    assert result.exit_code == 1 and "not JSON" in result.output
    result = runner.invoke(
        cli, ["inventory", "import", "slurm", "--from-json", str(SINFO), "--cluster", "Not_A_Label"]
    )
    assert result.exit_code == 1 and "is not a DNS-1123 label" in result.output
    result = runner.invoke(
        cli, ["inventory", "import", "slurm", "--from-json", str(SINFO), "--pool-label", "pool"]
    )
    assert result.exit_code == 2 and "--pool-label is for kubernetes" in result.output
    wrong = tmp_path / "nodes.json"
    wrong.write_text('{"items": []}')
    result = runner.invoke(cli, ["inventory", "import", "slurm", "--from-json", str(wrong)])
    assert result.exit_code == 1 and "sinfo --json" in result.output


def test_kubernetes_dispatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = tmp_path / "nodes.json"
    nodes.write_text('{"items": []}')
    args = ["inventory", "import", "kubernetes", "--from-json", str(nodes)]
    calls = []

    def import_nodes(data: Any, **kwargs: Any) -> str:
        calls.append((data, kwargs))
        return "clusters: []\n"

    fake = types.ModuleType("router.importers.kubernetes")
    fake.import_nodes = import_nodes  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "router.importers.kubernetes", fake)
    result = CliRunner().invoke(cli, [*args, "--pool-label", "pool", "--cluster", "k"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "clusters: []\n"
    assert calls == [({"items": []}, {"cluster": "k", "pool_label": "pool"})]
    result = CliRunner().invoke(cli, [*args, "--partitions-from", str(SCONTROL)])
    assert result.exit_code == 2 and "--partitions-from is for slurm" in result.output

    monkeypatch.setitem(sys.modules, "router.importers.kubernetes", None)  # not installed
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert "the kubernetes importer is not available" in result.output


# ---- from the live cluster ------------------------------------------------------------------


@pytest.fixture
def imported(slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """`router inventory import slurm -o` against the live cluster."""
    for key, value in slurm_cluster.env.items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "inventory.yaml"
    result = CliRunner().invoke(cli, ["inventory", "import", "slurm", "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.slurm
def test_live_import_matches_the_cluster(imported: Path, slurm_cluster: SlurmCluster) -> None:
    text = imported.read_text()
    assert "from `sinfo --json` and `scontrol show partition -o` (Slurm 22." in text
    inv = load_inventory(imported)
    (cluster,) = inv.clusters
    assert (cluster.name, cluster.backend) == ("routertest", "slurm")  # Slurm's ClusterName
    parts = {p.name: p for p in cluster.partitions}
    assert sorted(parts) == sorted(s.name for s in slurm_cluster.partitions)
    for spec in slurm_cluster.partitions:
        assert_matches(parts[spec.name], spec)
    assert "Heterogeneous" not in text  # the harness's partitions are homogeneous


@pytest.mark.slurm
def test_live_import_equals_import_of_its_saved_json(slurm_cluster: SlurmCluster) -> None:
    live = import_sinfo(
        slurm_cluster.sinfo_json(),
        slurm_cluster.run(["scontrol", "show", "partition", "-o"]).stdout,
        cluster="routertest",
    )
    saved_doc = json.loads(SINFO.read_text())
    harness_nodes = [n for n in saved_doc["nodes"] if "added by hand" not in n["comment"]]
    names = {f"PartitionName={spec.name} " for spec in ROUTERTEST_PARTITIONS}
    harness_lines = [
        line
        for line in SCONTROL.read_text().splitlines(keepends=True)
        if any(line.startswith(name) for name in names)
    ]
    again = import_sinfo(
        saved_doc | {"nodes": harness_nodes}, "".join(harness_lines), cluster="routertest"
    )
    assert render_inventory(live) == render_inventory(again)


@pytest.mark.slurm
def test_plan_places_a_gpu_job_on_the_imported_inventory(imported: Path, tmp_path: Path) -> None:
    policy = """
    rule gpu: when gpus > 0 route slurm
    rule rest: route any
    """
    inventory = yaml.safe_load(imported.read_text())
    root = make_project(
        tmp_path / "project",
        [job("train", gpus=16, gpu_type="h100", cpus=64, memory="512GiB")],
        policy=policy,
        inventory=inventory,
    )
    plan = build_plan(load_project(root))
    (placement,) = plan.placements
    assert placement.target.id == "routertest/gpu-h100"
    assert placement.resources.nodes == 2 and placement.resources.gpus_per_node == 8
    assert not plan.unplaced and not plan.unrouted
