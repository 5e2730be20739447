"""Node names in imported inventories: Slurm node sets as one compact hostlist, Kubernetes pools
as a list; the inventory reads both back to the same names in the same order, so running work
(`router inventory running ... -i`) lands on the right node set and node index."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from router.cli.main import cli
from router.hostlist import compress, expand
from router.importers import render_inventory
from router.importers.slurm import SlurmInput, import_slurm
from router.importers.slurm.records import SlurmNode, SlurmPartition
from router.models import Inventory, Running, load_inventory
from router.models.capacity import node_classes
from tests.helpers import inventory_error
from tests.importers.test_slurm_fixtures import DATA, imported
from tests.profiles import BOUNDED

PACK = Path(__file__).parents[1] / "pack" / "data"


def test_compress_keeps_order_and_padding() -> None:
    assert compress(["cn001", "cn002", "cn003", "cn010"]) == "cn[001-003,010]"
    assert compress(["n9", "n10", "n11"]) == "n[9-11]"
    assert compress(["n09", "n10"]) == "n[09-10]"
    assert compress(["gpu-2", "gpu-1"]) == "gpu-2,gpu-1"  # out of order: not sorted
    assert compress(["r1n1", "r1n2", "r2n1"]) == "r1n[1-2],r2n1"
    assert compress(["login", "cs2.example.org", "cs3.example.org"]) == "login,cs[2-3].example.org"
    assert compress(["7", "8"]) == "7,8"  # nothing before the number: as written
    assert compress([]) == ""


def test_expand_refuses_what_is_not_a_hostlist() -> None:
    for bad in ("gpu[a-b]", "gpu[1-", "gpu1]", "gpu[1-2x]"):
        with pytest.raises(ValueError, match="not a Slurm hostlist"):
            expand(bad)
    with pytest.raises(ValueError, match="more than 1,000,000"):
        expand("n[1-2000000]")  # refused before it is expanded


NAME = st.from_regex(r"[a-z]{1,3}(-?[0-9]{1,4})?(\.[a-z]{1,3})?", fullmatch=True)


@settings(BOUNDED, max_examples=150)
@given(st.lists(NAME, max_size=30, unique=True))
def test_compress_then_expand_gives_the_names_back(names: list[str]) -> None:
    text = compress(names)
    assert expand(text) == names
    # Never longer than the names written out, but for the brackets of a range: Slurm itself
    # writes n09,n10 as n[09-10], and so does compress.
    assert len(text) <= len(",".join(names)) + 2 * text.count("[")


def test_inventory_reads_a_hostlist_as_its_names() -> None:
    inv = Inventory.model_validate(
        {
            "clusters": [
                {
                    "name": "hpc",
                    "backend": "slurm",
                    "node_sets": [
                        {
                            "name": "a",
                            "nodes": 5,
                            "cpus_per_node": 8,
                            "memory_per_node": "16GiB",
                            "node_names": ["x1", "cn[008-009,011]", "login"],
                        }
                    ],
                    "partitions": [{"name": "p", "node_sets": ["a"]}],
                }
            ]
        }
    )
    names = ["x1", "cn008", "cn009", "cn011", "login"]
    assert inv.node_set("hpc/a").spec.node_names == names
    assert inv.target("hpc/p").target.node_names == names  # filled from the node set


def test_a_bad_hostlist_is_an_error_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    text = (
        "clusters:\n  - name: hpc\n    backend: slurm\n    partitions:\n"
        "      - name: p\n        nodes: 2\n        cpus_per_node: 8\n"
        "        memory_per_node: 16GiB\n        node_names: gpu[1-x]\n"
    )
    found = inventory_error(path, text)
    assert "inventory.yaml:9" in found and "not a Slurm hostlist" in found
    assert "3 node names for 2 nodes" in inventory_error(path, text.replace("1-x", "1-3"))


def test_thousands_of_nodes_stay_one_short_line() -> None:
    """4,096 GPU nodes in two partitions, 3 drained and 64 powered down (CLOUD): the node set is
    one hostlist of a few ranges, not 4,096 names, and reads back to every name in index order."""
    nodes = []
    for i in range(1, 4097):
        states = {"IDLE"}
        if i in (17, 1000, 3001):
            states = {"IDLE", "DRAIN"}
        if i > 4032:
            states = {"IDLE", "CLOUD", "POWERED_DOWN"}
        nodes.append(
            SlurmNode(
                f"gpu{i:04d}",
                ("gpu", "preempt"),
                96,
                1024 * 1024,
                "gpu:h100:8",
                ("ib",),
                frozenset(states),
            )
        )
    parts = [SlurmPartition("gpu"), SlurmPartition("preempt")]
    text = render_inventory(import_slurm(_input(nodes), parts, cluster="big"))
    (line,) = [x for x in text.splitlines() if "node_names" in x]
    assert line.strip() == "node_names: gpu[0001-0016,0018-0999,1001-3000,3002-4096]"
    inv = Inventory.model_validate(yaml.safe_load(text))
    (s,) = inv.node_sets()
    usable = [f"gpu{i:04d}" for i in range(1, 4033) if i not in (17, 1000, 3001)]
    assert s.spec.node_names == usable + [f"gpu{i:04d}" for i in range(4033, 4097)]
    assert (s.spec.nodes, s.spec.capacity_nodes) == (4029, 4093)
    assert len(text) < 3000


def _input(nodes: list[SlurmNode]) -> SlurmInput:
    return SlurmInput(nodes, None, "22.05.8", "big", "test")


def test_real_fixture_names_round_trip() -> None:
    """Every Slurm fixture: the names the node sets list are the usable (and headroom) nodes of
    the data, each once, and the YAML holds them as hostlists (24.05: 100 nodes, 3 lines)."""
    cluster = imported("restd-nodes-24.05-0.0.41.json", "restd-partitions-24.05-0.0.41.json")
    lines = [x.strip() for x in render_inventory(cluster).splitlines() if "node_names" in x]
    assert lines == ["node_names: cn[001-080]", "node_names: cn[081-099]", "node_names: cn100"]


def test_running_work_maps_onto_the_imported_node_set_and_index(tmp_path: Path) -> None:
    """The live 22.05 capture of one moment (data/live-22.05-running-*: sinfo, partitions and
    squeue of the harness cluster with two jobs sharing gpu-h100-n1, see data/README.md):
    imported inventory + imported running work → node set gpu-h100 node 0, 3 GPUs and 28 CPUs
    taken."""
    inv_path = tmp_path / "inventory.yaml"
    r = CliRunner().invoke(
        cli,
        [
            "inventory", "import", "slurm",
            "--from", str(DATA / "live-22.05-running-sinfo.json"),
            "--partitions-from", str(DATA / "live-22.05-running-partitions.txt"),
            "-o", str(inv_path),
        ],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    out = tmp_path / "running.yaml"
    r = CliRunner().invoke(
        cli,
        [
            "inventory", "running", "slurm",
            "--from", str(DATA / "live-22.05-running-squeue.json"),
            "-i", str(inv_path), "-o", str(out),
        ],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "left out" not in r.output
    inv = load_inventory(inv_path)
    running = Running.model_validate(yaml.safe_load(out.read_text()))
    assert {i.node for i in running.running} == {"gpu-h100-n1"}
    classes = node_classes(inv, running)
    busy = {sid: [k for k in ks if not k.idle] for sid, ks in classes.items()}
    (sid,) = [s for s, ks in busy.items() if ks]
    (k,) = busy[sid]
    spec = inv.node_set(sid).spec
    assert k.indices == (spec.node_names.index("gpu-h100-n1"),)
    assert (k.free.gpus, k.free.cpus) == (spec.gpus_per_node - 3, spec.cpus_per_node - 28)


def test_pods_map_onto_the_imported_pool_and_index(tmp_path: Path) -> None:
    """Kubernetes: the DOKS fixture's pools list their nodes by name; the minikube pod of
    tests/pack/data (the only real pod list we have, of another cluster) is re-bound here to the
    third node of pool-yd23sqk7u, with requests added: it lands on that pool, node index 2."""
    import json

    inv_path = tmp_path / "inventory.yaml"
    r = CliRunner().invoke(
        cli,
        ["inventory", "import", "kubernetes", "--from", str(DATA / "k8s-doks.json"),
         "-o", str(inv_path)],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    inv = load_inventory(inv_path)
    names = inv.node_set("kubernetes/pool-yd23sqk7u").spec.node_names
    assert len(names) == 3 and "node_names: [pool-yd23sqk7u-" in inv_path.read_text()
    pods = json.loads((PACK / "pods-minikube.json").read_text())
    pod = pods["items"][0]
    pod["spec"]["nodeName"] = names[2]
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1500m", "memory": "1Gi"}}
    saved = tmp_path / "pods.json"
    saved.write_text(json.dumps(pods))
    out = tmp_path / "running.yaml"
    r = CliRunner().invoke(
        cli,
        ["inventory", "running", "kubernetes", "--from", str(saved), "-i", str(inv_path),
         "-o", str(out)],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    classes = node_classes(inv, Running.model_validate(yaml.safe_load(out.read_text())))
    (busy,) = [k for k in classes["kubernetes/pool-yd23sqk7u"] if not k.idle]
    assert busy.indices == (2,) and busy.free.cpus == 2 - 2  # 1500m rounds up to 2 CPUs
