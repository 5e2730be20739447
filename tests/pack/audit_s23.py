"""Stop 23's audit families (issue 11), beside tests/pack/audit.py's, from the same pieces:

wide      many targets (small 6-12, medium 20-60): Kubernetes pools and Slurm partitions of a
          few shapes repeated (node classes across targets), partitions over pairs of
          alike node sets, MIG pools among them, awkward and GPU work aimed at each shape,
          running work on a third of the nodes (medium: 200-2,000 workloads);
manyparts 6-10 Slurm partitions over one GPU node set (max times, OverSubscribe=EXCLUSIVE,
          preempt over it and a second set), 2-3 over a CPU set, two running pieces on many
          nodes (by name and by index, some whole), multi-node and exclusive jobs;
migper    MIG pools cut mixed beside a whole-GPU pool, services asking slices and whole
          GPUs under `per` quotas (per team GPUs, per app workloads, per cluster CPUs) and a
          spread, running pods holding slices;
justfit   multi-node jobs that just fit: a partition whose running work leaves k nodes idle
          and jobs of exactly k whole nodes (and k + 1), jobs sized to exactly a busy node's
          remainder (and one more CPU), services whose min replicas fill a pool exactly.

    python -m tests.pack.audit_s23 --family wide --size small --seeds 0-20 [--reasons]

runs tests/pack/audit.py's run_one on each (router plan, the audit's checker, router's
referees) and, with --reasons, the honesty of the plan's capacity reasons
(tests/pack/audit_reasons.py), and `router explain` of a few unplaced workloads.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

from tests.pack.audit_parts import (
    AWKWARD_CPU,
    AWKWARD_GPU,
    _awkward_job,
    _cpu_work,
    _gpu_work,
    _named_sets,
    _platform,
    _pool,
    _service,
    _size,
)

WIDE_SHAPES = [(8, 96, 1024), (4, 48, 192), AWKWARD_GPU[0], AWKWARD_GPU[3], *AWKWARD_CPU[:3]]


def _shape_of(spec: dict[str, Any]) -> tuple[int, int, int]:
    return (
        int(spec.get("gpus_per_node", 0)),
        int(spec["cpus_per_node"]),
        int(spec["memory_per_node"][:-3]),
    )


def _running_on(
    rng: random.Random, spec: dict[str, Any], cluster: str, share: float, pieces: int = 1
) -> list[dict[str, Any]]:
    """Running work on about `share` of spec's nodes: up to `pieces` partial items each (at
    most a third of the node each), by name where the set has names, some whole (Slurm)."""
    g, c, m = _shape_of(spec)
    out: list[dict[str, Any]] = []
    for i in range(int(spec["nodes"])):
        if rng.random() > share:
            continue
        by: dict[str, Any] = {"node_set": spec["name"], "node": i}
        if spec.get("node_names") and rng.random() < 0.5:
            by = {"node": spec["node_names"][i]}
        if cluster == "hpc" and rng.random() < 0.1:
            out.append({"cluster": cluster, **by, "whole": True})
            continue
        for _ in range(rng.randint(1, pieces)):
            item = {
                "cluster": cluster,
                **by,
                "gpus": rng.randint(0, g // 3),
                "cpus": rng.randint(1, max(1, c // 3)),
                "memory": f"{rng.randint(1, max(1, m // 3))}GiB",
            }
            out.append(item)
    return out


def _named(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for k, r in enumerate(out):
        r["job"] = f"r{k}"
    return out


def wide(rng: random.Random, size: str) -> dict[str, Any]:
    shapes = rng.sample(WIDE_SHAPES, rng.randint(3, 5))
    n_pools = _size(rng, size, (3, 6), (10, 30))
    n_pairs = _size(rng, size, (1, 2), (3, 6))
    pools: list[dict[str, Any]] = []
    for k in range(n_pools):
        shape = rng.choice(shapes)
        p = _pool(f"k{k}", shape, _size(rng, size, (1, 4), (2, 8)), rng.choice(["h100", "a100"]))
        if shape[0] >= 4 and p["gpu_type"] == "a100" and rng.random() < 0.4:
            p["mig"] = [{"gpus": rng.randint(1, shape[0] - 1), "slices": {"1g.10gb": 7}}]
        p["cost_per_gpu_hour"] = rng.randint(0, 3)
        pools.append(p)
    sets: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for k in range(n_pairs):  # two alike sets; partitions over one, the other, both
        shape = rng.choice(shapes)
        a = _pool(f"s{k}a", shape, _size(rng, size, (1, 3), (2, 10)))
        b = _pool(f"s{k}b", shape, _size(rng, size, (1, 3), (2, 10)))
        for s in (a, b):
            s["node_names"] = [f"{s['name']}n{i:02d}" for i in range(s["nodes"])]
        sets += [a, b]
        over = [[a["name"]], [b["name"]], [a["name"], b["name"]]]
        for j in range(rng.randint(2, 5)):
            parts.append(
                {
                    "name": f"p{k}x{j}",
                    # the first over both: a set no target names is an error (A22)
                    "node_sets": list(over[2] if j == 0 else rng.choice(over)),
                    "max_time": rng.choice(["4h", "1d", "7d"]),
                    "cost_per_gpu_hour": rng.randint(0, 3),
                }
            )
    running: list[dict[str, Any]] = []
    for p in pools:
        if "mig" not in p:  # slices held: migper's and mig's business
            running += _running_on(rng, p, "k8s", 0.3)
    for s in sets:
        running += _running_on(rng, s, "hpc", 0.3)
    nodes = sum(int(p["nodes"]) for p in pools + sets)
    many = _size(rng, size, (20, 80), (min(2000, max(200, 3 * nodes)), 2000))
    aims = [_shape_of(p) for p in pools + sets]
    work: list[dict[str, Any]] = []
    for j in range(many):
        r = rng.random()
        if r < 0.45:
            w = _awkward_job(rng, f"a{j}", rng.choice(aims))
            w["duration"] = rng.choice(["1h", "3h", "20h", "3d"])
        elif r < 0.65:
            w = _service(rng, f"s{j}", [0, 1, 2], [1, 3, 8, 17], [2, 16, 60])
            if w["gpus"] and rng.random() < 0.3:
                w["labels"]["slice"] = "1g"
        elif r < 0.85:
            w = _gpu_work(rng, f"j{j}", rng.choice([4, 8]), rng.choice(["h100", "a100"]))
        else:
            w = _cpu_work(rng, f"c{j}")
        if w["kind"] != "inference" and rng.random() < 0.25:
            w["labels"] = {"where": rng.choice(["slurm", "k8s"])}
        work.append(w)
    return _platform(rng, parts, pools, work, sets, {}, _named(running))


def manyparts(rng: random.Random, size: str) -> dict[str, Any]:
    g, c, m = rng.choice([(8, 96, 1024), (4, 61, 509), (8, 47, 383), (6, 71, 509)])
    na = _size(rng, size, (2, 6), (20, 60))
    nb = _size(rng, size, (1, 3), (5, 20))
    cshape = rng.choice(AWKWARD_CPU)
    nc = _size(rng, size, (1, 4), (10, 40))
    sets = _named_sets((g, c, m), na, nb, cshape, nc)
    parts: list[dict[str, Any]] = [
        {"name": "whole", "node_sets": ["ga"], "max_time": "2d", "oversubscribe": "exclusive"},
        {"name": "preempt", "node_sets": ["ga", "gb"], "preempt_mode": "requeue"},
        {"name": "gbonly", "node_sets": ["gb"], "max_time": "1d"},
    ]
    for k in range(rng.randint(3, 7)):
        parts.append(
            {"name": f"g{k}", "node_sets": ["ga"], "max_time": rng.choice(["2h", "1d", "7d"])}
        )
    for k in range(rng.randint(2, 3)):
        parts.append({"name": f"c{k}", "node_sets": ["cp"], "max_time": rng.choice(["4h", "7d"])})
    for p in parts:
        p["cost_per_gpu_hour"] = rng.randint(0, 3)
    running: list[dict[str, Any]] = []
    for s in sets:
        running += _running_on(rng, s, "hpc", 0.6, pieces=2)
    nodes = na + nb + nc
    many = _size(rng, size, (6, 5 * nodes), (min(2000, 3 * nodes), min(2000, 6 * nodes)))
    work: list[dict[str, Any]] = []
    for j in range(many):
        r = rng.random()
        if r < 0.15:
            k = rng.randint(1, 3)
            w = _gpu_work(rng, f"x{j}", g, "h100") | {"gpus": k * g, "labels": {"excl": "yes"}}
            w.pop("nodes", None)
            if k > 1:
                w["nodes"] = k
            w["cpus"] = min(w["cpus"], c)
        elif r < 0.3:  # multi-node, not exclusive by the rule: whole nodes by the docs
            k = rng.randint(2, 3)
            w = _gpu_work(rng, f"m{j}", g, "h100") | {"nodes": k, "gpus": k * rng.randint(1, g)}
            w["cpus"] = min(w["cpus"], c)
        elif r < 0.6:
            w = _awkward_job(rng, f"a{j}", (g, c, m))
        else:
            w = _awkward_job(rng, f"c{j}", cshape)
        w["duration"] = rng.choice(["1h", "3h", "20h", "3d"])
        if rng.random() < 0.3:
            w["preemptible"] = True
        w.setdefault("labels", {}).setdefault("where", "slurm")
        work.append(w)
    return _platform(rng, parts, [], work, sets, {}, _named(running))


def migper(rng: random.Random, size: str) -> dict[str, Any]:
    pools: list[dict[str, Any]] = []
    for k in range(rng.randint(1, 3)):
        g, c, m = rng.choice([(8, 96, 1024), (4, 48, 256), (7, 112, 896)])
        pool = _pool(f"k{k}", (g, c, m), _size(rng, size, (1, 4), (10, 40)), "a100")
        ones = rng.randint(1, g - 1)
        groups: list[dict[str, Any]] = [{"gpus": ones, "slices": {"1g.10gb": 7}}]
        if g - ones > 1 and rng.random() < 0.6:
            groups.append({"gpus": rng.randint(1, g - ones - 1), "slices": {"3g.40gb": 2}})
        pools.append(pool | {"mig": groups})
    pools.append(_pool("l4", (4, 48, 192), _size(rng, size, (1, 4), (10, 40)), "l4"))
    running: list[dict[str, Any]] = []
    for spec in pools:
        slices: dict[str, int] = {}
        for grp in spec.get("mig", []):
            for prof, per in grp["slices"].items():
                slices[prof] = slices.get(prof, 0) + grp["gpus"] * per
        for i in range(spec["nodes"]):
            if rng.random() < 0.5:
                continue
            item: dict[str, Any] = {
                "cluster": "k8s",
                "node_set": spec["name"],
                "node": i,
                "cpus": rng.randint(1, spec["cpus_per_node"] // 4),
                "memory": f"{rng.randint(1, 40)}GiB",
            }
            if slices:
                prof = rng.choice(sorted(slices))
                item["mig"] = {prof: rng.randint(1, slices[prof])}
            running.append(item)
    hpa = rng.choice([(1, 8), (2, 12), (1, 20)])
    nodes = sum(p["nodes"] for p in pools)
    many = _size(rng, size, (6, 5 * nodes), (min(2000, 3 * nodes), min(2000, 6 * nodes)))
    work: list[dict[str, Any]] = []
    for j in range(many):
        r = rng.random()
        if r < 0.5:
            w = _service(rng, f"s{j}", [1, 1, 2], [1, 2, 5], [2, 8, 20])
            w["labels"]["slice"] = rng.choice(["1g", "1g", "3g"])
        elif r < 0.8:
            w = _service(rng, f"s{j}", [1, 2, 4], [3, 7, 12], [16, 40, 90])
            w["gpu_type"] = rng.choice(["a100", "l4", "any"])
        elif r < 0.9:
            w = _service(rng, f"s{j}", [0], [1, 4, 9], [4, 16])
        else:
            w = _cpu_work(rng, f"c{j}")
        if rng.random() < 0.3 and w.get("replicas"):
            w["replicas"]["max"] = w["replicas"]["min"]
        work.append(w)
    quota = [
        {"per": "team", "resource": "gpus", "limit": rng.randint(3, 6 * nodes)},
        {"per": "workload.labels.app", "resource": "workloads", "limit": rng.randint(2, 10)},
        {"per": "cluster", "resource": "cpus", "limit": rng.randint(20, 40 * nodes)},
        {"team": "b", "per": "workload.labels.app", "resource": "gpus", "limit": rng.randint(1, 9)},
    ]
    chosen = [q for q in quota if rng.random() < 0.6] or quota[:1]
    spreads = [{"by": "app", "across": "target", "max": rng.randint(2, 5), "kind": "inference"}]
    extra = {"hpa": hpa, "quotas": chosen, "spreads": spreads if rng.random() < 0.6 else []}
    return _platform(rng, [], pools, work, [], extra, _named(running))


def justfit(rng: random.Random, size: str) -> dict[str, Any]:
    g, c, m = rng.choice([(8, 96, 1024), (4, 61, 509), (0, 47, 191), (2, 29, 89)])
    n = _size(rng, size, (3, 8), (20, 60))
    names = [f"n{i:03d}" for i in range(n)]
    sets = [_pool("nodes", (g, c, m), n) | {"node_names": names}]
    parts: list[dict[str, Any]] = [{"name": "batch", "node_sets": ["nodes"], "max_time": "2d"}]
    if rng.random() < 0.5:
        parts.append({"name": "long", "node_sets": ["nodes"], "max_time": "7d"})
    idle = rng.randint(1, max(1, n // 2))
    busy = rng.sample(range(n), n - idle)
    running: list[dict[str, Any]] = []
    rest: list[tuple[int, int, int]] = []  # what each busy node has left
    for i in busy:
        rg, rc, rm = rng.randint(0, g // 2), rng.randint(1, c // 2), rng.randint(1, m // 2)
        running.append(
            {"cluster": "hpc", "node": names[i], "gpus": rg, "cpus": rc, "memory": f"{rm}GiB"}
        )
        rest.append((g - rg, c - rc, m - rm))
    work: list[dict[str, Any]] = []

    def job(name: str, gpus: int, cpus: int, mem: int, **more: Any) -> None:
        w: dict[str, Any] = {
            "name": name,
            "kind": "training" if gpus else "batch",
            "gpus": gpus,
            "cpus": cpus,
            "memory": f"{mem}GiB",
            "duration": rng.choice(["1h", "20h"]),
            "labels": {"where": "slurm"},
        }
        if gpus:
            w["gpu_type"] = "h100"
        work.append(w | more)

    for k in (idle, idle + 1):  # exactly the idle nodes, and one more
        if k >= 2:
            job(f"m{k}", k * g, k * rng.randint(1, c), k * rng.randint(1, m // 2), nodes=k)
        else:
            job(f"e{k}", g, rng.randint(1, c), rng.randint(1, m), labels={"excl": "yes"})
    for j, (fg, fc, fm) in enumerate(
        rng.sample(rest, min(len(rest), _size(rng, size, (1, 4), (5, 20))))
    ):
        job(f"r{j}", fg, fc, fm)  # a busy node's remainder exactly
        if rng.random() < 0.5:
            job(f"o{j}", fg, fc + 1, fm)  # one CPU over it
    pools: list[dict[str, Any]] = []
    if rng.random() < 0.6:
        pn, pods = _size(rng, size, (1, 3), (5, 20)), rng.choice([2, 3, 4])
        pools.append(_pool("k", (0, 24 * pods, 32 * pods), pn))
        w = _service(rng, "fill", [0], [24], [32])
        w["replicas"] = {"min": pn * pods, "max": pn * pods}
        work.append(w)
        w = _service(rng, "over", [0], [24], [32])
        w["replicas"] = {"min": 1, "max": 1}
        work.append(w)
    for j in range(_size(rng, size, (2, 10), (50, 300))):  # small work to fill around
        w = _awkward_job(rng, f"w{j}", (g, c, m))
        w.setdefault("labels", {})["where"] = "slurm"
        work.append(w)
    hpa = (1, 1000)  # no clamp: a service's replicas are its own
    return _platform(rng, parts, pools, work, sets, {"hpa": hpa}, _named(running))


FAMILIES: dict[str, Any] = {
    "wide": wide,
    "manyparts": manyparts,
    "migper": migper,
    "justfit": justfit,
}


def main(argv: list[str] | None = None) -> int:
    from tests.pack import audit, audit_reasons

    ap = argparse.ArgumentParser(prog="python -m tests.pack.audit_s23")
    ap.add_argument("--family", choices=sorted(FAMILIES), action="append")
    ap.add_argument("--size", choices=("small", "medium"), default="small")
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--out", type=Path, default=Path("/tmp/audit-s23"))
    ap.add_argument("--no-referee", action="store_true")
    ap.add_argument("--reasons", action="store_true", help="check the capacity reasons too")
    args = ap.parse_args(argv)
    lo, _, hi = args.seeds.partition("-")
    bad = checked = 0
    for family in args.family or list(FAMILIES):
        for seed in range(int(lo), int(hi or lo) + 1):
            mine, theirs, undecided, folder = audit.run_one(
                family, args.size, seed, args.out, referee_too=not args.no_referee
            )
            found = [f"audit: {f}" for f in mine.findings] + [f"router {f}" for f in theirs]
            failed = any(f.startswith("router plan exit") for f in mine.findings)
            if args.reasons and not failed:
                for h in (
                    audit_reasons.check(Path(folder)),
                    audit_reasons.explained(Path(folder), audit_reasons.some(Path(folder))),
                ):
                    checked += h.checked
                    found += [f"reason: {f}" for f in h.findings]
                    found += [f"reason unread: {f}" for f in h.unparsed]
            print(
                f"{family} {args.size} {seed}: placed {mine.placed} unplaced {mine.unplaced}"
                f" targets {mine.targets} findings {len(found)}"
                f" undecided {len(mine.undecided) + len(undecided)}",
                flush=True,
            )
            for f in found:
                print(f"  {f}  [{folder}]", flush=True)
            bad += bool(found)
    print(f"with findings {bad}; reasons checked {checked}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
