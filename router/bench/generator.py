"""Seeded synthetic platforms for `router bench`: a policy, an inventory and workloads.

A platform is made of regions. Each region has Slurm clusters (H100 and A100 partitions on
InfiniBand, small A100 and L40S nodes, CPU partitions short and long) and Kubernetes clusters
(L4, A10G and A100 serving pools, CPU pools), and its own teams' workloads, drawn from a
catalogue of job templates (as users resubmit the same job with new names): whole-node
exclusive training, single-node training, inference services with replicas, CPU batch and
notebooks, at low, normal, high and critical priority. Workloads run in their own region
(data locality), and each team has a GPU quota per region. Node counts are then set so
demand is about 95% of capacity overall, each family of nodes a little under- or overloaded.

So that the figures measure the whole model, the platforms also have: inference services
whose replicas the rule's hpa(max = 16) clamps, spread over a region's clusters by app
(`spread`); small services on MIG slices (an `a100-mig` pool: 4 of 8 A100s per node cut into
7 x 1g.10gb, the rest whole, routed with `mig = "1g.10gb"`); and a `per cluster` CPU quota
next to the per-team GPU quotas. The same size and seed give the same platform.

The `wide` platform is the L policy and inventory with 50,000 small CPU batch jobs instead of
L's workloads (far more than the CPU nodes hold): it measures loading, evaluating and the
reasons of many unplaced workloads rather than the solver.

The `adversarial` mix is built to trap first-fit-decreasing: big jobs that may use either GPU
type prefer the cheaper H100 nodes and fill them, leaving no room for the jobs pinned to H100.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

MiB_PER_GiB = 1024


@dataclass(frozen=True)
class Size:
    workloads: int
    regions: int
    targets_per_region: int


SIZES: dict[str, Size] = {
    "S": Size(100, 1, 10),
    "M": Size(1_000, 2, 25),
    "L": Size(10_000, 4, 50),
    "XL": Size(100_000, 20, 50),
    "adversarial": Size(2_000, 1, 20),
}

# (name, backend, gpus/node, gpu type, cpus/node, memory GiB/node, max time h, features,
#  cost per GPU hour, family)
PartSpec = tuple[str, int, str | None, int, int, int | None, list[str], float]
SLURM_PARTS: list[PartSpec] = [
    ("h100", 8, "h100", 96, 2048, 72, ["ib", "lustre"], 2.5),
    ("a100", 8, "a100", 128, 1024, 48, ["ib", "lustre"], 1.6),
    ("a100-small", 4, "a100", 64, 512, 24, ["ib"], 1.4),
    ("l40s", 4, "l40s", 64, 512, 24, [], 1.0),
    ("cpu", 0, None, 128, 512, 24, ["avx512"], 0.0),
    ("cpu-long", 0, None, 64, 256, 168, [], 0.0),
]
K8S_POOLS: list[PartSpec] = [
    ("l4", 4, "l4", 48, 192, None, [], 0.8),
    ("a10g", 4, "a10g", 48, 192, None, [], 0.9),
    ("a100-serving", 8, "a100", 96, 1024, None, [], 1.8),
    ("cpu-general", 0, None, 32, 128, None, [], 0.0),
    ("a100-mig", 8, "a100", 96, 1024, None, [], 1.5),
]
# How MIG pools cut their GPUs (per node), and the slices that gives.
MIG_LAYOUT = {"a100-mig": [{"gpus": 4, "slices": {"1g.10gb": 7}}]}
MIG_SLICES = {"a100-mig": 28}
TEAMS = ["llm", "vision", "speech", "research", "data"]
PRIORITIES = [("low", 0.2), ("normal", 0.5), ("high", 0.25), ("critical", 0.05)]

POLICY = """\
policy bench

let big_job = 8

deny notebook_gpus:
  when kind == "notebook" and gpus > 1
  because "notebooks may use at most one GPU"

rule large_training:
  when kind == "training" and gpus >= big_job
  route slurm with exclusive
    where labels.region == workload.labels.region and gpu_type in ["h100", "a100"]
      and "ib" in features
    prefer lower cost

rule small_training:
  when kind == "training"
  route slurm
    where labels.region == workload.labels.region and gpus_per_node >= workload.gpus
      and max_time >= workload.duration
    prefer lower cost
  else route kubernetes where labels.region == workload.labels.region and gpus_per_node > 0

rule small_inference:
  when kind == "inference" and labels.size == "mig"
  route kubernetes with mig = "1g.10gb", hpa(max = 16)
    where labels.region == workload.labels.region and "1g.10gb" in mig

rule inference:
  when kind == "inference"
  route kubernetes with hpa(max = 16)
    where labels.region == workload.labels.region and gpus_per_node > 0
    prefer gpu_type == workload.gpu_type, lower cost

rule notebooks:
  when kind == "notebook"
  route kubernetes where labels.region == workload.labels.region

rule batch:
  route any where labels.region == workload.labels.region and gpus_per_node == 0
    prefer lower cost

spread app_replicas:
  for kind == "inference"
  by labels.app
  across cluster

quota cluster_cpus:
  per cluster
  limit cpus <= 98%
"""


@dataclass
class Platform:
    size: str
    seed: int
    policy: str
    inventory: dict[str, Any]
    workloads: list[dict[str, Any]]


def _template(rng: random.Random, team: str, adversarial: bool) -> dict[str, Any]:
    """One job configuration as a team submits it again and again."""
    base: dict[str, Any] = {
        "team": team,
        "image": f"registry.example.com/{team}/{rng.choice(['train', 'serve', 'etl'])}:1.0",
        "command": "python main.py",
    }
    if adversarial:
        kind = rng.choice(["flex", "pinned", "batch"])
        if kind == "flex":  # big, either GPU type; greedy puts it on the cheap H100s first
            return base | {
                "kind": "training",
                "gpus": 16,
                "gpu_type": "any",
                "cpus": 64,
                "memory": 256 * MiB_PER_GiB,
                "duration": "24h",
            }
        if kind == "pinned":  # needs H100
            return base | {
                "kind": "training",
                "gpus": 8,
                "gpu_type": "h100",
                "cpus": 32,
                "memory": 128 * MiB_PER_GiB,
                "duration": "24h",
            }
    else:
        kind = rng.choices(
            ["large", "small", "inference", "batch", "notebook"], [0.15, 0.25, 0.25, 0.3, 0.05]
        )[0]
        if kind == "large":
            gpus = rng.choice([8, 16, 32, 64])
            return base | {
                "kind": "training",
                "gpus": gpus,
                "gpu_type": rng.choice(["h100", "a100", "any", "any"]),
                "cpus": 12 * gpus,
                "memory": 128 * gpus * MiB_PER_GiB,
                "duration": f"{rng.choice([12, 24, 48])}h",
            }
        if kind == "small":
            gpus = rng.choice([1, 2, 4])
            return base | {
                "kind": "training",
                "gpus": gpus,
                "gpu_type": rng.choice(["any", "a100", "l40s"]),
                "cpus": 8 * gpus,
                "memory": 48 * gpus * MiB_PER_GiB,
                "duration": f"{rng.choice([2, 8, 20])}h",
            }
        if kind == "inference":
            low = rng.choice([1, 2, 3])
            app = f"{team}-{rng.choice(['chat', 'embed', 'rank', 'vision'])}"
            out = base | {
                "kind": "inference",
                "gpus": 1,
                "gpu_type": rng.choice(["l4", "a10g", "a100", "any"]),
                "cpus": rng.choice([4, 8]),
                "memory": rng.choice([16, 32]) * 1024,
                "replicas": {"min": low, "max": low * rng.choice([4, 8])},
                "labels": {"app": app},
            }
            if rng.random() < 0.3:  # a small model on one MIG slice per replica
                out |= {
                    "gpu_type": "a100",
                    "cpus": 2,
                    "memory": 8 * 1024,
                    "labels": {"app": app, "size": "mig"},
                }
            return out
        if kind == "notebook":
            return base | {
                "kind": "notebook",
                "gpus": rng.choice([0, 1]),
                "gpu_type": "any",
                "cpus": 4,
                "memory": 16 * MiB_PER_GiB,
            }
    return base | {
        "kind": "batch",
        "gpus": 0,
        "cpus": rng.choice([2, 4, 8, 16, 32]),
        "memory": rng.choice([8, 16, 32, 64]) * MiB_PER_GiB,
        "duration": f"{rng.choice([1, 4, 12, 36])}h",
    }


def _family(w: dict[str, Any]) -> str:
    """The node family a workload mostly draws on, to size the inventory to the demand."""
    gpu = w.get("gpu_type", "any")
    if w["kind"] == "training" and w["gpus"] >= 8:
        return "h100" if gpu == "h100" else "a100" if gpu == "a100" else "big-any"
    if w["kind"] == "training":
        return {"l40s": "l40s"}.get(gpu, "a100-small")
    if w["kind"] == "inference":
        if w.get("labels", {}).get("size") == "mig":
            return "a100-mig"
        return {"l4": "l4", "a10g": "a10g", "a100": "a100-serving"}.get(gpu, "l4")
    if w["kind"] == "notebook":
        return "a10g" if w["gpus"] else "cpu-general"
    return "cpu-long" if w.get("duration") == "36h" else "cpu"


def _demand(w: dict[str, Any]) -> float:
    """GPUs (or CPUs for CPU families) the workload asks, services at min replicas."""
    n = w["replicas"]["min"] if "replicas" in w else 1
    return float((w["gpus"] or w["cpus"]) * n)


WIDE_WORKLOADS = 50_000


def generate(size: str, seed: int = 0) -> Platform:
    if size == "wide":
        return _wide(seed)
    spec = SIZES[size]
    adversarial = size == "adversarial"
    rng = random.Random(f"{size}:{seed}")
    workloads: list[dict[str, Any]] = []
    clusters: list[dict[str, Any]] = []
    per_region = spec.workloads // spec.regions
    quotas: list[str] = []
    for r in range(spec.regions):
        region = f"r{r}"
        catalogue = [_template(rng, rng.choice(TEAMS), adversarial) for _ in range(60)]
        weights = [1.0 / (k + 1) for k in range(len(catalogue))]  # a few configs dominate
        mine: list[dict[str, Any]] = []
        count = per_region + (spec.workloads - per_region * spec.regions if r == 0 else 0)
        for _ in range(count):
            t = rng.choices(catalogue, weights)[0]
            prio = rng.choices([p for p, _ in PRIORITIES], [w for _, w in PRIORITIES])[0]
            mine.append(
                t
                | {
                    "name": f"w{len(workloads) + len(mine):06d}-{t['kind']}",
                    "labels": t.get("labels", {}) | {"region": region},
                    "priority": prio,
                }
            )
        workloads.extend(mine)
        clusters.extend(_region_clusters(rng, region, spec.targets_per_region, mine, adversarial))
        if not adversarial:
            quotas.extend(_region_quotas(rng, region, mine))
    policy = POLICY + "".join(quotas)
    return Platform(size, seed, policy, {"clusters": clusters}, workloads)


def _region_clusters(
    rng: random.Random, region: str, count: int, workloads: list[dict[str, Any]], adversarial: bool
) -> list[dict[str, Any]]:
    """`count` targets across alternating Slurm and Kubernetes clusters, sized to demand."""
    demand: dict[str, float] = {}
    for w in workloads:
        demand[_family(w)] = demand.get(_family(w), 0.0) + _demand(w)
    # Big jobs for either GPU type draw on both IB families; in the adversarial mix the A100s
    # are sized for them alone and the H100s for the pinned jobs alone (only the optimum
    # fits both).
    either = demand.pop("big-any", 0.0)
    half = 0.0 if adversarial else either / 2
    demand["h100"] = demand.get("h100", 0.0) + half
    demand["a100"] = demand.get("a100", 0.0) + either - half
    targets: list[tuple[int, tuple[Any, ...], str]] = []  # (cluster no, spec, backend)
    c = 0
    while len(targets) < count:
        catalogue = SLURM_PARTS if c % 2 == 0 else K8S_POOLS
        backend = "slurm" if c % 2 == 0 else "kubernetes"
        for part in catalogue:
            if len(targets) < count:
                targets.append((c, part, backend))
        c += 1
    share: dict[str, float] = {}
    weight = [rng.uniform(0.5, 1.5) for _ in targets]
    for (_, part, _), wt in zip(targets, weight, strict=True):
        share[part[0]] = share.get(part[0], 0.0) + wt
    load = {fam: 0.95 * rng.uniform(0.92, 1.1) for fam in demand}
    out: dict[int, dict[str, Any]] = {}
    for (cn, part, backend), wt in zip(targets, weight, strict=True):
        name, gpn, gtype, cpn, mem, max_h, features, cost = part
        per_node = MIG_SLICES.get(name) or gpn or cpn
        need = demand.get(name, 0.0) * wt / share[name] / load.get(name, 0.95)
        nodes = max(1, round(need / per_node))
        if adversarial and gtype:
            cost = {"h100": 1.2, "a100": 1.6}.get(gtype, cost)  # H100 the cheaper: the trap
        target: dict[str, Any] = {
            "name": name,
            "nodes": nodes,
            "cpus_per_node": cpn,
            "memory_per_node": mem * MiB_PER_GiB,
            "labels": {"region": region},
            "features": features,
        }
        if gpn:
            target |= {"gpus_per_node": gpn, "gpu_type": gtype, "cost_per_gpu_hour": cost}
        if name in MIG_LAYOUT:
            target["mig"] = MIG_LAYOUT[name]
        if max_h:
            target["max_time"] = f"{max_h}h"
        cluster = out.setdefault(
            cn,
            {
                "name": f"{'hpc' if backend == 'slurm' else 'k8s'}-{region}-{cn}",
                "backend": backend,
                "partitions" if backend == "slurm" else "node_pools": [],
            },
        )
        cluster["partitions" if backend == "slurm" else "node_pools"].append(target)
    return [out[k] for k in sorted(out)]


def _region_quotas(rng: random.Random, region: str, workloads: list[dict[str, Any]]) -> list[str]:
    """A GPU quota per team in the region, binding for some teams."""
    gpus: dict[str, float] = {}
    for w in workloads:
        gpus[w["team"]] = gpus.get(w["team"], 0.0) + (_demand(w) if w["gpus"] else 0.0)
    out = []
    for team in sorted(gpus):
        if not gpus[team]:
            continue
        limit = int(gpus[team] * rng.uniform(0.85, 1.2))
        out.append(
            f"\nquota {team}_{region}_gpus:\n"
            f'  for team == "{team}" and labels.region == "{region}"\n'
            f'  on labels.region == "{region}"\n'
            f"  limit gpus <= {limit}\n"
        )
    return out


def _wide(seed: int) -> Platform:
    """The L platform's policy and inventory, with 50,000 small CPU batch jobs."""
    base = generate("L", seed)
    rng = random.Random(f"wide:{seed}")
    regions = SIZES["L"].regions
    workloads = [
        {
            "name": f"b{i:06d}",
            "kind": "batch",
            "team": rng.choice(TEAMS),
            "image": "registry.example.com/data/etl:1.0",
            "command": "python main.py",
            "gpus": 0,
            "cpus": rng.choice([1, 2, 4]),
            "memory": rng.choice([2, 4, 8]) * MiB_PER_GiB,
            "duration": f"{rng.choice([1, 4])}h",
            "labels": {"region": f"r{i % regions}"},
            "priority": rng.choices([p for p, _ in PRIORITIES], [w for _, w in PRIORITIES])[0],
        }
        for i in range(WIDE_WORKLOADS)
    ]
    return Platform("wide", seed, base.policy, base.inventory, workloads)
