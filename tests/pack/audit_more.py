"""Stop 20's audit families (issue 11), beside tests/pack/audit.py's, from the same pieces:

quotas    `per` quotas: per team (GPUs), per user label (workloads), per cluster (CPUs),
          and a team's GPUs per user, over Slurm, GPU pools and CPU pools, services at
          min = max replicas and under hpa clamps;
cpucomp   XL's remaining case at small scale: one component of 30-60 identical CPU nodes
          (a partition and a long one over the same node set) and 10-20 job shapes drawn
          to over-fill it, exclusive jobs among shared ones, a small CPU pool beside it;
mixed     mixed node classes in one Slurm partition (the importer's sub-targets: one per
          node type, the real `partition` and a `constraint`), a preempt partition over one
          of them, exclusive and shared jobs on the same nodes.
"""

from __future__ import annotations

import random
from typing import Any

from tests.pack.audit_parts import _cpu_work, _gpu_work, _platform, _pool, _service, _size

USERS = ["ana", "bo", "cy", "di", "ed"]


def quotas(rng: random.Random, size: str) -> dict[str, Any]:
    parts = [_pool("gpu", (8, 96, 1024), _size(rng, size, (1, 4), (20, 80)))]
    pools = [
        _pool("l4", (4, 48, 192), _size(rng, size, (1, 4), (20, 100)), "l4"),
        _pool("cpu", (0, 64, 256), _size(rng, size, (1, 4), (20, 100))),
    ]
    hpa = rng.choice([(2, 20), (1, 4), (3, 6)])
    nodes = sum(p["nodes"] for p in parts + pools)
    many = _size(rng, size, (6, 5 * nodes), (min(3000, 3 * nodes), min(3000, 8 * nodes)))
    work = []
    for j in range(many):
        r = rng.random()
        if r < 0.4:
            w = _service(rng, f"s{j}", [0, 1, 1, 2], [1, 4, 15, 30], [2, 16, 60])
            if w["gpus"]:
                w["gpu_type"] = rng.choice(["l4", "any"])
            if rng.random() < 0.3:  # min = max: the count deployed is the count planned
                w["replicas"]["max"] = w["replicas"]["min"]
        elif r < 0.7:
            w = _gpu_work(rng, f"j{j}", 8, "h100")
        else:
            w = _cpu_work(rng, f"c{j}")
        w.setdefault("labels", {})["user"] = rng.choice(USERS)
        work.append(w)
    quota = [
        {"per": "team", "resource": "gpus", "limit": rng.randint(4, 24)},
        {"per": "workload.labels.user", "resource": "workloads", "limit": rng.randint(2, 8)},
        {"per": "cluster", "resource": "cpus", "limit": rng.randint(40, 64 * nodes)},
        {
            "team": "a",
            "per": "workload.labels.user",
            "resource": "gpus",
            "limit": rng.randint(1, 9),
        },
    ]
    chosen = [q for q in quota if rng.random() < 0.7] or quota[:1]
    return _platform(rng, parts, pools, work, [], {"hpa": hpa, "quotas": chosen})


CPU_NODES = [(0, 128, 512), (0, 64, 256), (0, 96, 384), (0, 61, 127), (0, 48, 191)]
CPUS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48]
GIBS = [2, 4, 8, 16, 24, 32, 48, 64, 96, 150]


def cpucomp(rng: random.Random, size: str) -> dict[str, Any]:
    g, c, m = rng.choice(CPU_NODES)
    n = rng.randint(30, 60) if size != "medium" else rng.randint(100, 150)
    if size == "ci":
        n = 30
    sets = [_pool("cpu", (g, c, m), n)]
    parts: list[dict[str, Any]] = [{"name": "cpu", "node_sets": ["cpu"], "max_time": "24h"}]
    if rng.random() < 0.6:
        parts.append({"name": "cpu-long", "node_sets": ["cpu"], "max_time": "7d"})
    pools = [_pool("cpu-k", (0, 32, 128), rng.randint(1, 4))] if rng.random() < 0.5 else []
    shapes = sorted(
        {
            (rng.choice([x for x in CPUS if x <= c]), rng.choice([x for x in GIBS if x < m]))
            for _ in range(40)
        }
    )
    shapes = rng.sample(shapes, min(len(shapes), 10 if size == "ci" else rng.randint(10, 20)))
    fill = rng.uniform(0.9, 1.3)  # of the node set's CPUs or memory, whichever binds
    work: list[dict[str, Any]] = []
    cpus = mem = 0
    while cpus < fill * n * c and mem < fill * n * m:
        k = rng.choice(shapes)
        w: dict[str, Any] = {
            "name": f"c{len(work)}",
            "kind": "batch",
            "gpus": 0,
            "cpus": k[0],
            "memory": f"{k[1]}GiB",
            "duration": rng.choice(["1h", "4h", "12h", "36h"]),
        }
        if rng.random() < 0.05:  # exclusive among shared: a whole node each
            w["labels"] = {"excl": "yes"}
            cpus, mem = cpus + c, mem + m
        else:
            cpus, mem = cpus + k[0], mem + k[1]
        work.append(w)
    return _platform(rng, parts, pools, work, sets, {})


def mixed(rng: random.Random, size: str) -> dict[str, Any]:
    """One `cpu` partition of two node types and one `gpu` partition of two, as the importer
    writes them (a sub-target per type), beside partitions over one type."""
    small, big = rng.sample(CPU_NODES, 2)
    sets = [
        _pool("cpu-a", small, _size(rng, size, (1, 4), (20, 60))) | {"features": ["typea"]},
        _pool("cpu-b", big, _size(rng, size, (1, 3), (10, 40))) | {"features": ["typeb"]},
        _pool("gpu-h", (8, 96, 1024), _size(rng, size, (1, 3), (10, 40))) | {"features": ["h100"]},
        _pool("gpu-a", (4, 64, 512), _size(rng, size, (1, 3), (10, 40)), "a100")
        | {"features": ["a100"]},
    ]
    sub = [("cpu", "cpu-a", "typea"), ("cpu", "cpu-b", "typeb")]
    sub += [("gpu", "gpu-h", "h100"), ("gpu", "gpu-a", "a100")]
    parts: list[dict[str, Any]] = [
        {"name": f"{part}-{feat}", "partition": part, "node_sets": [s], "constraint": feat}
        for part, s, feat in sub
    ]
    parts += [
        {"name": "long", "node_sets": ["cpu-b"], "max_time": "7d"},
        {"name": "preempt", "node_sets": ["gpu-h"], "max_time": "1d"},
    ]
    for p in parts:
        p.setdefault("max_time", "2d")
        p["cost_per_gpu_hour"] = rng.randint(0, 3)
    nodes = sum(s["nodes"] for s in sets)
    many = _size(rng, size, (6, 5 * nodes), (min(3000, 3 * nodes), min(3000, 8 * nodes)))
    work = []
    for j in range(many):
        r = rng.random()
        if r < 0.45:
            w = _gpu_work(rng, f"j{j}", rng.choice([4, 8]), rng.choice(["h100", "a100"]))
            if w["gpus"] >= 4 and rng.random() < 0.3:
                w["labels"] = {"excl": "yes"}
        else:
            w = _cpu_work(rng, f"c{j}")
            if rng.random() < 0.1:
                w["labels"] = {"excl": "yes"}
        w["duration"] = rng.choice(["1h", "20h", "3d"])
        work.append(w)
    return _platform(rng, parts, [], work, sets, {})
