"""The importers' small parsers: GPU names, GRES, MIG, node states, host lists, times, and the
errors for input they cannot read (which must name the file and what was expected)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from router.cli.main import cli
from router.errors import LoadError
from router.importers.gpu import gpu_type_of, mig_layout, mig_profile, vendor_only
from router.importers.slurm import read_nodes, read_partitions
from router.importers.slurm.build import dns_name
from router.importers.slurm.nodes import gpus_of, parse_gres, verdict
from router.importers.slurm.records import UNLIMITED, SlurmNode, slurm_minutes, states
from router.importers.slurm.text import expand_hostlist

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("nvidia_h100_80gb_hbm3", "h100"),
        ("NVIDIA-H100-80GB-HBM3", "h100"),
        ("H100", "h100"),
        ("h100", "h100"),
        ("nvidia-h100-80gb", "h100"),
        ("NVIDIA-A100-SXM4-80GB", "a100"),
        ("tesla_v100-sxm2-16gb", "v100"),
        ("V100", "v100"),
        ("Tesla-T4", "t4"),
        ("nvidia-tesla-a100", "a100"),
        ("NVIDIA-L40S", "l40s"),
        ("NVIDIA-A10G", "a10g"),
        ("gh200", "gh200"),
        ("NVIDIA-RTX-A6000", "rtx-a6000"),
        ("model_a", "model-a"),
        ("nvidia", "any"),
    ],
)
def test_gpu_names_are_normalised(name: str, short: str) -> None:
    assert gpu_type_of(name) == short


def test_mig_profiles_and_layouts() -> None:
    assert mig_profile("nvidia_a100_3g.40gb") == "3g.40gb"
    assert mig_profile("1g.10gb") == "1g.10gb"
    assert mig_profile("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb") == "1g.5gb"
    assert mig_profile("nvidia_h100_80gb_hbm3") is None
    assert mig_layout({"1g.10gb": 14}) == ([(2, (("1g.10gb", 7),))], [])
    assert mig_layout({"1g.10gb": 10, "3g.40gb": 2})[0] == [
        (1, (("1g.10gb", 7),)),
        (1, (("1g.10gb", 3),)),
        (1, (("3g.40gb", 2),)),
    ]
    # one A100-80GB cut 3g.40gb + 4 × 1g.10gb is one GPU (before: two, one per profile)
    assert mig_layout({"1g.10gb": 4, "3g.40gb": 1}, "a100")[0] == [
        (1, (("1g.10gb", 4), ("3g.40gb", 1)))
    ]
    assert vendor_only("nvidia") and not vendor_only("a100")


@pytest.mark.parametrize(
    ("gres", "gpu_type", "gpus", "gres_type", "mig"),
    [
        ("gpu:nvidia_h100_80gb_hbm3:8(S:0-1)", "h100", 8, "nvidia_h100_80gb_hbm3", ()),
        ("gpu:h100:8", "h100", 8, None, ()),
        ("gpu:V100:4", "v100", 4, "V100", ()),  # upper case: normalised, exact type kept
        ("gpu:8", "any", 8, None, ()),
        ("gpu:nvidia:3", "any", 3, None, ()),  # a vendor, not a model: flagged
        ("gpu:a100:4,gpu:1g.10gb:28", "a100", 8, None, ((4, (("1g.10gb", 7),)),)),  # MIG is slices
        (
            "gpu:nvidia_a100_3g.40gb:2,gpu:nvidia_a100-sxm4-80gb:2",
            "a100",
            3,
            "nvidia_a100-sxm4-80gb",
            ((1, (("3g.40gb", 2),)),),
        ),
        ("shard:h100:32", None, 0, None, ()),
        ("(null)", None, 0, None, ()),
    ],
)
def test_gres_to_gpus(
    gres: str,
    gpu_type: str | None,
    gpus: int,
    gres_type: str | None,
    mig: tuple[tuple[int, tuple[tuple[str, int], ...]], ...],
) -> None:
    got = gpus_of(gres)
    assert (got.gpu_type, got.gpus, got.gres_type, got.mig) == (gpu_type, gpus, gres_type, mig)
    if gres == "gpu:nvidia:3":
        assert any("names a vendor" in n for n in got.notes)


def test_parse_gres() -> None:
    assert parse_gres("gpu:a100:4(S:0,2),gpu:1g.10gb:7(S:1)") == [
        ("gpu", "a100", 4),
        ("gpu", "1g.10gb", 7),
    ]
    assert parse_gres("gpu") == [("gpu", None, 1)] and parse_gres("") == []


def _node(state: str, reason: str = "") -> SlurmNode:
    return SlurmNode("h100-04", ("gpu",), 8, 1024, "", (), states(state), reason)


@pytest.mark.parametrize(
    ("state", "power", "kind", "why"),
    [
        ("IDLE", None, "usable", ""),
        ("MIXED+PLANNED", None, "usable", ""),
        ("IDLE+DRAIN", None, "out", "drained"),
        ("MIXED+DRAIN", None, "out", "draining"),
        ("DOWN*", None, "out", "down, not responding"),
        ("IDLE+FAIL", None, "out", "failed"),
        ("IDLE+MAINTENANCE+RESERVED", None, "out", "in maintenance, reserved"),
        ("IDLE+NOT_RESPONDING", None, "out", "not responding"),
        ("IDLE+CLOUD+POWERED_DOWN", None, "headroom", ""),
        ("IDLE+POWERED_DOWN", True, "headroom", ""),
        ("IDLE+POWERED_DOWN", None, "out", "powered down"),
        ("IDLE+CLOUD+POWERED_DOWN+DRAIN", None, "out", "drained"),
        ("ALLOCATED+CLOUD+POWER_DOWN", None, "usable", ""),
        ("FUTURE", None, "out", "not in service"),
    ],
)
def test_node_states(state: str, power: bool | None, kind: str, why: str) -> None:
    v = verdict(_node(state), power)
    assert v.kind == kind and v.why.startswith(why)


def test_exclusion_line_carries_the_reason() -> None:
    assert verdict(_node("IDLE+DRAIN", "bad GPU"), None).why == "drained (reason: bad GPU)"


def test_host_lists_times_and_names() -> None:
    assert expand_hostlist("cn[001-003,010],login1") == (
        "cn001",
        "cn002",
        "cn003",
        "cn010",
        "login1",
    )
    assert expand_hostlist("r[1-2]n[1-2]") == ("r1n1", "r1n2", "r2n1", "r2n2")
    assert slurm_minutes("3-00:00:00") == 3 * 86400 and slurm_minutes("30") == 1800
    assert slurm_minutes("UNLIMITED") == UNLIMITED and slurm_minutes("NONE") is None
    assert dns_name("EquityHighPriority") == "equity-high-priority"
    assert dns_name("Legacy_GPU") == "legacy-gpu" and dns_name("gpu") == "gpu"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"meta": {}, "errors": []}', "expected `sinfo --json`"),
        ("not json at all", "expected `sinfo --json`"),
        ('{"nodes": [', "not JSON"),
        ("PartitionName=gpu Nodes=a[1-2]", "give it to --partitions-from"),
        ('{"partitions": []}', "give it to --partitions-from"),
        ('{"nodes": [{"name": "a", "cpus": "many", "real_memory": 1}]}', "cpus must be"),
        ("NodeName=a CPUTot=4 RealMemory=1\nGarbage line", "line 2 does not start with NodeName="),
    ],
)
def test_unreadable_nodes_input_names_the_file(text: str, needle: str) -> None:
    with pytest.raises(LoadError) as e:
        read_nodes(text, "saved.json")
    assert needle in e.value.message and (e.value.path or "") + e.value.message
    assert "saved.json" in (e.value.path or "") + e.value.message


@pytest.mark.parametrize(
    "text",
    [
        '{"meta": {}}',
        "[1, 2]",
        '{"partitions": 3}',
        "hello",
        '{"partitions": [{"name": "gpu", "maximums": {"time": "soon"}}]}',
    ],
)
def test_unreadable_partitions_input_is_an_error(text: str) -> None:
    with pytest.raises(LoadError) as e:
        read_partitions(text, "parts.json")
    assert "parts.json" in (e.value.path or "") + e.value.message


def test_cli_partitions_from_unreadable_json_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "parts.json"
    bad.write_text('{"not": "partitions"}')
    result = CliRunner().invoke(
        cli,
        [
            "inventory",
            "import",
            "slurm",
            "--from",
            str(DATA / "live-22.05-sinfo.json"),
            "--partitions-from",
            str(bad),
        ],
    )
    assert result.exit_code == 1
    assert "parts.json" in result.output and "scontrol show partition -o" in result.output
    assert "Traceback" not in result.output


def test_cli_prints_each_exclusion_and_writes_the_file(tmp_path: Path) -> None:
    out = tmp_path / "inv.yaml"
    result = CliRunner().invoke(
        cli,
        [
            "inventory",
            "import",
            "slurm",
            "--from",
            str(DATA / "live-22.05-scontrol-nodes.txt"),
            "--partitions-from",
            str(DATA / "live-22.05-scontrol-partitions.txt"),
            "--cluster",
            "live",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "gpu-n3: down, drained (reason: bad GPU), left out" in result.output
    assert "2 partitions, 1 usable nodes, each counted once" in result.output
    text = out.read_text()
    assert "#   gpu-n3: down, drained (reason: bad GPU), left out" in text
    assert "partition: EquityHighPriority" in text


def test_cli_kubernetes_from_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "inventory",
            "import",
            "kubernetes",
            "--from",
            str(DATA / "k8s-openshift.json"),
            "--cluster",
            "ocp",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "ci-ln-d53y532-f76d1-2btqq-master-0: control plane" in result.output
    assert result.output.count("      - name:") == 1  # the worker pool only
    assert "      - name: worker" in result.output


def test_effective_cpus_and_specialised_memory_are_what_jobs_get() -> None:
    text = (
        "NodeName=a CPUTot=64 CPUEfctv=62 RealMemory=1000 MemSpecLimit=100 Gres=(null) "
        "Partitions=p State=IDLE\n"
    )
    (node,) = read_nodes(text, "nodes.txt").nodes
    assert (node.cpus, node.memory) == (62, 900)
    data = (
        '{"nodes": [{"name": "a", "cpus": 64, "effective_cpus": 60, "real_memory": 1000,'
        ' "specialized_memory": 24, "state": ["IDLE"], "partitions": ["p"]}]}'
    )
    (node,) = read_nodes(data, "nodes.json").nodes
    assert (node.cpus, node.memory) == (60, 976)


def test_slurmrestd_v0_0_37_partitions() -> None:
    # The flat layout of slurmrestd v0.0.37/38 (21.08/22.05), written here: no public sample.
    text = json.dumps(
        {
            "partitions": [
                {
                    "name": "gpu",
                    "nodes": "g[1-2]",
                    "state": "UP",
                    "flags": ["default"],
                    "maximum_time": 4294967295,
                    "default_time": 60,
                    "maximum_nodes_per_job": 2,
                    "allowed_accounts": "ml,hpc",
                    "allowed_groups": "",
                    "allowed_qos": "ALL",
                },
                {"name": "old", "nodes": "o1", "state": "DOWN", "maximum_time": 120},
            ]
        }
    )
    gpu, old = read_partitions(text, "partitions.json")
    assert (gpu.nodes, gpu.default, gpu.max_time, gpu.default_time) == (
        ("g1", "g2"),
        True,
        UNLIMITED,
        3600,
    )
    assert (gpu.max_nodes, gpu.allow_accounts, gpu.allow_qos) == (2, ("ml", "hpc"), None)
    assert (old.state, old.max_time) == ("DOWN", 7200)


def test_names_sbatch_cannot_take_are_left_out_not_scripted() -> None:
    from router.importers.slurm import import_slurm

    nodes = read_nodes(
        "NodeName=a CPUTot=4 RealMemory=1000 Partitions=ok,we$(rd) State=IDLE\n", "n.txt"
    )
    parts = read_partitions("PartitionName=ok Nodes=a\nPartitionName=we$(rd) Nodes=a\n", "p.txt")
    cluster = import_slurm(nodes, parts)
    assert [t.fields["name"] for t in cluster.targets] == ["ok"]
    assert any("we$(rd)" in n and "left out" in n for n in cluster.notes)


@pytest.mark.parametrize(
    ("backend", "text", "needle"),
    [
        ("slurm", '{"meta": {}, "nodes": []}', "the Slurm data lists no nodes"),
        ("slurm", '{"sinfo": []}', "the Slurm data lists no nodes"),
        ("kubernetes", '{"kind": "List", "items": []}', "the node list is empty"),
        ("kubernetes", '{"nodes": []}', "kubectl get nodes -o json"),
    ],
)
def test_cli_empty_or_foreign_input_names_the_file(
    tmp_path: Path, backend: str, text: str, needle: str
) -> None:
    path = tmp_path / "saved.json"
    path.write_text(text)
    result = CliRunner().invoke(cli, ["inventory", "import", backend, "--from", str(path)])
    assert result.exit_code == 1
    assert needle in result.output and str(path) in result.output


@pytest.mark.parametrize(
    ("version", "command"),
    [
        ("slurm 22.05.8\n", ["sinfo", "--json"]),
        ("slurm 25.11.4\n", ["sinfo", "--json"]),
        ("slurm 20.11.9\n", ["scontrol", "show", "node", "-o"]),  # no sinfo --json before 21.08
    ],
)
def test_live_mode_asks_what_the_installed_slurm_has(
    monkeypatch: pytest.MonkeyPatch, version: str, command: list[str]
) -> None:
    from router.cli import inventory

    calls: list[list[str]] = []

    def run(args: list[str]) -> str:
        calls.append(args)
        return version

    monkeypatch.setattr(inventory, "_run", run)
    assert inventory._live_nodes_command() == command
    assert calls == [["sinfo", "--version"]]
