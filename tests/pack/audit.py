"""The audit's platform families (issue 11), written for the audit, not from router's generators.

Each family draws a platform (policy text, inventory, workloads, running work) from a seeded
random.Random, at `small` (1-8 nodes per capacity component, a few dozen workloads) or
`medium` (20-150 nodes per component, 200-3,000 workloads) size (`ci`: medium at its least,
for the bounded test in tests/pack/test_unseen.py), with a sidecar `audit.json`
saying what the policy means for each workload (tests/pack/audit_check.py reads it):

  awkward   prime CPU and memory sizes, 1/3 + 1/3 + 1/3 + epsilon of a node, memory-bound
            beside CPU-bound work, on Slurm partitions and Kubernetes pools;
  mig       pools cut mixed (some GPUs whole, some into 1g.10gb or 3g.40gb) and single, Slurm
            node sets with MIG GRES, services asking slices and whole GPUs in one pool, running
            work holding slices;
  shared    Slurm node sets shared by gpu, gpu-long and preempt, and overlapping node sets (a
            partition over two sets, another over one of them);
  running   running work (partial, whole-node) packed around, OverSubscribe=EXCLUSIVE;
  services  replicas min/max under hpa clamps, exclusive and multi-node jobs, spreads, a
            team quota;
  quotas, cpucomp, mixed   stop 20's: `per` quotas, 30-60 identical CPU nodes under 10-20
            job shapes, mixed node types in one partition (tests/pack/audit_more.py).
  shared3, mighpa, tiny, big   stop 21's (tests/pack/audit_new.py);
  taints, slurmx, migspread   stop 22's: pool taints and zones, 4 partitions over one node
            set with running work by name, MIG mixed pools with spreads (audit_s22.py).
  wide, manyparts, migper, justfit   stop 23's: 20-60 targets, 6-10 partitions over one set,
            MIG services under `per` quotas, multi-node jobs that just fit (audit_s23.py).

    python -m tests.pack.audit --family mig --size small --seeds 0-50 [--out /tmp/audit]

writes each platform as a project folder, runs `router plan` on it as a user would (a
subprocess), and judges the plan three ways: router's packcheck (check_plan,
check_assignment), router's referee (admits), and the audit's own checker; prints one line
per finding and the counts.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.pack import audit_more, audit_new, audit_s22, audit_s23
from tests.pack.audit_check import Verdict
from tests.pack.audit_check import judge as audit_judge
from tests.pack.audit_parts import (
    AWKWARD_CPU,
    AWKWARD_GPU,
    _awkward_job,
    _cpu_work,
    _gpu_work,
    _platform,
    _pool,
    _service,
    _size,
    write,
)

FAMILIES = ("awkward", "mig", "shared", "running", "services")
MORE = ("quotas", "cpucomp", "mixed")  # stop 20's, tests/pack/audit_more.py
NEW = ("shared3", "mighpa", "tiny", "big")  # stop 21's, tests/pack/audit_new.py
S22 = ("taints", "slurmx", "migspread")  # stop 22's, tests/pack/audit_s22.py
S23 = tuple(audit_s23.FAMILIES)  # stop 23's, tests/pack/audit_s23.py
ALL = FAMILIES + MORE + NEW + S22 + S23


def awkward(rng: random.Random, size: str) -> dict[str, Any]:
    comps = rng.randint(1, 3)
    parts, pools, shapes = [], [], []
    for k in range(comps):
        shape = rng.choice(AWKWARD_CPU + AWKWARD_GPU)
        n = _size(rng, size, (1, 8), (20, 150))
        if rng.random() < 0.5:
            parts.append(_pool(f"p{k}", shape, n))
        else:
            pools.append(_pool(f"k{k}", shape, n))
        shapes.append((shape, n))
    work: list[dict[str, Any]] = []
    for shape, n in shapes:
        many = _size(
            rng, size, (2, 3 * n + 2), (min(3000 // comps, 3 * n), min(3000 // comps, 6 * n))
        )
        work += [_awkward_job(rng, f"w{len(work) + j}", shape) for j in range(many)]
    for w in work:
        if rng.random() < 0.2:
            w["labels"] = {"where": rng.choice(["slurm", "k8s"])}
        if rng.random() < 0.15:  # a service of awkward pods too
            w.update(
                kind="inference", replicas={"min": rng.randint(1, 4), "max": rng.randint(4, 8)}
            )
            w.pop("duration", None)
            w["labels"] = {}
    return _platform(rng, parts, pools, work, [], {})


def plan(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "router", "plan", str(folder), "-q", "--workers", "1"],
        capture_output=True,
        text=True,
        check=False,
    )


def router_judges(
    folder: Path, referee_too: bool = True, packcheck_too: bool = True, built: Any = None
) -> tuple[list[str], list[str]]:
    """Router's own referees (packcheck, assignment, admits) on the folder's plan, planned
    again in process as `router plan` plans it (share_candidates), unless the caller gives
    that plan (`built`, a Plan's .built: a test that read its figures already)."""
    import router
    from router.plan.admits import referee
    from router.plan.packcheck import check_assignment, check_plan
    from tests.pack.unseen import units

    if built is None:
        built = router.plan(router.load(folder), workers=1, share_candidates=True).built
    i = built.inputs
    found, undecided = [], []
    checked = check_plan(i.inventory, i.running, built.placements) if packcheck_too else []
    for c in checked:
        if c.verdict.packs is False:
            found.append(f"packcheck: unpackable {c.component.problem.id}: {c.verdict.reason}")
        elif c.verdict.packs is None:  # decided below if the recorded assignment is valid
            undecided.append(f"packcheck undecided {c.component.problem.id} (search)")
    given = {p.workload.name: units(p) for p in built.placements}
    found += [
        f"assignment: {e}"
        for e in check_assignment(i.inventory, i.running, built.placements, given)
    ]
    if not referee_too:
        return found, undecided
    judged = referee(i.policy, i.inventory, i.workloads, built.placements, i.running)
    found += [f"referee: falsely unplaced {a}" for a in judged.admitted]
    undecided += [f"referee undecided {w} on {t}" for w, t in judged.undecided]
    return found, undecided


MIG_NODES = [(8, 96, 1024), (8, 64, 512), (4, 48, 256), (7, 112, 896)]


def _mig_layout(rng: random.Random, gpus: int, k8s: bool) -> dict[str, Any]:
    if k8s and rng.random() < 0.3:
        return {"mig": [{"gpus": gpus, "slices": {"1g.10gb": 7}}], "mig_strategy": "single"}
    ones = rng.randint(1, gpus)
    groups = [{"gpus": ones, "slices": {"1g.10gb": 7}}]
    threes = rng.randint(0, gpus - ones)
    if threes:
        groups.append({"gpus": threes, "slices": {"3g.40gb": 2}})
    return {"mig": groups}


def mig(rng: random.Random, size: str) -> dict[str, Any]:
    pools: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    running: list[dict[str, Any]] = []
    for k in range(rng.randint(1, 3)):
        g, c, m = rng.choice(MIG_NODES)
        n = _size(rng, size, (1, 8), (20, 150))
        pool = _pool(f"k{k}", (g, c, m), n, "a100") | (
            _mig_layout(rng, g, True) if rng.random() < 0.8 else {}
        )
        pools.append(pool)
    if rng.random() < 0.6:  # Slurm MIG GRES: whole GPUs beside cut ones
        g, c, m = rng.choice(MIG_NODES)
        parts.append(
            _pool("p0", (g, c, m), _size(rng, size, (1, 6), (20, 100)), "a100")
            | _mig_layout(rng, g, False)
        )
    nodes = sum(p["nodes"] for p in pools + parts)
    many = _size(rng, size, (4, 5 * nodes), (min(3000, 4 * nodes), min(3000, 10 * nodes)))
    work = []
    for j in range(many):
        r = rng.random()
        if r < 0.35:
            w = _service(rng, f"s{j}", [1, 1, 2], [1, 2, 5, 9], [4, 10, 20])
            w["labels"]["slice"] = rng.choice(["1g", "1g", "3g"])
        elif r < 0.6:
            w = _service(rng, f"s{j}", [1, 2, 3, 4], [3, 7, 12, 30], [16, 40, 90])
        elif r < 0.85:
            w = _gpu_work(rng, f"j{j}", 8, "a100")
        else:
            w = _cpu_work(rng, f"c{j}")
        work.append(w)
    for spec, cluster in [(p, "k8s") for p in pools] + [(p, "hpc") for p in parts]:
        for i in range(spec["nodes"]):
            if rng.random() < 0.3:
                slices: dict[str, int] = {}
                for grp in spec.get("mig", []):
                    for prof, per in grp["slices"].items():
                        slices[prof] = slices.get(prof, 0) + grp["gpus"] * per
                item: dict[str, Any] = {
                    "cluster": cluster,
                    "node_set": spec["name"],
                    "node": i,
                    "cpus": rng.randint(1, spec["cpus_per_node"] // 3),
                    "memory": f"{rng.randint(1, 100)}GiB",
                    "job": f"r{len(running)}",
                }
                if slices:
                    prof = rng.choice(sorted(slices))
                    item["mig"] = {prof: rng.randint(1, slices[prof])}
                whole = spec["gpus_per_node"] - sum(x["gpus"] for x in spec.get("mig", []))
                if spec.get("mig_strategy") != "single" and whole:
                    item["gpus"] = rng.randint(0, whole)
                running.append(item)
    return _platform(rng, parts, pools, work, [], {}, running)


def shared(rng: random.Random, size: str) -> dict[str, Any]:
    """gpu, gpu-long and preempt over one node set; a partition over two sets of one shape."""
    n1 = _size(rng, size, (1, 5), (20, 90))
    n2 = _size(rng, size, (1, 3), (10, 60))
    g, c, m = rng.choice([(8, 96, 1024), (8, 47, 383), (4, 61, 509)])
    sets = [
        _pool("h100a", (g, c, m), n1) | {"features": ["ib"]},
        _pool("h100b", (g, c, m), n2),
        _pool("cpu", rng.choice(AWKWARD_CPU), _size(rng, size, (1, 4), (20, 120))),
    ]
    parts: list[dict[str, Any]] = [
        {"name": "gpu", "node_sets": ["h100a"], "max_time": "1d"},
        {"name": "gpu-long", "node_sets": ["h100a"], "max_time": "7d"},
        {"name": "preempt", "node_sets": ["h100a", "h100b"], "max_time": "1d"},
        {"name": "cpu", "node_sets": ["cpu"]},
        {"name": "debug", "node_sets": ["cpu"], "max_time": "2h"},
    ]
    for p in parts:
        p["cost_per_gpu_hour"] = rng.randint(0, 3)
    pools = (
        [_pool("k0", (g, c, m), _size(rng, size, (1, 3), (20, 60)))] if rng.random() < 0.5 else []
    )
    nodes = n1 + n2 + sets[2]["nodes"]
    many = _size(rng, size, (4, 4 * nodes), (min(3000, 3 * nodes), min(3000, 8 * nodes)))
    work = []
    for j in range(many):
        w = _gpu_work(rng, f"j{j}", g, "h100") if rng.random() < 0.6 else _cpu_work(rng, f"c{j}")
        w["duration"] = rng.choice(["1h", "20h", "3d"])
        if rng.random() < 0.2 and w["gpus"] >= g:
            w["labels"] = {"excl": "yes"}
        elif rng.random() < 0.3:
            w["labels"] = {"where": "slurm"}
        work.append(w)
    return _platform(rng, parts, pools, work, sets, {})


def running_family(rng: random.Random, size: str) -> dict[str, Any]:
    """Work already on the nodes, by index and by name, some whole; OverSubscribe=EXCLUSIVE."""
    parts: list[dict[str, Any]] = []
    pools: list[dict[str, Any]] = []
    running: list[dict[str, Any]] = []
    for k in range(rng.randint(1, 3)):
        shape = rng.choice(AWKWARD_GPU + AWKWARD_CPU + [(4, 96, 192), (8, 48, 384)])
        n = _size(rng, size, (1, 8), (20, 150))
        t = _pool(f"p{k}", shape, n) | {"node_names": [f"p{k}n{i:03d}" for i in range(n)]}
        if rng.random() < 0.3:
            t["oversubscribe"] = "exclusive"
        parts.append(t)
    for k in range(rng.randint(0, 2)):
        shape = rng.choice([(4, 96, 192), (8, 48, 384), (0, 61, 127), (2, 29, 89)])
        pools.append(_pool(f"k{k}", shape, _size(rng, size, (1, 8), (20, 150))))
    for spec, cluster in [(p, "hpc") for p in parts] + [(p, "k8s") for p in pools]:
        g, c, m = (
            spec.get("gpus_per_node", 0),
            spec["cpus_per_node"],
            int(spec["memory_per_node"][:-3]),
        )
        for i in range(spec["nodes"]):
            r = rng.random()
            if r > 0.5:
                continue
            by = (
                {"node": spec["node_names"][i]}
                if "node_names" in spec and rng.random() < 0.5
                else {"node_set": spec["name"], "node": i}
            )
            if r < 0.08 or spec.get("oversubscribe") == "exclusive":
                running.append({"cluster": cluster, **by, "whole": True, "job": f"r{len(running)}"})
                continue
            for _ in range(rng.randint(1, 2)):  # at most half the node each
                running.append(
                    {
                        "cluster": cluster,
                        **by,
                        "gpus": rng.randint(0, g // 2),
                        "cpus": rng.randint(1, c // 2),
                        "memory": f"{rng.randint(1, m // 2)}GiB",
                        "job": f"r{len(running)}",
                    }
                )
    nodes = sum(p["nodes"] for p in parts + pools)
    many = _size(rng, size, (3, 4 * nodes), (min(3000, 2 * nodes), min(3000, 6 * nodes)))
    work = []
    for j in range(many):
        spec = rng.choice(parts + pools)
        shape = (
            spec.get("gpus_per_node", 0),
            spec["cpus_per_node"],
            int(spec["memory_per_node"][:-3]),
        )
        w = _awkward_job(rng, f"w{j}", shape)
        if rng.random() < 0.15 and w["gpus"] == shape[0] and shape[0]:
            w["labels"] = {"excl": "yes"}
        work.append(w)
    return _platform(rng, parts, pools, work, [], {}, running)


def services(rng: random.Random, size: str) -> dict[str, Any]:
    """Services under hpa clamps, exclusive and multi-node jobs, spreads, a team quota."""
    pools = [
        _pool("l4", (4, 48, 192), _size(rng, size, (1, 6), (20, 120)), "l4"),
        _pool("h100", (8, 96, 1024), _size(rng, size, (1, 4), (20, 80))),
        _pool("cpu", (0, 64, 256), _size(rng, size, (1, 6), (20, 150))),
    ]
    parts = [_pool("gpu", (8, 96, 1024), _size(rng, size, (1, 8), (20, 100)))]
    hpa = rng.choice([(2, 20), (1, 4), (3, 6), (1, 100)])
    nodes = sum(p["nodes"] for p in pools + parts)
    many = _size(rng, size, (4, 5 * nodes), (min(3000, 3 * nodes), min(3000, 8 * nodes)))
    work = []
    for j in range(many):
        r = rng.random()
        if r < 0.5:
            w = _service(rng, f"s{j}", [0, 1, 2, 3, 5], [1, 4, 15, 30, 47], [2, 16, 60, 200])
            if w["gpus"]:
                w["gpu_type"] = rng.choice(["l4", "h100", "any"])
            if rng.random() < 0.2:
                del w["replicas"]
        elif r < 0.75:
            w = _gpu_work(rng, f"j{j}", 8, "h100")
            if w["gpus"] >= 8 and rng.random() < 0.5:
                w["labels"] = {"excl": "yes"}
        else:
            w = _cpu_work(rng, f"c{j}")
        work.append(w)
    quotas = [{"team": "a", "gpus": rng.randint(4, 40)}] if rng.random() < 0.5 else []
    spreads = (
        [{"by": "app", "across": rng.choice(["target", "cluster"]), "max": rng.randint(2, 6)}]
        if rng.random() < 0.5
        else []
    )
    return _platform(
        rng, parts, pools, work, [], {"hpa": hpa, "quotas": quotas, "spreads": spreads}
    )


FAMILY_FUNCS: dict[str, Any] = {
    "awkward": awkward,
    "mig": mig,
    "shared": shared,
    "running": running_family,
    "services": services,
    "quotas": audit_more.quotas,
    "cpucomp": audit_more.cpucomp,
    "mixed": audit_more.mixed,
    "shared3": audit_new.shared3,
    "mighpa": audit_new.mighpa,
    "tiny": audit_new.tiny,
    "big": audit_new.big,
    "taints": audit_s22.taints,
    "slurmx": audit_s22.slurmx,
    "migspread": audit_s22.migspread,
    **audit_s23.FAMILIES,
}


def build(family: str, size: str, seed: int) -> dict[str, Any]:
    rng = random.Random(f"audit:{family}:{size}:{seed}")
    made: dict[str, Any] = FAMILY_FUNCS[family](rng, size)
    return made


def run_one(
    family: str,
    size: str,
    seed: int,
    out: Path,
    exact_nodes: int = 40,
    referee_too: bool = True,
    packcheck_too: bool = True,
) -> tuple[Verdict, list[str], list[str], str]:
    folder = out / f"{family}-{size}-{seed}"
    write(build(family, size, seed), folder)
    done = plan(folder)
    if done.returncode not in (0, 3):
        return (
            Verdict(findings=[f"router plan exit {done.returncode}: {done.stderr[-400:]}"]),
            [],
            [],
            str(folder),
        )
    mine = audit_judge(folder, exact_nodes=exact_nodes)
    theirs, undecided = router_judges(folder, referee_too, packcheck_too)
    return mine, theirs, undecided, str(folder)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.pack.audit")
    ap.add_argument("--family", choices=ALL, action="append")
    ap.add_argument("--size", choices=("small", "medium", "ci"), default="small")
    ap.add_argument("--seeds", default="0-9", help="a range such as 0-49")
    ap.add_argument("--out", type=Path, default=Path("/tmp/audit"))
    ap.add_argument(
        "--exact-nodes", type=int, default=40, help="exact re-pack up to this many nodes"
    )
    ap.add_argument(
        "--no-referee",
        action="store_true",
        help="skip router's referee (admits.py): minutes per medium platform; packcheck stays",
    )
    args = ap.parse_args(argv)
    lo, _, hi = args.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    bad = 0
    totals = {"platforms": 0, "targets": 0, "placed": 0, "units": 0, "unplaced": 0, "undecided": 0}
    for family in args.family or list(FAMILY_FUNCS):
        for seed in seeds:
            mine, theirs, undecided, folder = run_one(
                family, args.size, seed, args.out, args.exact_nodes, not args.no_referee
            )
            totals["platforms"] += 1
            totals["targets"] += mine.targets
            totals["placed"] += mine.placed
            totals["units"] += mine.units
            totals["unplaced"] += mine.unplaced
            totals["undecided"] += len(mine.undecided) + len(undecided)
            if mine.findings or theirs:
                bad += 1
                for f in mine.findings:
                    print(f"{family} {args.size} seed {seed}: audit: {f}  [{folder}]", flush=True)
                for f in theirs:
                    print(f"{family} {args.size} seed {seed}: router {f}  [{folder}]", flush=True)
            for u in mine.undecided + undecided:
                print(f"{family} {args.size} seed {seed}: undecided: {u}", flush=True)
    print(" ".join(f"{k} {v}" for k, v in totals.items()), f"with findings {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
