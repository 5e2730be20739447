"""The honesty of plan.json's capacity reasons (issue 11), checked by the audit's own reading.

For each unplaced workload, every reason that names a blocking resource and figures ("hpc/gpu:
needs 8 GPUs free on one node; the most free on any of its 6 nodes is 7 GPUs; running work
holds 14 of the 48 GPUs there") is parsed, and its figures are recomputed from the project
folder alone (tests/pack/audit_check.py's Platform: inventory, running work, the plan's node
assignment): the ask, the node count, the targets sharing the nodes, the most free, the room
for pods, the idle nodes, what running work holds, and that the named resource really is short.

A node a whole-node job holds (running or planned) has nothing free; a node is idle when
neither running work nor the plan's is on it.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.pack.audit_check import (
    Node,
    Platform,
    Unit,
    Verdict,
    _components,
    _fresh,
    _limit,
    _member,
    _quota_key,
    _quota_use,
    assign,
    first_fit,
    mib,
)

TAIL = r"(?:; running work holds (?P<run>\S+) of the (?P<total>.+?) there)?"
# what may follow a reason: the aggregate sums (router/explain/reasons.py) and notes
END = r"(?: \(in all: (?P<sums>[^)]*)\))?(?P<notes>; .*)?"
ITS = r"its (?P<n>\d+) nodes?(?: \(shared with (?P<shared>[^)]*)\))?"
FORMS = {
    "most": re.compile(
        rf"(?P<tid>\S+): needs (?P<ask>.+?) free on one node; "
        rf"the most free on any of {ITS} is (?P<most>.+?){TAIL}{END}"
    ),
    "one": re.compile(
        rf"(?P<tid>\S+): (?:needs|(?P<k>\d+) pods need) (?P<ask>.+?) free (?:on one node|each); "
        rf"its 1 node has (?P<most>.+?) free(?:, room for (?P<fit>\d+))?{TAIL}{END}"
    ),
    "room": re.compile(
        rf"(?P<tid>\S+): (?P<k>\d+) pods need (?P<ask>.+?) free each; {ITS} have room for "
        rf"(?P<fit>\d+) \(the most free on any node: (?P<tops>[^)]*)\){TAIL}{END}"
    ),
    "whole": re.compile(
        rf"(?P<tid>\S+): needs (?P<k>\d+) whole nodes?, (?P<idle>\d+) of {ITS} (?:is|are) "
        r"idle(?:; running work is on (?P<run>\d+) of them)?" + END
    ),
    "together": re.compile(
        rf"(?P<tid>\S+): (?:needs|(?P<k>\d+) pods need) (?P<what>.+?) each; "
        rf"they do not fit together on {ITS}{END}"
    ),
    "none": re.compile(
        rf"(?P<tid>\S+): (?:needs|(?P<k>\d+) pods need) (?P<what>.+?) free on one node"
        rf"(?: each)?; none of {ITS} has all of it(?:, room for (?P<fit>\d+))? "
        r"\((?P<detail>[^()]*(?:\([^()]*\)[^()]*)*)\)" + END
    ),
}
QUOTA = re.compile(
    r"quota q(?P<q>\d+)(?:\[(?P<per>[^=\]]*)=(?P<key>[^\]]*)\])? \([^)]*\) on (?P<res>\S+): "
    r"(?P<used>\S+) of (?P<lim>\S+)(?: \([^)]*\))? used, needs (?P<need>\S+)(?:; .*)?"
)
# a reason that reads like capacity but none of FORMS: counted, so none is skipped unseen
CAPACITY_WORDS = re.compile(r"free on one node|free each|whole nodes?, \d+ of|fit together")

Axis = str  # "gpus", "cpus", "memory", "mig <profile>"


def amount(text: str) -> tuple[Axis, int]:
    """ "653GiB of memory" -> ("memory", MiB); "7 GPUs"; "18 CPUs"; "3 1g.10gb slices"."""
    m = re.fullmatch(r"(\S+) of memory", text)
    if m:
        return "memory", mib(m[1])
    m = re.fullmatch(r"(\d+) (GPUs?|CPUs?)", text)
    if m:
        return ("gpus" if m[2].startswith("G") else "cpus"), int(m[1])
    m = re.fullmatch(r"(\d+) (\S+) slices?", text)
    if m:
        return f"mig {m[2]}", int(m[1])
    raise ValueError(f"no amount: {text!r}")


def number(axis: Axis, text: str) -> int:
    """An amount whose unit word the reason has already said ("14", "1666GiB")."""
    return mib(text) if axis == "memory" else int(text)


def show(axis: Axis, n: int) -> str:
    """An audit figure as the reasons spell it (memory in GiB where whole)."""
    if axis == "memory":
        return f"{n // 1024}GiB" if n % 1024 == 0 else f"{n}MiB"
    return f"{n} {axis}"


def of(n: Node, axis: Axis) -> int:
    """What node n has free on axis; nothing when a whole-node job holds it."""
    if n.blocked:
        return 0
    if axis.startswith("mig "):
        return n.slices.get(axis[4:], 0)
    return int({"gpus": n.gpus, "cpus": n.cpus, "memory": n.mem}[axis])


def full(n: Node, axis: Axis) -> int:
    g, c, m, sl = n.cap
    if axis.startswith("mig "):
        return dict(sl).get(axis[4:], 0)
    return {"gpus": g, "cpus": c, "memory": m}[axis]


def asks(u: Unit, axis: Axis) -> int:
    if axis.startswith("mig "):
        return u.slices.get(axis[4:], 0)
    return int({"gpus": u.gpus, "cpus": u.cpus, "memory": u.mem}[axis])


AXES = ("gpus", "cpus", "memory")


@dataclass
class Honesty:
    findings: list[str] = field(default_factory=list)
    checked: int = 0  # reasons parsed and recomputed
    unparsed: list[str] = field(default_factory=list)  # capacity-like, no form matched


class Room:
    """A planned project folder as the audit reads it: room per node after running work and
    the plan, and the idle and running-busy marks."""

    def __init__(self, folder: Path) -> None:
        self.p = Platform(folder)
        self.plan: dict[str, Any] = json.loads((self.p.out / "plan.json").read_text())
        self.base = {n.key: n.copy() for n in self.p.all_nodes()}  # after running work only
        self.free, _ = assign(self.p, self.plan, Verdict())
        self.comps = _components(self.p)

    def nodes(self, tid: str) -> list[Node]:
        return [self.free[n.key] for n in self.p.target_nodes(tid)]

    def sharing(self, tid: str) -> list[str]:
        sets = set(self.p.targets[tid].sets)
        return sorted(t for t, x in self.p.targets.items() if t != tid and sets & set(x.sets))


def check(folder: Path) -> Honesty:
    """Every capacity reason of the folder's plan.json recomputed (see the module's words)."""
    r = Room(folder)
    h = Honesty()
    for item in r.plan["unplaced"]:
        name = item["workload"]
        if name not in r.p.meta:
            continue
        for text in item["reasons"]:
            h.findings += [f"{name}: {e} [{text}]" for e in reason(r, name, text, h)]
    return h


def reason(r: Room, name: str, text: str, h: Honesty) -> list[str]:
    """What is wrong with one reason's figures ([] when they are right or it is not one)."""
    for form, rx in FORMS.items():
        m = rx.fullmatch(text)
        if m and m["tid"] in r.p.targets:
            h.checked += 1
            return _judge(r, name, form, m)
    q = QUOTA.fullmatch(text.removeprefix("not a candidate: "))
    if q:
        h.checked += 1
        return _quota(r, name, q)
    if CAPACITY_WORDS.search(text) and not text.startswith("not a candidate"):
        h.unparsed.append(f"{name}: {text}")
    return []


def _judge(r: Room, name: str, form: str, m: re.Match[str]) -> list[str]:
    out = _figures(r, name, form, m)
    if m["sums"]:
        out += _sums(r, m["tid"], r.p.units(name, m["tid"]), m["sums"])
    return out


def _figures(r: Room, name: str, form: str, m: re.Match[str]) -> list[str]:
    tid = m["tid"]
    units = r.p.units(name, tid)
    nodes = r.nodes(tid)
    out: list[str] = []
    if not units:
        return [f"no units on {tid} by the audit's reading"]
    u = units[0]
    need = len(units)
    if "n" in m.groupdict() and m["n"] is not None and int(m["n"]) != len(nodes):
        out.append(f"says {m['n']} nodes, {tid} has {len(nodes)}")
    shared = m.groupdict().get("shared")
    if form != "one" and sorted((shared or "").split(", ") if shared else []) != r.sharing(tid):
        out.append(f"says shared with [{shared}], the nodes are also {r.sharing(tid)}'s")
    if form == "whole":
        idle = sum(1 for n in nodes if not n.busy)
        running = sum(1 for n in r.p.target_nodes(tid) if r.base[n.key].busy)
        if int(m["k"]) != len(units) or not u.whole:
            out.append(
                f"says {m['k']} whole nodes, the audit counts {len(units)} (whole {u.whole})"
            )
        if int(m["idle"]) != idle:
            out.append(f"says {m['idle']} idle, {idle} are")
        if int(m["run"] or 0) != running:
            out.append(f"says running work on {m['run'] or 0}, it is on {running}")
        if idle >= len(units):
            out.append(f"{idle} idle nodes hold the {len(units)} whole nodes asked")
        return out
    if u.whole:
        return [*out, f"a {form} reason for work the audit reads as whole nodes"]
    k = int(m["k"]) if m.groupdict().get("k") else 1
    if k != need:
        out.append(f"says {k} pods, the audit counts {need}")
    if form in ("together", "none"):
        return out + _judge_all(r, form, m, u, nodes, need)
    axis, ask = amount(m["ask"])
    if ask != asks(u, axis):
        out.append(f"says it needs {m['ask']}, the audit reads {asks(u, axis)} {axis}")
    most = max((of(n, axis) for n in nodes), default=0)
    if form in ("most", "one"):
        got_axis, said = amount(m["most"])
        if got_axis != axis or said != most:
            out.append(f"says the most free is {m['most']}, it is {show(axis, most)}")
    held = sum(full(n, axis) - of(r.base[n.key], axis) for n in r.p.target_nodes(tid))
    if m["run"] is not None:
        t_axis, total = amount(m["total"])
        there = sum(full(n, axis) for n in nodes)
        if number(axis, m["run"]) != held or t_axis != axis or total != there:
            out.append(
                f"says running work holds {m['run']} of the {m['total']}; it holds {held} of "
                f"{there} ({axis})"
            )
    fit = sum(min(need, _fits(n, u)) for n in nodes)
    if m.groupdict().get("fit") is not None and int(m["fit"]) != fit:
        out.append(f"says room for {m['fit']}, the audit finds room for {fit}")
    if form == "room":
        out += _tops(axis, m["tops"], nodes)
    if sum(of(n, axis) // ask for n in nodes) >= need:
        out.append(f"names {axis}, yet the nodes hold {need} on {axis} alone")
    return out


def _judge_all(
    r: Room, form: str, m: re.Match[str], u: Unit, nodes: list[Node], need: int
) -> list[str]:
    """ "needs 3 GPUs, 10 CPUs and 5GiB of memory free on one node; none of ..." forms."""
    out: list[str] = []
    parts = re.split(r", | and ", m["what"])
    said = dict(amount(x) for x in parts)
    mine = {a: asks(u, a) for a in (*AXES, *(f"mig {q}" for q in u.slices)) if asks(u, a)}
    if said != mine:
        out.append(f"says it needs {m['what']}, the audit reads {mine}")
    fit = sum(min(need, _fits(n, u)) for n in nodes)
    if form == "together":
        if any(sum(of(n, a) // d for n in nodes) < need for a, d in mine.items()):
            out.append("says one by one they fit, yet a resource alone is short")
        return out
    if m["fit"] is not None and int(m["fit"]) != fit:
        out.append(f"says room for {m['fit']}, the audit finds room for {fit}")
    if fit >= need:
        out.append(f"says none has all of it, yet the nodes have room for {fit} of {need}")
    for part in m["detail"].split("; "):
        d = re.fullmatch(r"the most (.+?) free is (\S+), on a node with (.+)", part)
        if not d:
            out.append(f"detail not read: {part!r}")
            continue
        axis = {"GPUs": "gpus", "CPUs": "cpus", "memory": "memory"}.get(d[1], f"mig {d[1][:-7]}")
        top = max((of(n, axis) for n in nodes), default=0)
        if number(axis, d[2]) != top:
            out.append(f"says the most {d[1]} free is {d[2]}, it is {show(axis, top)}")
            continue
        others = dict(amount(x) for x in re.split(r" and ", d[3]))
        if not any(
            of(n, axis) == top and all(of(n, a) == v for a, v in others.items()) for n in nodes
        ):
            out.append(f"no node with the most {d[1]} free ({top}) has {d[3]}")
    return out


def _sums(r: Room, tid: str, units: list[Unit], text: str) -> list[str]:
    """ "(in all: cpus 228 of 231 used, needs 16; ...)": the ask is the workload's total, the
    capacity is what running work leaves on some of the component's node sets, and used plus
    the ask is over it."""
    out = []
    comp = sorted(r.comps[tid])
    for part in text.split("; "):
        d = re.fullmatch(r"(.+?) (\S+) of (\S+) used, needs (\S+)", part)
        axis = d[1].replace("mig-", "mig ", 1) if d else ""
        if not d or not (axis in AXES or axis.startswith("mig ")):
            out.append(f"sum not read: {part!r}")
            continue
        used, cap, need = (number(axis, d[k]) for k in (2, 3, 4))
        mine = sum(
            full(r.free[(r.p.targets[tid].sets[0], 0)], axis) if u.whole else asks(u, axis)
            for u in units
        )
        if need != mine:
            out.append(f"sum says it needs {d[4]} {axis}, the audit reads {mine}")
        caps = {
            sum(of(r.base[n.key], axis) for s in sets for n in r.p.nodes[s])
            for k in range(1, len(comp) + 1)
            for sets in itertools.combinations(comp, k)
        }
        if cap not in caps:
            out.append(f"sum says {axis} capacity {d[3]}; no node sets of it have that free")
        if used + need <= cap:
            out.append(f"sum {part!r} is not short")
    return out


def _quota(r: Room, name: str, m: re.Match[str]) -> list[str]:
    """ "quota q1[workload.labels.app=embed] (policy.route:36) on workloads: 2 of 2 used, needs
    1": the group's use by the plan's placements, the limit, and what the workload would add
    on one of its candidates."""
    quotas = r.p.meta.get("_platform", {}).get("quotas", [])
    q = quotas[int(m["q"])]
    w = r.p.workloads[name]
    axis = m["res"]
    # a member without the key's value: router's group "none", the audit's str(None)
    key = "None" if m["key"] == "none" else m["key"]
    used = sum(
        _quota_use(r.p, q, x["workload"], x["target_id"])
        for x in r.plan["placements"]
        if _member(q, r.p.workloads[x["workload"]])
        and (key is None or _quota_key(q, r.p.workloads[x["workload"]], x["target_id"]) == key)
    )
    out = []
    num = mib if axis == "memory" else int
    if num(m["used"]) != used:
        out.append(f"says {m['used']} of the quota used, the plan's placements use {used}")
    if num(m["lim"]) != _limit(q):
        out.append(f"says the limit is {m['lim']}, the policy's is {_limit(q)}")
    needs = {_quota_use(r.p, q, name, t) for t in r.p.candidates(name)}
    if needs and num(m["need"]) not in needs:
        out.append(f"says it needs {m['need']}, on its candidates it needs {sorted(needs)}")
    if not _member(q, w):
        out.append(f"{name} is no member of quota q{m['q']}")
    return out


def _tops(axis: Axis, text: str, nodes: list[Node]) -> list[str]:
    """ "48 CPUs on 1, 18 on 3": the largest amounts free and on how many nodes."""
    counts: dict[int, int] = {}
    for n in nodes:
        counts[of(n, axis)] = counts.get(of(n, axis), 0) + 1
    top = sorted(counts.items(), reverse=True)[:2]
    said = []
    for i, part in enumerate(text.split(", ")):
        what, _, c = part.rpartition(" on ")
        said.append((amount(what)[1] if i == 0 else number(axis, what), int(c)))
    return [] if said == top else [f"says the most free is {text}, it is {top} ({axis})"]


def _fits(n: Node, u: Unit) -> int:
    """How many of u's pods node n holds alone."""
    if n.blocked:
        return 0
    k = 1 << 30
    for a in (*AXES, *(f"mig {q}" for q in u.slices)):
        d = asks(u, a)
        if d:
            k = min(k, of(n, a) // d)
    return k


FIX = re.compile(
    r"(?P<tid>\S+) needs (?P<k>\d+) more nodes? \(has (?P<has>\d+)\)"
    r" \(then it fits on (?P<on>\S+)\)"
)


def some(folder: Path, k: int = 3) -> list[str]:
    """The first k unplaced workloads whose reasons name capacity (for `router explain`)."""
    plan = json.loads((folder / "out/plan.json").read_text())
    hit = [
        u["workload"]
        for u in plan["unplaced"]
        if any(CAPACITY_WORDS.search(t) for t in u["reasons"])
    ]
    return hit[:k]


def explained(folder: Path, names: list[str]) -> Honesty:
    """`router explain NAME FOLDER --format json` for unplaced workloads: its reasons are
    plan.json's, each at-candidate reason's figures are right (as check's), and a "needs K
    more nodes" fix is no more than the audit needs: K - 1 fresh nodes of the target's kind
    beside the plan as assigned do not hold the workload, K do."""
    r = Room(folder)
    h = Honesty()
    said = {u["workload"]: u["reasons"] for u in r.plan["unplaced"]}
    for name in names:
        done = subprocess.run(
            [sys.executable, "-m", "router", "explain", name, str(folder), "--format", "json"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            h.findings.append(
                f"{name}: router explain exit {done.returncode}: {done.stderr[-300:]}"
            )
            continue
        doc = json.loads(done.stdout)
        if doc["status"] != "unplaced" or doc["reasons"] != said.get(name):
            h.findings.append(
                f"{name}: explain says {doc['status']}, {doc['reasons']};"
                f" plan.json {said.get(name)}"
            )
        for texts in doc["per_target"].values():
            for text in texts:
                h.findings += [f"{name}: explain: {e} [{text}]" for e in reason(r, name, text, h)]
        m = FIX.fullmatch(doc["fix"] or "")
        if m and m["tid"] in r.p.targets:
            h.checked += 1
            h.findings += [f"{name}: fix: {e} [{doc['fix']}]" for e in _fix(r, name, m)]
    return h


def _fix(r: Room, name: str, m: re.Match[str]) -> list[str]:
    tid = m["tid"]
    nodes = r.nodes(tid)
    out = []
    if int(m["has"]) != len(nodes):
        out.append(f"says {tid} has {m['has']} nodes, it has {len(nodes)}")
    units = r.p.units(name, tid)
    fresh = _fresh(nodes[0])

    def fits(k: int) -> bool:
        room = {n.key: n.copy() for n in nodes}
        more = [
            Node(("added", i), fresh.cap, fresh.gpus, fresh.cpus, fresh.mem, dict(fresh.slices))
            for i in range(k)
        ]
        return bool(first_fit(list(room.values()) + more, units))

    k = int(m["k"])
    least = next((j for j in range(k + len(units) + 1) if fits(j)), None)
    if least is not None and least < k:
        out.append(f"{least} more nodes hold it beside the plan as assigned")
    if not fits(k):
        out.append(f"{k} more nodes do not hold it beside the plan as assigned (a re-pack may)")
    return out
