"""Platforms nobody tuned for: small random platforms, planned, then judged by the referees.

A platform is drawn through a `Draw` (Hypothesis in the tests, a seeded random.Random in the
long run) from awkward pieces: 3-GPU jobs on 8-GPU nodes, 30-CPU pods on 48-CPU nodes, memory
that fills a node to within a few GiB, MIG pools (mixed: some GPUs whole, some cut; single:
all cut; Slurm partitions with MIG GRES), node sets shared by several partitions, running
work, services with replicas, multi-node and exclusive jobs, quotas (`for`, `per`,
percentages) and spreads. Each is planned through router.plan and then judged:

  * router/plan/packcheck.py `check_plan`: every target's planned work packs (0 unpackable);
  * `check_assignment`: the plan's own node assignment is valid node by node (0 errors);
  * router/plan/admits.py `referee`: nothing is unplaced that the plan could still take.

The long run, for hours of platforms the tests do not reach:

    python -m tests.pack.unseen --minutes 20 [--seed 0] [--workloads 16] [--out /tmp/unseen]

and over the audit's families (tests/pack/audit.py: awkward sizes, MIG, shared node sets,
running work, services; medium is 20-150 nodes per component and 200-3,000 workloads), each
platform a project folder judged by the referees and by the audit's own checker:

    python -m tests.pack.unseen --family all --size medium --minutes 60 [--out /tmp/unseen]

prints one line per finding (seed and what was wrong), writes each one's platform, made
smaller by removing workloads and running items while the finding stays, as YAML under
--out, and ends with the counts.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import yaml

import router
from router.errors import RouterError
from router.models.placement import Placement
from router.plan.admits import referee
from router.plan.packcheck import check_assignment, check_plan

T = TypeVar("T")
GiB = 1024


class Draw(Protocol):
    def pick(self, options: Sequence[T]) -> T: ...
    def number(self, low: int, high: int) -> int: ...


class Seeded:
    """A Draw from a seeded random.Random: the long run's."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(f"unseen:{seed}")

    def pick(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def number(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)


# (gpus, cpus, memory GiB) per node: the awkward ratios are the point.
GPU_NODES = [(8, 48, 384), (8, 96, 1024), (4, 96, 192), (4, 32, 128), (8, 64, 512), (2, 24, 96)]
CPU_NODES = [(0, 48, 192), (0, 32, 128), (0, 64, 256), (0, 96, 384)]
PROFILES = {"1g.10gb": 7, "3g.40gb": 2}


def _mig(draw: Draw, gpus: int, k8s: bool) -> dict[str, Any]:
    """How the node's GPUs are cut (or {} for none)."""
    if not gpus or draw.number(0, 1):
        return {}
    if k8s and draw.number(0, 2) == 0:
        return {"mig": [{"gpus": gpus, "slices": {"1g.10gb": 7}}], "mig_strategy": "single"}
    cut = draw.number(1, gpus)
    if draw.number(0, 1):
        return {"mig": [{"gpus": cut, "slices": {"1g.10gb": 7}}]}
    first = draw.number(1, cut)
    groups = [{"gpus": first, "slices": {"1g.10gb": 7}}]
    if cut > first:
        groups.append({"gpus": cut - first, "slices": {"3g.40gb": 2}})
    return {"mig": groups}


def _nodes(draw: Draw, gpu: bool, k8s: bool) -> dict[str, Any]:
    g, c, m = draw.pick(GPU_NODES if gpu else CPU_NODES)
    out: dict[str, Any] = {
        "nodes": draw.number(1, 4),
        "cpus_per_node": c,
        "memory_per_node": f"{m}GiB",
    }
    if g:
        out |= {"gpus_per_node": g, "gpu_type": draw.pick(["h100", "h100", "a100"])}
        out |= _mig(draw, g, k8s)
    if k8s and draw.number(0, 3) == 0:
        out["max_nodes"] = out["nodes"] + draw.number(1, 2)
    return out


def inventory(draw: Draw) -> dict[str, Any]:
    """A Slurm cluster (node sets shared by partitions, inline partitions) and a Kubernetes
    cluster (GPU and CPU pools)."""
    # The first of each kind has GPUs, so that GPU work has somewhere to go.
    sets = [
        {"name": f"ns{k}", **_nodes(draw, k == 0 or draw.number(0, 1) > 0, False)} for k in range(2)
    ]
    sets = sets[: draw.number(0, 2)]
    parts: list[dict[str, Any]] = []
    for s in sets:  # each set in one to three partitions
        for _ in range(draw.number(1, 3)):
            parts.append({"name": f"p{len(parts)}", "node_sets": [s["name"]]})
    for _ in range(draw.number(0 if parts else 1, 2)):
        parts.append(
            {"name": f"p{len(parts)}", **_nodes(draw, not parts or draw.number(0, 1) > 0, False)}
        )
    for p in parts:
        if draw.number(0, 3) == 0:
            p["max_time"] = "4h"
        p["cost_per_gpu_hour"] = draw.number(0, 3)
    pools = [
        {"name": f"k{k}", **_nodes(draw, k == 0 or draw.number(0, 1) > 0, True)}
        for k in range(draw.number(1, 3))
    ]
    slurm: dict[str, Any] = {"name": "hpc", "backend": "slurm", "partitions": parts}
    if sets:
        slurm["node_sets"] = sets
    return {"clusters": [slurm, {"name": "k8s", "backend": "kubernetes", "node_pools": pools}]}


def _job(draw: Draw, name: str) -> dict[str, Any]:
    gpus = draw.pick([0, 0, 1, 2, 3, 3, 5, 6, 8, 12, 16])
    out: dict[str, Any] = {
        "name": name,
        "kind": "training" if gpus and draw.number(0, 2) else "batch",
        "gpus": gpus,
        "cpus": draw.pick([1, 7, 16, 30, 33, 47, 60, 95]),
        "memory": f"{draw.pick([5, 16, 60, 100, 120, 190, 250])}GiB",
        "duration": draw.pick(["1h", "3h", "8h"]),
    }
    if gpus and draw.number(0, 3) == 0:
        out["nodes"] = draw.pick([1, 2])
        if gpus % out["nodes"]:
            out["nodes"] = 1
    if draw.number(0, 5) == 0 and not gpus:
        out["array"] = {"count": draw.number(2, 6), "parallel": draw.number(1, 3)}
    return out


def _service(draw: Draw, name: str) -> dict[str, Any]:
    low = draw.number(1, 4)
    out: dict[str, Any] = {
        "name": name,
        "kind": "inference",
        "gpus": draw.pick([0, 1, 1, 2, 3]),
        "cpus": draw.pick([2, 7, 12, 30, 33]),
        "memory": f"{draw.pick([4, 16, 40, 100])}GiB",
        "replicas": {"min": low, "max": low + draw.number(0, 3)},
        "labels": {"app": draw.pick(["chat", "embed", "rank"])},
    }
    if out["gpus"] and draw.number(0, 2) == 0:
        out["labels"]["size"] = "mig"
        out["gpus"] = draw.pick([1, 1, 2])
    return out


def workloads(draw: Draw, most: int = 16) -> list[dict[str, Any]]:
    out = []
    for k in range(draw.number(1, most)):
        w = _service(draw, f"s{k}") if draw.number(0, 2) == 0 else _job(draw, f"j{k}")
        w |= {
            "team": draw.pick(["a", "b", "c"]),
            "priority": draw.pick(["low", "normal", "high"]),
            "image": "ghcr.io/acme/x:1",
            "command": "run",
        }
        if w["gpus"]:
            w["gpu_type"] = draw.pick(["any", "any", "any", "h100", "a100"])
        out.append(w)
    return out


def running(draw: Draw, inv: dict[str, Any]) -> dict[str, Any] | None:
    """Work already on some nodes (never more than a node has; never on headroom nodes)."""
    if draw.number(0, 2) == 0:
        return None
    slurm, k8s = inv["clusters"]
    nodes = [("hpc", s) for s in slurm.get("node_sets", [])]
    nodes += [("hpc", p) for p in slurm["partitions"] if "node_sets" not in p]
    nodes += [("k8s", p) for p in k8s["node_pools"]]
    items: list[dict[str, Any]] = []
    for _ in range(draw.number(1, 4)):
        cluster, spec = draw.pick(nodes)
        index = draw.number(0, spec["nodes"] - 1)
        item: dict[str, Any] = {"cluster": cluster, "node_set": spec["name"], "node": index}
        if draw.number(0, 4) == 0:
            item["whole"] = True
        else:
            whole_gpus = spec.get("gpus_per_node", 0) - sum(g["gpus"] for g in spec.get("mig", []))
            cpus, mem = spec["cpus_per_node"], int(spec["memory_per_node"].removesuffix("GiB"))
            # a quarter of the node at most, so several items on one node still fit
            item |= {
                "gpus": draw.number(0, whole_gpus // 4),
                "cpus": draw.number(1, cpus // 4),
                "memory": f"{draw.number(1, mem // 4)}GiB",
            }
            slices: dict[str, int] = {}
            for g in spec.get("mig", []):
                for p, n in g["slices"].items():
                    slices[p] = slices.get(p, 0) + g["gpus"] * n
            if slices and draw.number(0, 1):
                p = draw.pick(sorted(slices))
                item["mig"] = {p: draw.number(1, slices[p] // 4 or 1)}
        item["job"] = f"r{len(items)}"
        items.append(item)
    return {"running": items}


def policy(draw: Draw) -> str:
    hpa = draw.pick(["", " with hpa(max = 3)", " with hpa(min = 2)"])
    lines = [
        "policy unseen",
        "",
        "rule sliced:",
        '  when kind == "inference" and labels.size == "mig"',
        f'  route kubernetes with mig = "{draw.pick(["1g.10gb", "1g.10gb", "3g.40gb"])}"',
        "",
        "rule serving:",
        '  when kind == "inference"',
        f"  route kubernetes{hpa}",
        "",
        "rule wide:",
        '  when kind == "training" and gpus >= 8',
        "  route slurm with exclusive",
        "  else route kubernetes",
        "",
        "rule train:",
        '  when kind == "training"',
        "  route slurm" + draw.pick(["", " prefer lower cost"]),
        "  else route kubernetes",
        "",
        "rule rest:",
        "  route any" + draw.pick(["", " prefer lower cost"]),
        "",
    ]
    if draw.number(0, 1):
        lines += ["quota team_a:", '  for team == "a"', f"  limit gpus <= {draw.number(1, 12)}", ""]
    if draw.number(0, 2) == 0:
        res = draw.pick(["cpus", "memory", "gpus"])
        lines += ["quota per_team:", "  per team", f"  limit {res} <= {draw.number(20, 90)}%", ""]
    if draw.number(0, 2) == 0:
        lines += ["quota nodes_each:", "  per target", f"  limit nodes <= {draw.number(1, 3)}", ""]
    if draw.number(0, 1):
        across = draw.pick(["cluster", "target"])
        most = draw.pick(["", "  max 1", "  max 2"])
        lines += ["spread apps:", '  for kind == "inference"', "  by labels.app"]
        lines += [f"  across {across}", *([most] if most else []), ""]
    return "\n".join(lines)


def platform(draw: Draw, most: int = 16) -> dict[str, Any]:
    """A platform of at most `most` workloads."""
    inv = inventory(draw)
    return {
        "policy": policy(draw),
        "inventory": inv,
        "workloads": workloads(draw, most),
        "running": running(draw, inv),
    }


# --- judging ---------------------------------------------------------------------------------


@dataclass
class Judged:
    targets: int = 0  # targets with planned work, checked
    placed: int = 0
    unplaced: int = 0  # unplaced for capacity, tried by the referee
    pairs: int = 0
    findings: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    kept: Counter[str] = field(default_factory=Counter)  # the referee's pairs kept out, by why
    built: Any = None  # the plan judged (router.plan.build.Plan), None if planning failed


def units(p: Placement) -> list[list[tuple[str, int]]]:
    """A placement's recorded nodes as the checker's units: a pod each, or a job's nodes."""
    per = p.resources.nodes if p.resources.whole_nodes else 1
    return [p.nodes[k : k + per] for k in range(0, len(p.nodes), max(1, per))]


def platform_of(data: dict[str, Any]) -> router.Platform:
    """A generated platform's data as a router.Platform."""
    return router.Platform.from_objects(
        policy=data["policy"],
        inventory=data["inventory"],
        workloads=data["workloads"],
        running=data["running"],
    )


def judge(data: dict[str, Any]) -> Judged:
    """Plan the platform and run the three referees on the plan."""
    out = Judged()
    try:
        plan = router.plan(platform_of(data), workers=1)
    except RouterError as e:
        out.findings.append(f"router plan: {e}")
        return out
    return referees(out, plan.built)


def referees(out: Judged, built: Any) -> Judged:
    """The three referees on a plan (router.plan.build.Plan), into `out`."""
    out.built = built
    i = built.inputs
    out.placed = len(built.placements)
    given = {p.workload.name: units(p) for p in built.placements}
    wrong = check_assignment(i.inventory, i.running, built.placements, given)
    out.findings += [f"assignment: {e}" for e in wrong]
    for c in check_plan(i.inventory, i.running, built.placements):
        out.targets += len(c.component.targets)
        if c.verdict.packs is False:
            out.findings.append(f"unpackable {c.component.problem.id}: {c.verdict.reason}")
        elif c.verdict.packs is None and wrong:
            # Undecided by search only matters without a witness: a valid recorded
            # assignment (check_assignment) is one, node by node.
            out.undecided.append(f"undecided {c.component.problem.id}: {c.verdict.reason}")
    judged = referee(i.policy, i.inventory, i.workloads, built.placements, i.running)
    out.unplaced, out.pairs, out.kept = len(judged.checked), judged.pairs, judged.kept
    out.findings += [f"falsely unplaced: {a}" for a in judged.admitted]
    out.undecided += [f"referee undecided: {w} on {t}" for w, t in judged.undecided]
    return out


def judge_audited(family: str, size: str, seed: int, folder: Path) -> Judged:
    """A platform of the audit's families (tests/pack/audit.py) as a project folder, planned
    once (router.load, as `router plan` reads a folder), judged by the three referees and by
    the audit's own checker (tests/pack/audit_check.py, no router code): the two must agree."""
    from tests.pack import audit
    from tests.pack.audit_check import judge as audit_judge
    from tests.pack.audit_parts import write

    out = Judged()
    write(audit.build(family, size, seed), folder)
    try:
        plan = router.plan(router.load(folder), workers=1)
    except RouterError as e:
        out.findings.append(f"router plan: {e}")
        return out
    plan.write(folder / "out")
    referees(out, plan.built)
    mine = audit_judge(folder)
    out.findings += [f"audit: {f}" for f in mine.findings]
    out.undecided += [f"audit undecided: {u}" for u in mine.undecided]
    return out


def smaller(data: dict[str, Any], still: Any) -> dict[str, Any]:
    """`data` with workloads and running items removed one at a time while `still(data)`."""
    for key, inner in (("workloads", None), ("running", "running")):
        k = 0
        while True:
            items = data[key] if inner is None else (data[key] or {}).get(inner, [])
            if k >= len(items):
                break
            fewer = [x for j, x in enumerate(items) if j != k]
            trial = dict(data)
            trial[key] = fewer if inner is None else ({inner: fewer} if fewer else None)
            if still(trial):
                data = trial
            else:
                k += 1
    return data


class _Literal(str):
    pass


yaml.SafeDumper.add_representer(
    _Literal, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style="|")
)


def reproducer(seed: int, findings: list[str], data: dict[str, Any]) -> str:
    """The platform as YAML, its policy as a block of text, what was wrong on top."""
    doc = {"seed": seed, "findings": findings, **data, "policy": _Literal(data["policy"])}
    return yaml.safe_dump(doc, sort_keys=False, width=100)


def main(argv: list[str] | None = None) -> int:
    from tests.pack.audit import ALL  # audit reads this module's units(): imported late

    ap = argparse.ArgumentParser(prog="python -m tests.pack.unseen")
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0, help="the first platform's seed")
    ap.add_argument("--out", type=Path, default=Path("/tmp/unseen"))
    ap.add_argument("--workloads", type=int, default=16, help="at most this many per platform")
    ap.add_argument(
        "--family",
        choices=(*ALL, "all"),
        help="the audit's families (tests/pack/audit.py) instead: project folders under --out,"
        " judged by the referees and the audit's own checker",
    )
    ap.add_argument("--size", choices=("small", "medium", "ci"), default="medium")
    args = ap.parse_args(argv)
    if args.family:
        return _audited(args)
    end = time.monotonic() + 60 * args.minutes
    total = Judged()
    seed = args.seed
    platforms = bad = 0
    while time.monotonic() < end:
        data = platform(Seeded(seed), args.workloads)
        try:
            got = judge(data)
        except Exception as e:  # a traceback is a finding too
            got = Judged(findings=[f"crash: {type(e).__name__}: {e}"])
        platforms += 1
        total.targets += got.targets
        total.placed += got.placed
        total.unplaced += got.unplaced
        total.pairs += got.pairs
        total.undecided += [f"seed {seed}: {u}" for u in got.undecided]
        if got.findings:
            bad += 1
            kinds = {f.split(":")[0] for f in got.findings}

            def still(d: dict[str, Any], kinds: set[str] = kinds) -> bool:
                try:
                    return bool(kinds & {f.split(":")[0] for f in judge(d).findings})
                except Exception:
                    return "crash" in kinds

            small = smaller(data, still)
            args.out.mkdir(parents=True, exist_ok=True)
            path = args.out / f"seed-{seed}.yaml"
            path.write_text(reproducer(seed, got.findings, small))
            total.findings += [f"seed {seed}: {f}" for f in got.findings]
            print(f"seed {seed}: {'; '.join(got.findings)} -> {path}", flush=True)
        seed += 1
    print(
        f"platforms {platforms} (seeds {args.seed}..{seed - 1}), with findings {bad};"
        f" targets checked {total.targets}, placed {total.placed}, unplaced for capacity"
        f" {total.unplaced} ({total.pairs} candidate pairs), findings {len(total.findings)},"
        f" undecided {len(total.undecided)}"
    )
    for u in total.undecided[:20]:
        print(" ", u)
    return 1 if total.findings else 0


def _audited(args: argparse.Namespace) -> int:
    """The long run over the audit's families: seeds from --seed for --minutes."""
    from tests.pack.audit import ALL

    families = ALL if args.family == "all" else (args.family,)
    end = time.monotonic() + 60 * args.minutes
    total = Judged()
    seed, platforms = args.seed, 0
    while time.monotonic() < end:
        for family in families:
            folder = args.out / f"{family}-{args.size}-{seed}"
            got = judge_audited(family, args.size, seed, folder)
            platforms += 1
            total.targets += got.targets
            total.placed += got.placed
            total.unplaced += got.unplaced
            total.findings += [f"{family} seed {seed}: {f}" for f in got.findings]
            total.undecided += [f"{family} seed {seed}: {u}" for u in got.undecided]
            for f in got.findings:
                print(f"{family} {args.size} seed {seed}: {f} -> {folder}", flush=True)
        seed += 1
    print(
        f"platforms {platforms} ({', '.join(families)}, {args.size},"
        f" seeds {args.seed}..{seed - 1});"
        f" targets checked {total.targets}, placed {total.placed}, unplaced {total.unplaced},"
        f" findings {len(total.findings)}, undecided {len(total.undecided)}"
    )
    return 1 if total.findings else 0


if __name__ == "__main__":
    sys.exit(main())
