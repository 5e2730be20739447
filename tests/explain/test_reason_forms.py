"""Each form a reason takes, as `router plan` (plan.json) and `router explain` print it, on
small platforms: the blocking resource on the real nodes (needed against the most free on any
node), whole nodes against idle ones, a quota with its numbers, the targets that `max_time`,
a `where` on labels or a taint keep out, OverSubscribe=FORCE, and a placed workload's nodes.
The numbers asserted are computed from the inventory and the workloads written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

import router
from router.cli.main import cli
from router.quantity import format_memory, parse_memory
from tests.helpers import job, kubernetes, make_project, platform, slurm, target


def plan_reasons(root: Path) -> dict[str, list[str]]:
    r = CliRunner().invoke(cli, ["plan", str(root), "--format", "json", "--no-write"])
    assert r.exit_code == 3, r.output  # something is unplaced, by design
    doc = json.loads(r.stdout)
    return {u["workload"]: u["reasons"] for u in doc["unplaced"]}


def explain_text(root: Path, name: str) -> str:
    r = CliRunner().invoke(cli, ["explain", name, str(root)])
    assert r.exit_code == 0, r.output
    return r.output


def line_of(root: Path, needle: str) -> str:
    lines = (root / "policies" / "policy.route").read_text().splitlines()
    return f"policies/policy.route:{next(n for n, x in enumerate(lines, 1) if needle in x)}"


def service(name: str, gpus: int, cpus: int, replicas: int, **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "inference",
        "image": "ghcr.io/example/serve:1",
        "gpus": gpus,
        "cpus": cpus,
        "memory": "16GiB",
        "replicas": {"min": replicas, "max": replicas},
        **fields,
    }


SERVE = 'policy s\nrule serve: when kind == "inference" route kubernetes\n'


def test_pods_name_the_cpus_they_need_against_the_most_free_on_a_node(tmp_path: Path) -> None:
    # The case: 3 replicas of 30 CPUs on 2 nodes of 48: 90 of 96 CPUs in total, but
    # one replica per node.
    nodes, cpus = 2, 48
    inv = platform(kubernetes(target("gpu", nodes, 8, cpus, "384GiB")))
    root = make_project(tmp_path, [service("chat", 2, 30, 3)], SERVE, inv)
    fits = nodes * (cpus // 30)
    want = (
        f"k8s/gpu: 3 pods need 30 CPUs free each; its {nodes} nodes have room for {fits} "
        f"(the most free on any node: {cpus} CPUs on {nodes})"
    )
    assert plan_reasons(root)["chat"] == [want]
    assert f"  {want}\n" in explain_text(root, "chat")


def test_one_pod_names_the_most_free_on_any_node(tmp_path: Path) -> None:
    # Two single-replica services of 30 CPUs take one node each: the third finds 18 free.
    cpus, each = 48, 30
    inv = platform(kubernetes(target("gpu", 2, 8, cpus, "384GiB")))
    wl = [service(f"s{i}", 2, each, 1, priority="high") for i in range(2)]
    root = make_project(tmp_path, [*wl, service("s2", 2, each, 1)], SERVE, inv)
    want = (
        f"k8s/gpu: needs {each} CPUs free on one node; the most free on any of its 2 nodes "
        f"is {cpus - each} CPUs"
    )
    # The sums have room (60 of 96): they are not said.
    assert plan_reasons(root)["s2"] == [want]
    assert f"  {want}\n" in explain_text(root, "s2")


def test_no_node_with_both_names_what_each_node_has(tmp_path: Path) -> None:
    # Node 0 keeps CPUs but no memory, node 1 memory but no CPUs: a job needing a little of
    # both fits neither, though the sums have room for it.
    mem = "64GiB"
    inv = platform(slurm(target("cpu", 2, 0, 16, mem)))
    wl = [
        job("mem-hog", gpus=0, cpus=4, memory=mem, priority="high"),
        job("cpu-hog", gpus=0, cpus=16, memory="8GiB", priority="high"),
        job("small", gpus=0, cpus=2, memory="16GiB"),
    ]
    root = make_project(tmp_path, wl, "policy c\nrule r: route slurm\n", inv)
    left_mem = format_memory(parse_memory(mem) - parse_memory("8GiB"))
    want = (
        "hpc/cpu: needs 2 CPUs and 16GiB of memory free on one node; none of its 2 nodes has "
        f"all of it (the most CPUs free is 12, on a node with 0GiB of memory; the most memory "
        f"free is {left_mem}, on a node with 0 CPUs)"
    )
    assert plan_reasons(root)["small"] == [want]


def test_whole_nodes_name_the_idle_nodes(tmp_path: Path) -> None:
    nodes = 2
    inv = platform(slurm(target("h100", nodes, 8, 96, "1TiB")))
    wl = [job(f"j{i}", priority="high") for i in range(nodes)] + [job("late")]
    root = make_project(tmp_path, wl, "policy w\nrule big: route slurm with exclusive\n", inv)
    want = f"hpc/h100: needs 1 whole node, 0 of its {nodes} nodes are idle"
    assert plan_reasons(root)["late"] == [want]
    out = explain_text(root, "late")
    assert f"  {want}\n" in out
    assert f"Smallest change: hpc/h100 needs 1 more node (has {nodes})" in out


def test_a_quota_names_its_line_and_numbers(tmp_path: Path) -> None:
    limit, gpus = 16, 8
    policy = (
        f'policy q\nrule r: route slurm\nquota a:\n  for team == "a"\n  limit gpus <= {limit}\n'
    )
    inv = platform(slurm(target("h100", 4, 8, 96, "1TiB")))
    wl = [job(f"a{i}", team="a", gpus=gpus, priority="high") for i in range(2)]
    root = make_project(tmp_path, [*wl, job("a2", team="a", gpus=gpus)], policy, inv)
    src = line_of(root, "limit gpus")
    want = f"quota a ({src}) on gpus: {2 * gpus} of {limit} used, needs {gpus}"
    assert plan_reasons(root)["a2"] == [want]
    assert f"  {want}\n" in explain_text(root, "a2")


def test_partitions_that_max_time_excludes_are_named(tmp_path: Path) -> None:
    # `long` is full; `short` would have room, but its max_time is shorter than the job.
    inv = platform(
        slurm(
            target("long", 1, 8, 96, "1TiB", max_time="72h"),
            target("short", 4, 8, 96, "1TiB", max_time="4h"),
        )
    )
    wl = [job("first", duration="12h", priority="high"), job("second", duration="12h")]
    root = make_project(tmp_path, wl, "policy t\nrule r: route slurm\n", inv)
    reasons = plan_reasons(root)["second"]
    assert reasons[0].startswith("hpc/long: needs 8 GPUs free on one node; its 1 node has 0")
    assert reasons[1:] == ["not a candidate: hpc/short: max time 4h < 12h"]
    out = explain_text(root, "second")
    assert "  hpc/short (rank 0): max time 4h < 12h\n" in out


def test_pools_that_a_where_on_labels_excludes_are_named(tmp_path: Path) -> None:
    inv = platform(
        kubernetes(
            target("a", 1, 0, 32, "128GiB", labels={"zone": "a"}),
            target("b", 4, 0, 32, "128GiB", labels={"zone": "b"}),
        )
    )
    policy = 'policy l\nrule r: route kubernetes where labels.zone == "a"\n'
    wl = [service("one", 0, 32, 1, priority="high"), service("two", 0, 32, 1)]
    root = make_project(tmp_path, wl, policy, inv)
    src = line_of(root, "where labels.zone")
    reasons = plan_reasons(root)["two"]
    assert reasons[0] == "k8s/a: needs 32 CPUs free on one node; its 1 node has 0 CPUs free"
    assert reasons[1] == (
        f"not a candidate: k8s/b: excluded by the route's `where` ({src}): "
        'labels.zone == "a": "b" == "a" is false'
    )
    # explain shows the value the condition read on the pool.
    assert '    labels.zone == "a": "b" == "a" is false\n' in explain_text(root, "two")


def test_a_where_says_the_values_it_read_on_each_target_it_kept_out(tmp_path: Path) -> None:
    # `full` takes the first job; the others are kept out by the `where`, each for what the
    # inventory gives it: features without "ib", a max_time shorter than the job, or both.
    parts = {
        "full": (["ib"], "72h"),
        "eth": (["avx512"], "72h"),
        "short": (["ib"], "4h"),
        "both": ([], "2h"),
    }
    inv = platform(
        slurm(
            *(
                target(n, 1 if n == "full" else 4, 8, 96, "1TiB", features=f, max_time=t)
                for n, (f, t) in parts.items()
            )
        )
    )
    policy = (
        'policy w\nrule r: route slurm where "ib" in features and max_time >= workload.duration\n'
    )
    wl = [job("first", duration="12h", priority="high"), job("second", duration="12h")]
    root = make_project(tmp_path, wl, policy, inv)
    src = line_of(root, "where")
    reasons = plan_reasons(root)["second"]
    assert reasons[0].startswith("hpc/full: needs 8 GPUs free on one node; its 1 node has 0")

    def feats(f: list[str]) -> str:
        return "[" + ", ".join(f'"{x}"' for x in f) + "]"

    ib = '"ib" in features'
    time = "max_time >= workload.duration"
    # One line for the route: each part false on some of the targets, with the values it
    # compared there, and on how many when not on all three.
    assert reasons[1:] == [
        f"not a candidate: 3 targets (hpc/both, hpc/eth, hpc/short): excluded by the route's "
        f'`where` ({src}): {ib}: "ib" in {feats(parts["both"][0])}, "ib" in '
        f"{feats(parts['eth'][0])} are false on 2 of them; {time}: {parts['both'][1]} >= 12h, "
        f"{parts['short'][1]} >= 12h are false on 2 of them",
    ]
    out = explain_text(root, "second")
    assert f'    {ib}: "ib" in {feats(parts["eth"][0])} is false\n' in out
    # explain's reasons are plan.json's; "not a candidate" ones are its excluded targets.
    assert "  hpc/short (rank 0): excluded by the route's `where`" in out


def test_pools_a_taint_keeps_out_are_named(tmp_path: Path) -> None:
    taint = {"key": "dedicated", "value": "research", "effect": "NoSchedule"}
    inv = platform(
        kubernetes(
            target("open", 1, 0, 32, "128GiB"),
            target("kept", 4, 0, 32, "128GiB", taints=[taint]),
        )
    )
    wl = [service("one", 0, 32, 1, priority="high"), service("two", 0, 32, 1)]
    root = make_project(tmp_path, wl, SERVE, inv)
    assert plan_reasons(root)["two"][1:] == [
        "not a candidate: k8s/kept: tainted dedicated; the rule does not tolerate it "
        '(tolerate = ["dedicated"])'
    ]


def test_an_oversubscribe_force_partition_says_what_the_plan_assumes(tmp_path: Path) -> None:
    inv = platform(slurm(target("shared", 1, 0, 8, "32GiB", oversubscribe="force:2")))
    wl = [job("a", gpus=0, cpus=8, memory="8GiB", priority="high"), job("b", gpus=0, cpus=8,
          memory="8GiB")]  # fmt: skip
    root = make_project(tmp_path, wl, "policy f\nrule r: route slurm\n", inv)
    (reason,) = plan_reasons(root)["b"]
    assert reason.startswith("hpc/shared: needs 8 CPUs free on one node; its 1 node has 0 CPUs")
    assert reason.endswith(
        "hpc/shared shares each CPU among up to 2 jobs (OverSubscribe=FORCE:2); the plan "
        "counts every CPU as one job's, so a CPU that running work holds is full"
    )


def test_a_placed_workload_names_its_nodes_and_the_room_left(tmp_path: Path) -> None:
    cpus, mem = 64, "256GiB"
    inv = platform(slurm(target("cpu", 2, 0, cpus, mem)))
    wl = [job("etl", gpus=0, cpus=24, memory="100GiB")]
    root = make_project(tmp_path, wl, "policy p\nrule r: route slurm\n", inv)
    out = explain_text(root, "etl")
    left = format_memory(parse_memory(mem) - parse_memory("100GiB"))
    assert (
        f"  hpc/cpu node 0: left there {cpus - 24} CPUs, {left} of memory "
        f"(of {cpus} CPUs, {mem} of memory)\n"
    ) in out


def test_the_cookbooks_reasons_are_the_plans() -> None:
    """docs/cookbook.md "Reading why a workload waits": its ```text reasons``` block is what
    the recipe above it plans, reason for reason."""
    from tests.docs.pages import DOCS, blocks, load

    page = DOCS / "cookbook.md"
    found = blocks(page)
    at = next(i for i, b in enumerate(found) if b.info == "text reasons")
    recipe = found[at - 1]
    assert recipe.kind == "route"
    said: dict[str, list[str]] = {}
    name = ""
    for line in found[at].text.splitlines():
        if line.startswith("  "):
            said[name].append(line.strip())
        else:
            name = line.rstrip(":")
            said[name] = []
    made = router.plan(load(page, recipe))
    assert {u.decision.workload.name: u.reasons for u in made.unplaced} == said


def test_a_placed_service_names_its_pods_nodes_and_replicas(tmp_path: Path) -> None:
    gpus, cpus = 4, 48
    inv = platform(kubernetes(target("gpu", 2, gpus, cpus, "192GiB")))
    chat = service("chat", 1, 8, 2) | {"replicas": {"min": 2, "max": 5}}
    root = make_project(tmp_path, [chat], SERVE, inv)
    out = explain_text(root, "chat")
    # Both replicas on one node (first fit), the room left there after them.
    assert (
        f"  k8s/gpu node 0 (2 pods): left there {gpus - 2} GPUs, {cpus - 16} CPUs, 160GiB of "
        f"memory (of {gpus} GPUs, {cpus} CPUs, 192GiB of memory)\n"
    ) in out
    assert "Replicas: 2 planned and counted (its min); the HPA may scale it to 5" in out


def test_nodes_shared_by_partitions_and_running_work_are_said(tmp_path: Path) -> None:
    # Two partitions over one node set of 2 × 8 GPUs; 5 GPUs of node 0 already run work.
    gpus = 8
    inv = platform(
        slurm(
            target("a", 0, 0, 0, 0, node_sets=["gpus"]),
            target("b", 0, 0, 0, 0, node_sets=["gpus"]),
            node_sets=[target("gpus", 2, gpus, 96, "1TiB")],
        )
    )
    for p in inv["clusters"][0]["partitions"]:  # a partition over a node set names only it
        for k in ("nodes", "cpus_per_node", "memory_per_node"):
            p.pop(k)
    running = 5
    wl = [job("first", gpus=gpus, priority="high"), job("second", gpus=4)]
    policy = 'policy s\nrule r: route slurm where name == "a"\n'
    root = make_project(tmp_path, wl, policy, inv)
    (root / "running.yaml").write_text(
        f"running:\n  - {{cluster: hpc, node_set: gpus, node: 0, gpus: {running}, cpus: 4, "
        "memory: 16GiB, job: '7'}\n"
    )
    with (root / "router.yaml").open("a") as f:
        f.write("running: running.yaml\n")
    (reason, *_) = plan_reasons(root)["second"]
    assert reason == (
        f"hpc/a: needs 4 GPUs free on one node; the most free on any of its 2 nodes (shared "
        f"with hpc/b) is {gpus - running} GPUs; running work holds {running} of the "
        f"{2 * gpus} GPUs there"
    )
