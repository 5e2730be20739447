"""The pieces the audit's platform families share (tests/pack/audit.py, audit_more.py): the
audit's policy and what it means per workload (audit.json), node shapes, workload makers, and
the project folder a platform is written as."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import yaml

HPA = (2, 20)


def _size(rng: random.Random, size: str, small: tuple[int, int], medium: tuple[int, int]) -> int:
    """A count drawn for the size; `ci` is medium at its least (the bounded test's)."""
    if size == "ci":
        return medium[0]
    lo, hi = small if size == "small" else medium
    return rng.randint(lo, hi)


def policy(
    hpa: tuple[int, int], quotas: list[dict[str, Any]], spreads: list[dict[str, Any]]
) -> str:
    lines = [
        "policy audit",
        "",
        "rule sliced:",
        '  when kind == "inference" and labels.slice == "1g"',
        f'  route kubernetes with mig = "1g.10gb", hpa(min = {hpa[0]}, max = {hpa[1]})',
        "",
        "rule sliced3:",
        '  when kind == "inference" and labels.slice == "3g"',
        '  route kubernetes with mig = "3g.40gb"',
        "",
        "rule serve:",
        '  when kind == "inference"',
        f"  route kubernetes with hpa(min = {hpa[0]}, max = {hpa[1]})",
        "",
        "rule excl:",
        '  when labels.excl == "yes"',
        "  route slurm with exclusive",
        "",
        "rule on_slurm:",
        '  when labels.where == "slurm"',
        "  route slurm",
        "",
        "rule on_k8s:",
        '  when labels.where == "k8s"',
        "  route kubernetes",
        "",
        "rule rest:",
        "  route any prefer lower cost",
        "",
    ]
    for k, q in enumerate(quotas):
        lines.append(f"quota q{k}:")
        if q.get("team"):
            lines.append(f'  for team == "{q["team"]}"')
        if q.get("per"):
            lines.append(f"  per {q['per']}")
        lines += [f"  limit {q.get('resource', 'gpus')} <= {q.get('limit', q.get('gpus'))}", ""]
    for k, s in enumerate(spreads):
        lines += [f"spread s{k}:", '  for kind == "inference"', f"  by labels.{s['by']}"]
        lines += [f"  across {s['across']}", f"  max {s['max']}", ""]
    return "\n".join(lines)


def meta_of(w: dict[str, Any], hpa: tuple[int, int]) -> dict[str, Any]:
    """What the audit's policy does with w, rule by rule as written above."""
    lab = w.get("labels") or {}
    if w["kind"] == "inference":
        m: dict[str, Any] = {"backends": ["kubernetes"], "service": True}
        if lab.get("slice") == "1g":
            return m | {"mig": "1g.10gb", "hpa": list(hpa)}
        if lab.get("slice") == "3g":
            return m | {"mig": "3g.40gb"}
        return m | {"hpa": list(hpa)}
    if lab.get("excl") == "yes":
        return {"backends": ["slurm"], "exclusive": True}
    if lab.get("where") == "slurm":
        return {"backends": ["slurm"]}
    if lab.get("where") == "k8s":
        return {"backends": ["kubernetes"]}
    return {"backends": ["slurm", "kubernetes"]}


# --- node shapes ------------------------------------------------------------------------------

# (gpus, cpus, GiB): primes and near-primes, nodes a third of a job does not divide
AWKWARD_CPU = [(0, 47, 191), (0, 61, 127), (0, 89, 353), (0, 53, 97), (0, 96, 389)]
AWKWARD_GPU = [(8, 47, 383), (4, 37, 149), (8, 97, 1021), (2, 29, 89), (6, 71, 509), (3, 43, 199)]


def _pool(
    name: str, shape: tuple[int, int, int], nodes: int, gpu_type: str = "h100"
) -> dict[str, Any]:
    g, c, m = shape
    out: dict[str, Any] = {
        "name": name,
        "nodes": nodes,
        "cpus_per_node": c,
        "memory_per_node": f"{m}GiB",
    }
    if g:
        out |= {"gpus_per_node": g, "gpu_type": gpu_type}
    return out


def _named_sets(
    gpu: tuple[int, int, int], na: int, nb: int, cpu: tuple[int, int, int], nc: int
) -> list[dict[str, Any]]:
    """The Slurm node sets of the shared-node families: ga and gb of one GPU shape, cp of a CPU
    one, each node named <set><index>, so running work can name its node."""
    sized = [("ga", gpu, na), ("gb", gpu, nb), ("cp", cpu, nc)]
    return [
        _pool(name, shape, n) | {"node_names": [f"{name}{i:03d}" for i in range(n)]}
        for name, shape, n in sized
    ]


def _awkward_job(rng: random.Random, name: str, shape: tuple[int, int, int]) -> dict[str, Any]:
    """A job cut to the awkward node it is aimed at: thirds plus epsilon, memory- or CPU-bound."""
    g, c, m = shape
    cut = rng.choice(["third", "third+", "half+", "mem", "cpu", "prime", "small"])
    if cut == "third":
        cpus, mem = c // 3, m // 3
    elif cut == "third+":
        cpus, mem = c // 3 + 1, m // 3
    elif cut == "half+":
        cpus, mem = c // 2 + 1, m // 4
    elif cut == "mem":
        cpus, mem = rng.randint(1, 3), m - rng.randint(1, 9)
    elif cut == "cpu":
        cpus, mem = c - rng.randint(0, 2), rng.randint(1, 8)
    elif cut == "prime":
        cpus, mem = rng.choice([7, 11, 13, 17, 19, 23]), rng.choice([29, 31, 37, 41, 43])
    else:
        cpus, mem = rng.randint(1, 4), rng.randint(1, 6)
    gpus = rng.choice([0, 0, 1, 3, g // 2 + 1, g]) if g else 0
    gpus = min(gpus, g)
    w: dict[str, Any] = {
        "name": name,
        "kind": "training" if gpus else "batch",
        "gpus": gpus,
        "cpus": max(1, cpus),
        "memory": f"{max(1, mem)}GiB",
        "duration": "2h",
    }
    if gpus:
        w["gpu_type"] = "h100"
    return w


def _clusters(
    parts: list[dict[str, Any]], pools: list[dict[str, Any]], sets: list[dict[str, Any]]
) -> dict[str, Any]:
    clusters = []
    if parts:
        c: dict[str, Any] = {"name": "hpc", "backend": "slurm", "partitions": parts}
        if sets:
            c["node_sets"] = sets
        clusters.append(c)
    if pools:
        clusters.append({"name": "k8s", "backend": "kubernetes", "node_pools": pools})
    return {"clusters": clusters}


def _platform(
    rng: random.Random,
    parts: list[dict[str, Any]],
    pools: list[dict[str, Any]],
    work: list[dict[str, Any]],
    sets: list[dict[str, Any]],
    extra: dict[str, Any],
    running: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    hpa = extra.get("hpa", HPA)
    for w in work:
        w.setdefault("team", rng.choice(["a", "b", "c"]))
        w.setdefault("priority", rng.choice(["low", "normal", "normal", "high"]))
        w |= {"image": "ghcr.io/acme/x:1", "command": "run"}
    if not pools:  # nothing but Slurm: services have nowhere; make them jobs
        for w in work:
            if w["kind"] == "inference":
                w["kind"] = "batch"
                w.pop("replicas", None)
                w["duration"] = "1h"
                w.get("labels", {}).pop("slice", None)
    meta: dict[str, Any] = {w["name"]: meta_of(w, hpa) for w in work}
    meta["_platform"] = {"quotas": extra.get("quotas", []), "spreads": extra.get("spreads", [])}
    return {
        "policy": policy(hpa, extra.get("quotas", []), extra.get("spreads", [])),
        "inventory": _clusters(parts, pools, sets),
        "workloads": work,
        "running": {"running": running} if running else None,
        "meta": meta,
    }


def write(data: dict[str, Any], folder: Path) -> None:
    """The platform as a project folder a user would keep in git."""
    folder.mkdir(parents=True, exist_ok=True)
    cfg = {
        "policy": "policy.route",
        "inventory": "inventory.yaml",
        "workloads": "workloads.yaml",
        "out": "out",
    }
    if data["running"]:
        cfg["running"] = "running.yaml"
        (folder / "running.yaml").write_text(yaml.safe_dump(data["running"], sort_keys=False))
    (folder / "router.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    (folder / "policy.route").write_text(data["policy"])
    (folder / "inventory.yaml").write_text(yaml.safe_dump(data["inventory"], sort_keys=False))
    (folder / "workloads.yaml").write_text(yaml.safe_dump(data["workloads"], sort_keys=False))
    (folder / "audit.json").write_text(json.dumps(data["meta"], indent=1, sort_keys=True) + "\n")


def _gpu_work(rng: random.Random, name: str, per: int, gpu_type: str) -> dict[str, Any]:
    gpus = rng.choice([1, 1, 2, 3, 4, per, per + 1, 2 * per])
    w: dict[str, Any] = {
        "name": name,
        "kind": "training",
        "gpus": gpus,
        "gpu_type": rng.choice([gpu_type, gpu_type, "any"]),
        "cpus": rng.choice([4, 8, 13, 24, 31]) * max(1, gpus // per),
        "memory": f"{rng.choice([16, 40, 100, 250]) * max(1, gpus // per)}GiB",
        "duration": "4h",
    }
    if gpus > per and rng.random() < 0.5:
        w["nodes"] = -(-gpus // per)
        w["gpus"] = w["nodes"] * (gpus // w["nodes"]) or w["nodes"]
    return w


def _service(
    rng: random.Random, name: str, gpus: list[int], cpus: list[int], mem: list[int]
) -> dict[str, Any]:
    low = rng.randint(1, 5)
    return {
        "name": name,
        "kind": "inference",
        "gpus": rng.choice(gpus),
        "cpus": rng.choice(cpus),
        "memory": f"{rng.choice(mem)}GiB",
        "replicas": {"min": low, "max": low + rng.randint(0, 6)},
        "labels": {"app": rng.choice(["chat", "embed", "rank", "asr"])},
    }


def _cpu_work(rng: random.Random, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "batch",
        "gpus": 0,
        "cpus": rng.choice([1, 3, 8, 17, 30, 45]),
        "memory": f"{rng.choice([2, 8, 33, 70, 150])}GiB",
        "duration": "1h",
    }
