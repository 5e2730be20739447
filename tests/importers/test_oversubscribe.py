"""OverSubscribe in the shape check, as slurmctld 22.05 behaves (tests/slurm/
test_oversubscribe_live.py): EXCLUSIVE gives every job whole nodes (the plan counts them so),
FORCE shares nodes and cores whatever a job asks (a rule's `exclusive` is refused there, and
`router check` / `router test` know it), NO and YES change nothing for router's jobs.

The EXCLUSIVE partition is a real one: `EquityHighPriority` of our live 22.05 capture
(data/live-22.05-*, OverSubscribe=EXCLUSIVE, sharing the one usable h100 node with `gpu`).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from router.assure.analysis import analyze
from router.assure.prove import prove_checks, runnable
from router.cli.main import cli
from router.config import load_project
from router.evaluate.evaluate import Evaluator
from router.importers import render_inventory
from router.language import check_policy, load_policy, parse_files
from router.models import Inventory, NodeShape, Running, Workload, load_inventory, load_running
from router.models.capacity import node_classes
from router.plan.build import build_plan
from tests.helpers import make_project
from tests.importers.test_slurm_fixtures import DATA, imported, inventory


def live() -> dict[str, Any]:
    cluster = imported("live-22.05-sinfo.json", "live-22.05-scontrol-partitions.txt")
    doc: dict[str, Any] = yaml.safe_load(render_inventory(cluster))
    return doc


def one_gpu(name: str) -> dict[str, Any]:
    return {"name": name, "kind": "batch", "gpus": 1, "gpu_type": "h100", "cpus": 4,
            "memory": "8GiB", "duration": "1h", "command": ["true"],
            "account": "equity"}  # fmt: skip


@pytest.mark.parametrize(("target", "placed"), [("equity-high-priority", 1), ("gpu", 4)])
def test_exclusive_partition_gives_each_job_a_whole_node(
    tmp_path: Path, target: str, placed: int
) -> None:
    # One usable 8-GPU node: four 1-GPU jobs share it on `gpu`; on the EXCLUSIVE partition
    # each would take the node, so one is placed and the plan says why the rest wait.
    policy = f'rule r: route slurm where name == "{target}"\n'
    root = make_project(tmp_path, [one_gpu(f"j{i}") for i in range(4)], policy, live())
    plan = build_plan(load_project(root))
    assert len(plan.placements) == placed
    for p in plan.placements:
        assert p.resources.exclusive is (target != "gpu")
        assert p.resources.whole_nodes == (1 if target != "gpu" else 0)


def force(mode: str) -> Inventory:
    doc = live()
    for p in doc["clusters"][0]["partitions"]:
        if p["name"] == "gpu":
            p["oversubscribe"] = mode
    return Inventory.model_validate(doc)


POLICY = 'rule r: route slurm{opts} where name == "gpu"\n'


@pytest.mark.parametrize(
    ("mode", "opts", "refused"),
    [
        ("force:4", " exclusive", True),
        ("force", " with exclusive", True),
        ("force:4", "", False),
        ("yes:2", " exclusive", False),
        ("exclusive", " exclusive", False),
    ],
)
def test_force_refuses_exclusive_in_plan_check_and_test(
    tmp_path: Path, mode: str, opts: str, refused: bool
) -> None:
    path = tmp_path / "p.route"
    text = POLICY.format(opts=opts) + textwrap.dedent("""
        check small: for kind == "batch" and not service and gpus == 1 and nodes <= 1
            and cpus <= 8 and memory <= 8GiB and duration <= 1h and gpu_type == "h100"
            expect placed
        """)  # fmt: skip
    path.write_text(text)
    inv = force(mode)
    policy = load_policy(path)
    d = Evaluator(policy, inv).decide(Workload.model_validate(runnable(one_gpu("w"))))
    reasons = [e.reason for e in d.excluded if e.kind == "shape"]
    assert (d.candidates == []) is refused, reasons
    if refused:
        assert reasons == [
            "the partition shares nodes whatever a job asks (OverSubscribe=FORCE):"
            " exclusive is not honoured"
        ]
    found = analyze(check_policy(parse_files([path])), inv, parse_files([path]))
    assert any(f.code == "route-never-fits" for f in found) is refused
    (r,) = prove_checks(policy, inv)
    assert (r.status == "proven") is not refused, r


def test_a_service_is_refused_where_every_job_takes_whole_nodes(tmp_path: Path) -> None:
    doc = live()
    path = tmp_path / "p.route"
    path.write_text('rule r: route slurm where name == "equity-high-priority"\n')
    doc_svc = {"name": "s", "kind": "inference", "cpus": 2, "memory": "4GiB",
               "replicas": {"min": 2, "max": 2}, "command": ["serve"],
               "account": "equity"}  # fmt: skip
    svc = Workload.model_validate(runnable(doc_svc))
    d = Evaluator(load_policy(path), Inventory.model_validate(doc)).decide(svc)
    assert d.candidates == []
    assert [e.reason for e in d.excluded if e.kind == "shape"] == [
        "every job takes whole nodes here (OverSubscribe=EXCLUSIVE); a service's replicas are"
        " planned per replica"
    ]


NOTE = (
    "slurm/h100x4 node gpu-n1 is counted full on CPUs: its running work (1, 2) holds 12 of its"
    " 8 CPUs, shared by partition shared (OverSubscribe=FORCE:2)"
)


def _cli(args: list[str]) -> Result:
    r = CliRunner().invoke(cli, args)
    assert "Traceback" not in r.output + r.stderr, r.stderr
    return r


def test_work_on_oversubscribed_cpus_fills_the_node_and_says_so(tmp_path: Path) -> None:
    """The live 22.05 capture data/live-22.05-oversub-* (see data/README.md): two 6-CPU jobs of
    the OverSubscribe=FORCE:2 partition `shared` run on the same 8 CPUs of gpu-n1 (scontrol:
    CPUAlloc=8 of CPUTot=8; squeue: 6 + 6). Importing and planning around them once stopped
    with "takes more CPUs than the node has"; now the node is full on CPUs (its GPUs and
    memory keep what is free), and `inventory running` and the plan's reasons say why."""
    inv_path, running = tmp_path / "inventory.yaml", tmp_path / "running.yaml"
    r = _cli(["inventory", "import", "slurm",
              "--from", str(DATA / "live-22.05-oversub-sinfo.json"),
              "--partitions-from", str(DATA / "live-22.05-oversub-partitions.txt"),
              "-o", str(inv_path)])  # fmt: skip
    assert r.exit_code == 0, r.stderr
    # The same node from `scontrol show node -o` of that moment: the same inventory.
    text, _ = inventory("live-22.05-oversub-nodes.txt", "live-22.05-oversub-partitions.txt")
    assert yaml.safe_load(text)["clusters"] == yaml.safe_load(inv_path.read_text())["clusters"]
    r = _cli(["inventory", "running", "slurm",
              "--from", str(DATA / "live-22.05-oversub-squeue.json"),
              "-i", str(inv_path), "-o", str(running)])  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert f"warning: {NOTE}" in r.stderr.splitlines()
    assert f"# note: {NOTE}" in running.read_text().splitlines()

    inv = load_inventory(inv_path)
    classes = node_classes(inv, load_running(running))
    (busy,) = classes["slurm/h100x4"]
    assert (busy.free, busy.idle, busy.over) == (NodeShape(3, (), 0, 16 * 1024), False, (NOTE,))

    small = [{"name": "one-cpu", "kind": "batch", "cpus": 1, "memory": "1GiB", "gpus": 1,
              "gpu_type": "h100", "duration": "10min", "command": ["true"]}]  # fmt: skip
    doc = yaml.safe_load(inv_path.read_text())
    root = make_project(tmp_path / "p", small, 'rule r: route slurm where name == "gpu"\n', doc)
    idle = build_plan(load_project(root))
    assert [p.workload.name for p in idle.placements] == ["one-cpu"]  # it fits an idle node
    (root / "running.yaml").write_text(running.read_text())
    with (root / "router.yaml").open("a") as f:
        f.write("running: running.yaml\n")
    r = _cli(["plan", str(root), "--format", "json", "--no-write"])
    assert r.exit_code == 3, r.stderr  # unplaced, by design
    (out,) = json.loads(r.stdout)["unplaced"]
    assert out["reasons"] == [
        f"slurm/gpu: needs 1 CPU free on one node; its 1 node has 0 CPUs free; {NOTE}",
        "not a candidate: slurm/shared: excluded by the route's `where` "
        '(policies/policy.route:1): name == "gpu": "shared" == "gpu" is false',
    ]
    r = _cli(["explain", "one-cpu", str(root)])
    assert NOTE in r.stdout


def test_work_above_a_node_without_oversubscribe_is_a_note_too() -> None:
    """No partition shares the node: the inventory is older than the node's work (or names the
    wrong node). Still full on that axis, never a crash; the note asks."""
    doc = live()
    inv = Inventory.model_validate(doc)
    (sid,) = [s.id for s in inv.node_sets() if s.spec.node_names and s.spec.gpus_per_node]
    node = inv.node_set(sid).spec.node_names[0]
    cpus = inv.node_set(sid).spec.cpus_per_node
    running = Running.model_validate({"running": [
        {"cluster": "slurm", "node": node, "cpus": cpus, "memory": "1GiB", "job": "7"},
        {"cluster": "slurm", "node": node, "gpus": 9, "cpus": 1, "memory": "1GiB", "job": "8"},
    ]})  # fmt: skip
    (busy,) = [c for c in node_classes(inv, running)[sid] if not c.idle]
    assert (busy.free.gpus, busy.free.cpus) == (0, 0)
    assert busy.over == (
        f"{sid} node {node} is counted full on GPUs and CPUs: its running work (7, 8) holds"
        f" 9 of its 8 GPUs and {cpus + 1} of its {cpus} CPUs, more than the inventory says"
        " it has (is the inventory up to date?)",
    )
