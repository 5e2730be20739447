"""The audit's own packing checker, written from scratch: it shares no code with router.

It reads a project folder as a user wrote it (router.yaml, inventory YAML, running YAML,
workloads YAML), the `out/` that `router plan` wrote (plan.json, manifests, scripts) and a
sidecar `audit.json` saying what the audit's policy means for each workload (which backends
its rule routes to, its MIG profile, exclusive, the hpa bounds) and judges:

  * the plan's node assignment (placements[].nodes), node by node: GPUs, MIG slices, CPUs,
    memory, whole nodes alone and only on nodes where nothing runs, a job's tasks on
    distinct nodes, every node in the target's node sets;
  * the numbers: what each placement asks per node and how many units, against the
    workload and the rule (replicas clamped by hpa), and the manifests' HPA bounds;
  * falsely unplaced: an unplaced workload that fits on top of the plan as assigned
    (a witness: its units on free room of a candidate target), or, for small components,
    after the plan's work is re-packed within its own targets (an exact CP-SAT model).

Units of the audit's YAML are plain: memory "NGiB"/"NMiB" or a number of MiB.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Vec = tuple[int, int, int]  # whole GPUs, CPUs, MiB


def mib(v: Any) -> int:
    if isinstance(v, int):
        return v
    s = str(v)
    for unit, f in (("TiB", 1 << 20), ("GiB", 1024), ("MiB", 1)):
        if s.endswith(unit):
            return int(float(s[: -len(unit)]) * f)
    return int(s)


def seconds(v: Any) -> int:
    if isinstance(v, int):
        return v
    for unit, f in (("min", 60), ("s", 1), ("h", 3600), ("d", 86400)):
        if str(v).endswith(unit):
            return int(float(str(v)[: -len(unit)]) * f)
    return int(v)


@dataclass
class Node:
    key: tuple[str, int]  # node set id, index
    cap: tuple[int, int, int, tuple[tuple[str, int], ...]]  # as built: gpus, cpus, MiB, slices
    gpus: int  # free, after what runs
    cpus: int
    mem: int
    slices: dict[str, int]
    busy: bool = False  # something runs here
    blocked: bool = False  # a whole-node job runs here

    def take(self, u: Unit) -> bool:
        """Put u here if it fits (whole: only on an idle node, and then nothing else)."""
        if self.blocked or (u.whole and self.busy):
            return False
        if u.gpus > self.gpus or u.cpus > self.cpus or u.mem > self.mem:
            return False
        if any(k > self.slices.get(p, 0) for p, k in u.slices.items()):
            return False
        self.gpus, self.cpus, self.mem = self.gpus - u.gpus, self.cpus - u.cpus, self.mem - u.mem
        for p, k in u.slices.items():
            self.slices[p] -= k
        self.busy = True
        self.blocked = self.blocked or u.whole
        return True

    def copy(self) -> Node:
        return Node(
            self.key,
            self.cap,
            self.gpus,
            self.cpus,
            self.mem,
            dict(self.slices),
            self.busy,
            self.blocked,
        )


@dataclass
class Unit:
    workload: str
    target: str
    gpus: int
    cpus: int
    mem: int
    slices: dict[str, int]
    whole: bool
    group: str = ""  # a job's tasks (one array task's nodes): distinct nodes

    def shape(self) -> tuple[Any, ...]:
        return (self.gpus, self.cpus, self.mem, tuple(sorted(self.slices.items())), self.whole)


@dataclass
class Target:
    id: str
    backend: str
    sets: list[str]
    gpu_type: str | None
    oversubscribe: str | None
    mig_profiles: set[str]
    max_time: int | None = None


@dataclass
class Verdict:
    findings: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    targets: int = 0
    units: int = 0
    unplaced: int = 0
    placed: int = 0


def _shape(spec: dict[str, Any]) -> tuple[int, dict[str, int], int, int]:
    gpus = int(spec.get("gpus_per_node", 0))
    slices: dict[str, int] = defaultdict(int)
    cut = 0
    for g in spec.get("mig", []):
        cut += g["gpus"]
        for p, n in g["slices"].items():
            slices[p] += g["gpus"] * n
    if spec.get("mig_strategy") == "single":
        cut = gpus
    return gpus - cut, dict(slices), int(spec["cpus_per_node"]), mib(spec["memory_per_node"])


class Platform:
    """A project folder and its out/, read with yaml and json only."""

    def __init__(self, folder: Path) -> None:
        cfg = yaml.safe_load((folder / "router.yaml").read_text())
        inv = yaml.safe_load((folder / cfg["inventory"]).read_text())
        self.folder = folder
        self.out = folder / cfg.get("out", "out")
        self.nodes: dict[str, list[Node]] = {}
        self.targets: dict[str, Target] = {}
        self.node_names: dict[tuple[str, str], tuple[str, int]] = {}
        for c in inv["clusters"]:
            specs = {s["name"]: s for s in c.get("node_sets", [])}
            for s in c.get("node_sets", []):
                self._add_set(c["name"], s)
            for t in c.get("partitions", []) + c.get("node_pools", []):
                tid = f"{c['name']}/{t['name']}"
                if "node_sets" in t:
                    sets = [f"{c['name']}/{n}" for n in t["node_sets"]]
                    first = specs[t["node_sets"][0]]
                else:
                    self._add_set(c["name"], t)
                    sets, first = [tid], t
                profiles = {p for g in first.get("mig", []) for p in g["slices"]}
                self.targets[tid] = Target(
                    tid, c["backend"], sets, first.get("gpu_type"), t.get("oversubscribe"), profiles
                )
                if t.get("max_time") not in (None, "unlimited"):
                    self.targets[tid].max_time = seconds(t["max_time"])
        run = cfg.get("running")
        self.running: list[dict[str, Any]] = []
        if run:
            self.running = yaml.safe_load((folder / run).read_text()).get("running") or []
        for r in self.running:
            if isinstance(r["node"], int):
                key = (f"{r['cluster']}/{r['node_set']}", r["node"])
            else:
                key = self.node_names[(r["cluster"], str(r["node"]))]
            n = self.nodes[key[0]][key[1]]
            n.busy = True
            n.blocked = n.blocked or bool(r.get("whole"))
            n.gpus -= int(r.get("gpus", 0))
            n.cpus -= int(r.get("cpus", 0))
            n.mem -= mib(r.get("memory", 0))
            for p, k in (r.get("mig") or {}).items():
                n.slices[p] = n.slices.get(p, 0) - k
        for n in self.all_nodes():
            # work holding more than the node has makes it full on that axis, not negative
            n.gpus, n.cpus, n.mem = max(n.gpus, 0), max(n.cpus, 0), max(n.mem, 0)
            n.slices = {p: max(k, 0) for p, k in n.slices.items()}
        self.workloads: dict[str, dict[str, Any]] = {}
        wpath = folder / cfg["workloads"]
        files = sorted(wpath.rglob("*.yaml")) if wpath.is_dir() else [wpath]
        for f in files:
            for doc in yaml.safe_load_all(f.read_text()):
                for w in doc if isinstance(doc, list) else [doc]:
                    self.workloads[w["name"]] = w
        self.meta: dict[str, dict[str, Any]] = json.loads((folder / "audit.json").read_text())

    def _add_set(self, cluster: str, spec: dict[str, Any]) -> None:
        sid = f"{cluster}/{spec['name']}"
        whole, slices, cpus, mem = _shape(spec)
        cap = (whole, cpus, mem, tuple(sorted(slices.items())))
        self.nodes[sid] = [
            Node((sid, i), cap, whole, cpus, mem, dict(slices))
            for i in range(int(spec.get("max_nodes", spec["nodes"])))
        ]
        names = spec.get("node_names") or []
        for i, name in enumerate(names if isinstance(names, list) else _hostlist(names)):
            self.node_names[(cluster, name)] = (sid, i)

    def all_nodes(self) -> list[Node]:
        return [n for ns in self.nodes.values() for n in ns]

    def target_nodes(self, tid: str) -> list[Node]:
        return [n for s in self.targets[tid].sets for n in self.nodes[s]]

    def replicas(self, name: str) -> tuple[int, int] | None:
        """min and max replicas of a service (None: not a service); docs' rule:
        min = max(workload min, hpa min, 1 with an HPA), max = min(workload max, hpa max)."""
        w, m = self.workloads[name], self.meta[name]
        if not m.get("service"):
            return None
        r, h = w.get("replicas"), m.get("hpa")
        if h is None:
            return (r["min"], r["max"]) if r else (1, 1)
        if r is None:
            return h[0], h[1]
        return max(r["min"], h[0], 1), min(r["max"], h[1])

    def units(self, name: str, tid: str) -> list[Unit]:
        """What the workload asks of target tid, by the audit's reading of the docs."""
        w, m, t = self.workloads[name], self.meta[name], self.targets[tid]
        gpus, cpus, mem = int(w.get("gpus", 0)), int(w.get("cpus", 1)), mib(w.get("memory", 0))
        prof = m.get("mig") if t.backend == "kubernetes" else None
        reps = self.replicas(name)
        if reps is not None:
            sl = {prof: gpus} if prof and gpus else {}
            g = 0 if prof else gpus
            return [Unit(name, tid, g, cpus, mem, sl, False) for _ in range(reps[0])]
        cap = self.nodes[t.sets[0]][0].cap if self.nodes[t.sets[0]] else (0, 1, 1, ())
        if w.get("nodes"):
            k = int(w["nodes"])
        elif gpus:
            k = _even(gpus, cap[0]) if cap[0] else 1
        else:  # a CPU job spreads only when one node cannot hold it
            k = max(1, math.ceil(cpus / cap[1]), math.ceil(mem / cap[2]))
        par = int((w.get("array") or {}).get("parallel", 0))
        whole = bool(m.get("exclusive")) or k > 1 or t.oversubscribe == "exclusive"
        out = []
        for a in range(max(par, 1)):
            out += [
                Unit(
                    name,
                    tid,
                    math.ceil(gpus / k),
                    math.ceil(cpus / k),
                    math.ceil(mem / k),
                    {},
                    whole,
                    f"{name}#{a}",
                )
                for _ in range(k)
            ]
        return out

    def candidates(self, name: str) -> list[str]:
        """Targets the audit's policy routes the workload to whose nodes can hold it."""
        w, m = self.workloads[name], self.meta[name]
        out = []
        for tid, t in sorted(self.targets.items()):
            if t.backend not in m["backends"]:
                continue
            if "targets" in m and tid not in m["targets"]:
                continue  # taints it does not tolerate, or the rule's where (audit_s22.py)
            prof = m.get("mig") if t.backend == "kubernetes" else None
            if prof and prof not in t.mig_profiles:
                continue
            want = w.get("gpu_type", "any")
            if int(w.get("gpus", 0)) and want not in ("any", t.gpu_type):
                continue  # and untyped GPUs (gpu_type any) take only workloads asking any
            if m.get("exclusive") and t.backend != "slurm":
                continue
            if t.max_time is not None and seconds(w.get("duration", "1h")) > t.max_time:
                continue
            reps = self.replicas(name)
            if reps is not None and reps[0] > reps[1]:
                continue  # hpa clamps, never widens: no replica count is left
            units = self.units(name, tid)
            nodes = self.target_nodes(tid)
            if not units:
                continue  # a service of 0 replicas: nothing to judge
            if not any(_fresh(n).take(units[0]) for n in nodes):
                continue
            k = sum(1 for u in units if u.group == units[0].group) if units[0].group else 1
            if k > len(nodes):
                continue
            out.append(tid)
        return out


def _hostlist(text: str) -> list[str]:
    """A Slurm host list of the simple forms "n1,n2" and "gpu[001-003,7]"."""
    out: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,]*", text):
        m = re.fullmatch(r"(.*)\[([^\]]*)\](.*)", part)
        if not m:
            out.append(part)
            continue
        for r in m[2].split(","):
            lo, _, hi = r.partition("-")
            for k in range(int(lo), int(hi or lo) + 1):
                out.append(f"{m[1]}{str(k).zfill(len(lo))}{m[3]}")
    return out


def _even(gpus: int, per: int) -> int:
    """Nodes for `gpus` GPUs on nodes of `per`: fewest with an even split, else fewest."""
    least = math.ceil(gpus / per)
    for n in range(least, min(gpus, 2 * least) + 1):
        if gpus % n == 0 and gpus // n <= per:
            return n
    return least


def _fresh(n: Node) -> Node:
    """The node as built, nothing running."""
    g, c, m, sl = n.cap
    return Node(n.key, n.cap, g, c, m, dict(sl))


def assign(
    p: Platform, plan: dict[str, Any], v: Verdict
) -> tuple[dict[tuple[str, int], Node], dict[str, list[Unit]]]:
    """The plan's units put on their assigned nodes (p's nodes lose them): each node's room
    after what runs and the plan, and each target's units; what does not fit or is not its
    target's goes to v.findings (also read by tests/pack/audit_reasons.py)."""
    free = {n.key: n for n in p.all_nodes()}
    held: dict[str, list[Unit]] = defaultdict(list)  # target -> the plan's units
    for pl in plan["placements"]:
        name, tid = pl["workload"], pl["target_id"]
        v.placed += 1
        units = p.units(name, tid)
        held[tid] += units
        if name in p.meta and tid not in p.candidates(name):
            v.findings.append(f"{name} on {tid}: not a target the policy leaves it")
        v.units += len(units)
        _numbers(p, pl, units, v)
        spots = [(x["node_set"], int(x["node"])) for x in pl.get("nodes", [])]
        if len(spots) != len(units):
            v.findings.append(
                f"{name} on {tid}: {len(spots)} nodes assigned, the audit counts {len(units)} units"
            )
            continue
        seen: dict[str, set[tuple[str, int]]] = defaultdict(set)
        for u, key in zip(units, spots, strict=True):
            if key[0] not in p.targets[tid].sets or key not in free:
                v.findings.append(f"{name} on {tid}: assigned node {key} is not one of its nodes")
            elif u.group and key in seen[u.group]:
                v.findings.append(f"{name} on {tid}: two tasks of one job on node {key}")
            elif not free[key].take(u):
                v.findings.append(
                    f"{name} on {tid}: does not fit on its assigned node {key[0]}[{key[1]}]"
                    f" (free {free[key].gpus} GPUs, {free[key].slices} slices, {free[key].cpus}"
                    f" CPUs, {free[key].mem} MiB, busy={free[key].busy}; asks {u.shape()})"
                )
            seen[u.group].add(key)
    return free, held


def judge(folder: Path, exact_nodes: int = 40, limit: float = 5.0) -> Verdict:
    """Every finding the audit's checker makes on a planned project folder."""
    p = Platform(folder)
    plan = json.loads((p.out / "plan.json").read_text())
    v = Verdict()
    base = {n.key: n.copy() for n in p.all_nodes()}  # after what runs, before the plan
    free, held = assign(p, plan, v)
    v.targets = len([t for t in plan["targets"] if t["placements"]])
    for t in plan["targets"]:
        got = held.get(t["id"], [])
        if any(u.slices for u in got):
            continue  # how slices count as GPUs in the table is the table's business
        cap = p.nodes[p.targets[t["id"]].sets[0]][0].cap if got else (0, 0, 0, ())
        # a whole node counts as all of it; `gpus` in GPU devices, a whole GPU or a MIG
        # slice each (docs/language.md, quota)
        devices = cap[0] + sum(k for _, k in cap[3])
        mine = {
            "gpus": sum(devices if u.whole else u.gpus for u in got),
            "cpus": sum(cap[1] if u.whole else u.cpus for u in got),
            "memory_mib": sum(cap[2] if u.whole else u.mem for u in got),
        }
        for axis, n in mine.items():
            if t[axis]["used"] != n:
                v.findings.append(
                    f"targets table {t['id']}: {axis} used {t[axis]['used']}, placements sum {n}"
                )
    v.findings += quota_findings(p, plan)
    comps = _components(p)
    tried: dict[tuple[Any, ...], bool | None] = {}
    for item in plan["unplaced"]:
        name = item["workload"]
        v.unplaced += 1
        for tid in p.candidates(name):
            if not _gate(p, plan, name, tid):
                continue
            units = p.units(name, tid)
            room = {n.key: free[n.key].copy() for n in p.target_nodes(tid)}
            witness = _greedy(room, p, tid, units)
            if witness:
                v.findings.append(
                    f"falsely unplaced: {name} fits on {tid} beside the plan as assigned"
                    f" (nodes {witness}); plan said: {item['reasons'][:2]}"
                )
                break
            comp = comps[tid]
            if sum(len(p.nodes[s]) for s in comp) > exact_nodes:
                continue
            same = (tid, units[0].shape(), len(units))
            if same not in tried:  # the plan's work is fixed: one answer per shape and target
                work = [
                    u for t in sorted(p.targets) if p.targets[t].sets[0] in comp for u in held[t]
                ]
                tried[same] = repack(p, base, comp, work + units, limit)
            packs = tried[same]
            if packs is True:
                v.findings.append(
                    f"falsely unplaced: {name} fits on {tid} when the plan's work there is"
                    f" re-packed within its targets (exact); plan said: {item['reasons'][:2]}"
                )
                break
            if packs is None:
                v.undecided.append(f"{name} on {tid}: exact check undecided in {limit}s")
    return v


def _numbers(p: Platform, pl: dict[str, Any], units: list[Unit], v: Verdict) -> None:
    """plan.json's numbers and the manifests' against the audit's reading."""
    name, r = pl["workload"], pl["resources"]
    u = units[0] if units else None
    if u is not None:
        mine = (u.gpus + sum(u.slices.values()), u.cpus, u.mem)
        theirs = (r["gpus_per_node"], r["cpus_per_node"], r["memory_per_node_mib"])
        if mine != theirs:
            v.findings.append(f"{name}: plan.json asks {theirs} per unit, the audit reads {mine}")
        if bool(r["whole_nodes"]) != u.whole:
            v.findings.append(f"{name}: plan.json whole_nodes {r['whole_nodes']}, audit {u.whole}")
    reps = p.replicas(name)
    if reps is None:
        return
    if r.get("replicas") != {"min": reps[0], "max": reps[1]}:
        v.findings.append(f"{name}: plan.json replicas {r.get('replicas')}, the audit reads {reps}")
    for art in pl["artifacts"]:
        for doc in yaml.safe_load_all((p.out / art).read_text()):
            if not doc:
                continue
            kind, spec = doc.get("kind"), doc.get("spec") or {}
            if kind == "HorizontalPodAutoscaler":
                got = (spec.get("minReplicas"), spec.get("maxReplicas"))
                if got != reps:
                    v.findings.append(f"{name}: {art} HPA {got}, plan counts {reps}")
            if kind == "Deployment" and "replicas" in spec and spec["replicas"] != reps[0]:
                v.findings.append(f"{name}: {art} Deployment replicas {spec['replicas']} != {reps}")


def _gate(p: Platform, plan: dict[str, Any], name: str, tid: str) -> bool:
    """False where the audit's policy keeps the workload off tid whatever the room: a spread
    at its max, or a team quota (judged by the quota, not here)."""
    w, meta = p.workloads[name], p.meta.get("_platform", {})
    for q in meta.get("quotas", []):
        if not _member(q, w):
            continue
        key = _quota_key(q, w, tid)
        used = sum(
            _quota_use(p, q, x["workload"], x["target_id"])
            for x in plan["placements"]
            if _member(q, p.workloads[x["workload"]])
            and _quota_key(q, p.workloads[x["workload"]], x["target_id"]) == key
        )
        if used + _quota_use(p, q, name, tid) > _limit(q):
            return False
    for s in meta.get("spreads", []):
        app = (w.get("labels") or {}).get(s["by"])
        if app is None or w.get("kind") != s.get("kind", w.get("kind")):
            continue
        same = [
            x
            for x in plan["placements"]
            if (p.workloads[x["workload"]].get("labels") or {}).get(s["by"]) == app
            and p.workloads[x["workload"]].get("kind") == w.get("kind")
        ]
        where = tid if s["across"] == "target" else tid.split("/")[0]
        on = [
            x
            for x in same
            if (x["target_id"] if s["across"] == "target" else x["cluster"]) == where
        ]
        if len(on) >= s["max"]:
            return False
    return True


def _member(q: dict[str, Any], w: dict[str, Any]) -> bool:
    return not q.get("team") or w.get("team", "default") == q["team"]


def _limit(q: dict[str, Any]) -> int:
    return int(q.get("limit", q.get("gpus", 0)))


def _quota_key(q: dict[str, Any], w: dict[str, Any], tid: str) -> str | None:
    """The group a member counts in: the value of the quota's `per` key (None: one group)."""
    per = q.get("per")
    if per is None:
        return None
    if per == "cluster":
        return tid.split("/")[0]
    if per.startswith("workload.labels."):
        return str((w.get("labels") or {}).get(per.removeprefix("workload.labels.")))
    return str(w.get(per, "default"))


def _quota_use(p: Platform, q: dict[str, Any], name: str, tid: str) -> int:
    """What the workload counts against the quota on tid, by the docs: `gpus` in devices (a
    whole GPU or a MIG slice each; a whole node all of its devices), services at min replicas."""
    res = q.get("resource", "gpus")
    if res == "workloads":
        return 1
    cap = p.nodes[p.targets[tid].sets[0]][0].cap
    whole = {"gpus": cap[0] + sum(k for _, k in cap[3]), "cpus": cap[1], "memory": cap[2]}
    out = 0
    for u in p.units(name, tid):
        mine = {"gpus": u.gpus + sum(u.slices.values()), "cpus": u.cpus, "memory": u.mem}
        out += whole[res] if u.whole else mine[res]
    return out


def quota_findings(p: Platform, plan: dict[str, Any]) -> list[str]:
    """A quota's group over its limit in the plan as written."""
    out = []
    for k, q in enumerate(p.meta.get("_platform", {}).get("quotas", [])):
        used: dict[str | None, int] = defaultdict(int)
        for x in plan["placements"]:
            w = p.workloads[x["workload"]]
            if _member(q, w):
                used[_quota_key(q, w, x["target_id"])] += _quota_use(
                    p, q, x["workload"], x["target_id"]
                )
        for key, n in sorted(used.items(), key=str):
            if n > _limit(q):
                out.append(f"quota q{k} ({key}): {q.get('resource', 'gpus')} {n} > {_limit(q)}")
    return out


def _greedy(
    free: dict[tuple[str, int], Node], p: Platform, tid: str, units: list[Unit]
) -> list[str]:
    """Units placed first-fit on the free room of tid's nodes, or [] when that fails."""
    return first_fit([free[n.key] for n in p.target_nodes(tid)], units)


def first_fit(nodes: list[Node], units: list[Unit]) -> list[str]:
    """Units placed first-fit on nodes (they lose them), a job's tasks on distinct nodes:
    the nodes taken, or [] when that fails."""
    out: list[str] = []
    used: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for u in units:
        for n in nodes:
            if u.group and n.key in used[u.group]:
                continue
            if n.take(u):
                used[u.group].add(n.key)
                out.append(f"{n.key[0]}[{n.key[1]}]")
                break
        else:
            return []
    return out


def _components(p: Platform) -> dict[str, set[str]]:
    """Target -> the node sets of its capacity component (sets joined by shared targets)."""
    parent = {s: s for s in p.nodes}

    def find(s: str) -> str:
        while parent[s] != s:
            s = parent[s]
        return s

    for t in p.targets.values():
        for s in t.sets[1:]:
            parent[find(s)] = find(t.sets[0])
    groups: dict[str, set[str]] = defaultdict(set)
    for s in p.nodes:
        groups[find(s)].add(s)
    return {tid: groups[find(t.sets[0])] for tid, t in p.targets.items()}


def node_rows(m: Any, n: Node, got: list[tuple[Any, Unit]]) -> None:
    """What one node holds, in model `m`: (count variable, unit) pairs within its whole GPUs,
    CPUs, memory and slices of each MIG profile (shared with audit_optimum.py)."""
    m.add(sum(y * u.gpus for y, u in got) <= n.gpus)
    m.add(sum(y * u.cpus for y, u in got) <= n.cpus)
    m.add(sum(y * u.mem for y, u in got) <= n.mem)
    for prof in sorted({q for _, u in got for q in u.slices}):
        m.add(sum(y * u.slices.get(prof, 0) for y, u in got) <= n.slices.get(prof, 0))


def _short(nodes: list[Node], units: list[Unit]) -> bool:
    """A bound the per-node model below can take minutes to prove: whole-node units take
    that many idle nodes, each at least the smallest idle one, and the rest must fit in what
    is left of each resource's sum (a relaxation of every target's own nodes)."""
    whole = sum(1 for u in units if u.whole)
    if not whole:
        return False
    usable = [n for n in nodes if not n.blocked]
    idle = [n for n in usable if not n.busy]
    if len(idle) < whole:
        return True
    for axis in ("gpus", "cpus", "mem"):
        left = sum(getattr(n, axis) for n in usable) - whole * min(getattr(n, axis) for n in idle)
        if sum(getattr(u, axis) for u in units if not u.whole) > left:
            return True
    return False


def repack(
    p: Platform, base: dict[tuple[str, int], Node], comp: set[str], units: list[Unit], limit: float
) -> bool | None:
    """Exact: can these units (each on its own target) be packed onto comp's nodes (`base`:
    as they are with what runs)?"""
    from ortools.sat.python import cp_model

    nodes = [base[n.key] for s in sorted(comp) for n in p.nodes[s]]
    if _short(nodes, units):
        return False
    m = cp_model.CpModel()
    classes: dict[tuple[Any, ...], list[Unit]] = defaultdict(list)
    for u in units:
        classes[(u.target, u.shape(), u.group if u.whole or u.group else "")].append(u)
    load: dict[tuple[str, int], list[tuple[Any, Unit]]] = defaultdict(list)
    for (tid, _, group), us in classes.items():
        allowed = {n.key for n in p.target_nodes(tid)}
        top = 1 if (group and len({x.group for x in us}) == 1) or us[0].whole else len(us)
        ys = []
        for n in nodes:
            if n.key not in allowed or n.blocked or (us[0].whole and n.busy):
                continue
            y = m.new_int_var(0, top, "")
            ys.append(y)
            load[n.key].append((y, us[0]))
        m.add(sum(ys) == len(us))
    for n in nodes:
        got = load.get(n.key, [])
        if not got:
            continue
        node_rows(m, n, got)
        whole = [y for y, u in got if u.whole]
        rest = [y for y, u in got if not u.whole]
        if whole:
            m.add(sum(whole) <= 1)
            if rest:
                big = sum(len(classes[k]) for k in classes)
                m.add(sum(rest) <= big * (1 - sum(whole)))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = limit
    solver.parameters.num_workers = 1
    st = solver.solve(m)
    if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return True
    if st == cp_model.INFEASIBLE:
        return False
    return None
