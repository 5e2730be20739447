"""Stop 21's audit families (issue 11), beside tests/pack/audit.py's, from the same pieces:

shared3   one node set under 3-4 partitions (gpu, gpu-long, preempt with PreemptMode=requeue,
          scavenger), running work on its nodes by index, preemptible workloads;
mighpa    Kubernetes pools cut MIG mixed and single, services asking slices under
          hpa(...) clamps that move their replica counts, running pods holding slices;
tiny      1-3 nodes per platform: exclusive, multi-node and service work mixed (issue 11's
          three cases generalised);
big       60-200 identical nodes per target and 20+ job shapes, where exact searches give up.
"""

from __future__ import annotations

import random
from typing import Any

from tests.pack.audit_parts import (
    AWKWARD_GPU,
    _cpu_work,
    _gpu_work,
    _platform,
    _pool,
    _service,
    _size,
)


def shared3(rng: random.Random, size: str) -> dict[str, Any]:
    g, c, m = rng.choice([(8, 96, 1024), (8, 47, 383), (4, 61, 509), (6, 71, 509)])
    n = _size(rng, size, (1, 6), (20, 80))
    sets = [
        _pool("gpus", (g, c, m), n),
        _pool("cpu", (0, 61, 127), _size(rng, size, (1, 3), (10, 40))),
    ]
    parts: list[dict[str, Any]] = [
        {"name": "gpu", "node_sets": ["gpus"], "max_time": "1d"},
        {"name": "gpu-long", "node_sets": ["gpus"], "max_time": "7d"},
        {
            "name": "preempt",
            "node_sets": ["gpus"],
            "max_time": "1d",
            "preempt_mode": "requeue",
        },
        {"name": "cpu", "node_sets": ["cpu"]},
        {"name": "preempt-cpu", "node_sets": ["cpu"], "preempt_mode": "requeue"},
    ]
    if rng.random() < 0.5:
        parts.append({"name": "scavenger", "node_sets": ["gpus"], "max_time": "4h"})
    for p in parts:
        p["cost_per_gpu_hour"] = rng.randint(0, 3)
    running: list[dict[str, Any]] = []
    for s in sets:
        sg = s.get("gpus_per_node", 0)
        for i in range(s["nodes"]):
            if rng.random() < 0.5:
                continue
            if rng.random() < 0.1:
                running.append(
                    {
                        "cluster": "hpc",
                        "node_set": s["name"],
                        "node": i,
                        "whole": True,
                        "job": f"r{len(running)}",
                    }
                )
                continue
            running.append(
                {
                    "cluster": "hpc",
                    "node_set": s["name"],
                    "node": i,
                    "gpus": rng.randint(0, sg // 2),
                    "cpus": rng.randint(1, s["cpus_per_node"] // 2),
                    "memory": f"{rng.randint(1, int(s['memory_per_node'][:-3]) // 2)}GiB",
                    "job": f"r{len(running)}",
                }
            )
    nodes = sum(s["nodes"] for s in sets)
    many = _size(rng, size, (4, 4 * nodes), (min(3000, 3 * nodes), min(3000, 6 * nodes)))
    work = []
    for j in range(many):
        w = _gpu_work(rng, f"j{j}", g, "h100") if rng.random() < 0.6 else _cpu_work(rng, f"c{j}")
        w["duration"] = rng.choice(["1h", "3h", "20h", "3d"])
        if rng.random() < 0.3:
            w["preemptible"] = True
        if rng.random() < 0.15 and w["gpus"] >= g:
            w["labels"] = {"excl": "yes"}
        else:
            w["labels"] = {"where": "slurm"}
        work.append(w)
    return _platform(rng, parts, [], work, sets, {}, running)


def mighpa(rng: random.Random, size: str) -> dict[str, Any]:
    pools: list[dict[str, Any]] = []
    for k in range(rng.randint(1, 3)):
        g, c, m = rng.choice([(8, 96, 1024), (4, 48, 256), (7, 112, 896), (2, 29, 89)])
        pool = _pool(f"k{k}", (g, c, m), _size(rng, size, (1, 5), (20, 80)), "a100")
        if rng.random() < 0.35:
            pool |= {"mig": [{"gpus": g, "slices": {"1g.10gb": 7}}], "mig_strategy": "single"}
        else:
            ones = rng.randint(1, g)
            groups: list[dict[str, Any]] = [{"gpus": ones, "slices": {"1g.10gb": 7}}]
            if g - ones and rng.random() < 0.6:
                groups.append({"gpus": rng.randint(1, g - ones), "slices": {"3g.40gb": 2}})
            pool |= {"mig": groups}
        pools.append(pool)
    hpa = rng.choice([(1, 3), (2, 4), (3, 5), (4, 40), (1, 1)])
    running: list[dict[str, Any]] = []
    for spec in pools:
        slices: dict[str, int] = {}
        for grp in spec["mig"]:
            for prof, per in grp["slices"].items():
                slices[prof] = slices.get(prof, 0) + grp["gpus"] * per
        for i in range(spec["nodes"]):
            if rng.random() < 0.5:
                prof = rng.choice(sorted(slices))
                running.append(
                    {
                        "cluster": "k8s",
                        "node_set": spec["name"],
                        "node": i,
                        "cpus": rng.randint(1, spec["cpus_per_node"] // 4),
                        "memory": f"{rng.randint(1, 20)}GiB",
                        "mig": {prof: rng.randint(1, slices[prof])},
                        "job": f"r{len(running)}",
                    }
                )
    nodes = sum(p["nodes"] for p in pools)
    many = _size(rng, size, (3, 4 * nodes), (min(3000, 3 * nodes), min(3000, 6 * nodes)))
    work = []
    for j in range(many):
        r = rng.random()
        if r < 0.55:
            w = _service(rng, f"s{j}", [1, 1, 2], [1, 2, 3, 5], [2, 4, 10])
            w["labels"]["slice"] = rng.choice(["1g", "1g", "3g"])
        elif r < 0.8:
            w = _service(rng, f"s{j}", [0, 1, 2], [1, 4, 9], [4, 16, 40])
        else:
            w = _cpu_work(rng, f"c{j}")
        work.append(w)
    return _platform(rng, [], pools, work, [], {"hpa": hpa}, running)


def tiny(rng: random.Random, size: str) -> dict[str, Any]:
    shape = rng.choice([(8, 96, 1024), (8, 64, 512), (4, 48, 192), *AWKWARD_GPU])
    g = shape[0]
    parts: list[dict[str, Any]] = []
    pools: list[dict[str, Any]] = []
    left = rng.randint(1, 3)
    if rng.random() < 0.8:
        k = rng.randint(1, left)
        parts.append(_pool("gpu", shape, k))
        left -= k
    if left or not parts:
        pools.append(_pool("kgpu", shape, max(1, left)))
    work: list[dict[str, Any]] = []
    for j in range(rng.randint(2, 8)):
        r = rng.random()
        if r < 0.25:
            w = _gpu_work(rng, f"e{j}", g, "h100") | {"gpus": g, "labels": {"excl": "yes"}}
        elif r < 0.45:
            w = _gpu_work(rng, f"m{j}", g, "h100")
            w["nodes"] = 2
            w["gpus"] = 2 * rng.randint(1, g)
        elif r < 0.7:
            w = _service(rng, f"s{j}", [1, 2, g // 2 or 1], [4, 8, 16], [16, 40, 64])
            w["gpu_type"] = "h100"
        else:
            w = _gpu_work(rng, f"j{j}", g, "h100")
            w["gpus"] = rng.randint(1, g)
            w.pop("nodes", None)
        w["cpus"] = min(w["cpus"], shape[1])
        work.append(w)
    return _platform(rng, parts, pools, work, [], {"hpa": rng.choice([(1, 2), (1, 4), (2, 20)])})


def big(rng: random.Random, size: str) -> dict[str, Any]:
    g, c, m = rng.choice([(8, 96, 1024), (4, 61, 509), (0, 128, 512), (0, 47, 191)])
    n = rng.randint(60, 200) if size != "ci" else 60
    sets = [_pool("big", (g, c, m), n)]
    parts: list[dict[str, Any]] = [{"name": "big", "node_sets": ["big"], "max_time": "2d"}]
    shapes: set[tuple[int, int, int]] = set()
    while len(shapes) < rng.randint(20, 30):
        gg = rng.choice([0, 1, 2, 3, g]) if g else 0
        shapes.add((min(gg, g), rng.randint(1, c // 2), rng.randint(1, m // 3)))
    shape_list = sorted(shapes)
    fill = rng.uniform(0.9, 1.2)
    work: list[dict[str, Any]] = []
    used = [0, 0, 0]
    while max(used[1] / (n * c), used[2] / (n * m), used[0] / (n * g) if g else 0) < fill:
        s = rng.choice(shape_list)
        w: dict[str, Any] = {
            "name": f"b{len(work)}",
            "kind": "training" if s[0] else "batch",
            "gpus": s[0],
            "cpus": s[1],
            "memory": f"{s[2]}GiB",
            "duration": "2h",
            "labels": {"where": "slurm"},
        }
        if s[0]:
            w["gpu_type"] = "h100"
        used = [used[0] + s[0], used[1] + s[1], used[2] + s[2]]
        work.append(w)
    return _platform(rng, parts, [], work, sets, {})
