"""A Slurm node as capacity: usable now, headroom Slurm can power up, or left out (and why);
and its type (GPUs, MIG slices, CPUs, memory, features) as router's inventory models it.

State decisions (Slurm's `sinfo`/`scontrol` state words):

* Left out: DOWN, DRAIN (drained, or draining when it still runs jobs), FAIL/FAILING, MAINT and
  MAINTENANCE, RESERVED (in a reservation: only its users may run there), NOT_RESPONDING,
  FUTURE, UNKNOWN, INVALID_REG, REBOOT_ISSUED. An inventory is what a plan may count on now,
  and an understated one is safe where an overstated one places work that never starts.
* Headroom: a node that is otherwise healthy but POWERED_DOWN / POWERING_DOWN / POWERING_UP,
  when Slurm can power it up (a CLOUD node, or a partition with ResumeTimeout/SuspendTime): it
  counts in `max_nodes` (the ceiling), not in `nodes`. Without that sign it is left out.
* Usable: IDLE, MIXED, ALLOCATED, COMPLETING, PLANNED, CLOUD (powered up), POWER_DOWN (a
  power-down requested for later: still up), REBOOT_REQUESTED, DYNAMIC_NORM.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from router.hostlist import split_top
from router.importers import one_line
from router.importers.gpu import cut_text, gpu_type_of, mig_layout, mig_profile, vendor_only
from router.importers.slurm.records import SlurmNode
from router.models.mig_geometry import Cut
from router.quantity import format_memory

BAD: tuple[tuple[str, str], ...] = (
    ("DOWN", "down"),
    ("FAIL", "failed"),
    ("FAILING", "failing"),
    ("MAINT", "in maintenance"),
    ("MAINTENANCE", "in maintenance"),
    ("RESERVED", "reserved"),
    ("NOT_RESPONDING", "not responding"),
    ("NO_RESPOND", "not responding"),
    ("FUTURE", "not in service yet (FUTURE)"),
    ("UNKNOWN", "in an unknown state"),
    ("INVALID_REG", "registered with a bad configuration"),
    ("INVAL", "registered with a bad configuration"),
    ("REBOOT_ISSUED", "rebooting"),
    ("DRAINED", "drained"),
    ("DRAINING", "draining"),
)
POWER_OFF = frozenset({"POWERED_DOWN", "POWERING_DOWN", "POWERING_UP", "POWER_UP"})


@dataclass(frozen=True)
class Verdict:
    kind: str  # "usable", "headroom" or "out"
    why: str = ""  # for "out" and "headroom": the words of the exclusion line


def verdict(node: SlurmNode, can_power_up: bool | None) -> Verdict:
    s = node.states
    why = [text for word, text in BAD if word in s]
    if "DRAIN" in s:
        busy = bool(s & {"ALLOCATED", "MIXED", "COMPLETING"})
        why.append("draining" if busy else "drained")
    why = list(dict.fromkeys(why))
    reason = f" (reason: {one_line(node.reason, 120)})" if node.reason else ""
    if node.reservation and "RESERVED" in s:
        reason += f" (reservation {one_line(node.reservation, 60)})"
    if why:
        return Verdict("out", ", ".join(why) + reason)
    if s & POWER_OFF:
        if "CLOUD" in s or can_power_up:
            return Verdict("headroom", "powered down, Slurm powers it up on demand")
        return Verdict("out", "powered down, and nothing says Slurm can power it up" + reason)
    return Verdict("usable")


# ---- node types -----------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeType:
    """Identical nodes have one type. gpu_type None: no GPUs router can ask for."""

    gpu_type: str | None
    gpus: int  # every GPU, whole or cut into MIG slices
    gres_type: str | None  # the exact GRES type, when it is not gpu_type itself
    mig: tuple[tuple[int, Cut], ...]  # (gpus, the cut of each)
    cpus: int
    memory: int  # MiB
    features: tuple[str, ...]
    # (profile, GRES type) where Slurm's type is not the profile itself (nvidia_a100_1g.10gb)
    mig_types: tuple[tuple[str, str], ...] = ()

    def sort_key(self) -> tuple[str, int, str, str, int, int, tuple[str, ...], str]:
        """A total order (None sorts as ""), for output in a fixed order."""
        return (
            self.gpu_type or "",
            self.gpus,
            self.gres_type or "",
            repr(self.mig),
            self.cpus,
            self.memory,
            self.features,
            repr(self.mig_types),
        )

    def describe(self) -> str:
        gpus = f"{self.gpus} × {self.gpu_type}" if self.gpu_type else "no GPUs"
        mig = "".join(f", {g} cut into {cut_text(c)}" for g, c in self.mig)
        feats = ",".join(self.features) or "no features"
        return f"{gpus}{mig}, {self.cpus} CPUs, {format_memory(self.memory)}, {feats}"

    def label(self) -> str:
        """A short name for node sets and sub-targets: h100x8, cpu64."""
        if self.gpu_type:
            kind = "gpu" if self.gpu_type == "any" else self.gpu_type
            return f"{kind}x{self.gpus}"
        return f"cpu{self.cpus}"


@dataclass(frozen=True)
class Gpus:
    gpu_type: str | None
    gpus: int
    gres_type: str | None
    mig: tuple[tuple[int, Cut], ...]
    notes: tuple[str, ...]
    mig_types: tuple[tuple[str, str], ...] = ()  # (profile, GRES type), when they differ


def gpus_of(gres: str) -> Gpus:
    """The GPUs of a node's GRES ("gpu:nvidia_h100_80gb_hbm3:8(S:0-1),gpu:1g.10gb:14")."""
    models: Counter[str] = Counter()
    untyped = 0
    slices: Counter[str] = Counter()
    types: dict[str, str] = {}  # profile -> Slurm's type name, which scripts must use verbatim
    notes: list[str] = []
    for name, kind, count in parse_gres(gres):
        if name != "gpu":
            continue
        if kind is None:
            untyped += count
        elif mig_profile(kind):
            profile = mig_profile(kind) or ""
            slices[profile] += count
            if types.setdefault(profile, kind) != kind:
                notes.append(
                    f"MIG {profile} slices under two GRES types ({types[profile]}, {kind}):"
                    f" scripts ask for {types[profile]}"
                )
        elif vendor_only(kind):
            untyped += count
            notes.append(
                f'GRES type "{kind}" ({gres}) names a vendor, not a GPU model: '
                "gpu_type any, so only workloads asking for any GPU go here"
            )
        else:
            models[kind] += count
    if not models and not untyped and not slices:
        return Gpus(None, 0, None, (), tuple(notes))
    kind, count = min(models.items(), key=lambda kv: (-kv[1], kv[0]), default=("", 0))
    # the whole GPUs' type (nvidia_a100-sxm4-40gb), else a slice's (nvidia_a100_1g.10gb), names
    # the model whose table says how many slices a GPU holds
    layout, mig_notes = mig_layout(dict(slices), kind or next(iter(types.values()), None))
    notes += mig_notes
    mig = tuple(layout)
    mig_types = tuple(sorted((p, k) for p, k in types.items() if k != p))
    cut = sum(g for g, _ in mig)
    if models:
        others = {k: c for k, c in models.items() if k != kind}
        if others:
            shown = ", ".join(f"{c} × {k}" for k, c in sorted(others.items()))
            notes.append(
                f"nodes with several GPU models ({gres}): counted as {count} × {kind};"
                f" {shown} left out"
            )
        gpu_type = gpu_type_of(kind)
        exact = kind if kind != gpu_type else None
        return Gpus(gpu_type, count + cut, exact, mig, tuple(notes), mig_types)
    if untyped or not mig:
        notes.append(
            f"GPUs without a model (GRES {gres}): gpu_type any, so only workloads "
            "asking for any GPU type go here; Type= in gres.conf would name the model"
        )
        return Gpus("any", untyped + cut, None, mig, tuple(notes), mig_types)
    notes.append(
        f"every GPU is cut into MIG slices (GRES {gres}); the GPU model is unknown: gpu_type any"
    )
    return Gpus("any", cut, None, mig, tuple(notes), mig_types)


def parse_gres(text: str | None) -> list[tuple[str, str | None, int]]:
    """GRES entries as (name, type, count): "gpu:h100:8(S:0-1)", "gpu:8", "gpu", "shard:h100:4"."""
    found: list[tuple[str, str | None, int]] = []
    if not text or text.strip().upper() in ("(NULL)", "N/A"):
        return found
    for entry in split_top(text, "()"):
        bits = entry.split("(", 1)[0].split(":")
        name, rest = bits[0], bits[1:]
        count = 1
        if rest and rest[-1].isdigit():
            count = int(rest.pop())
        found.append((name, ":".join(rest) or None, count))
    return found


def node_type(node: SlurmNode) -> tuple[NodeType, tuple[str, ...]]:
    g = gpus_of(node.gres)
    t = NodeType(
        g.gpu_type,
        g.gpus,
        g.gres_type,
        g.mig,
        max(node.cpus, 1),
        max(node.memory, 1),
        tuple(sorted(set(node.features))),
        g.mig_types,
    )
    notes = g.notes
    if node.memory <= 1:
        notes += ("RealMemory is not configured in slurm.conf (Slurm says 1 MB)",)
    return t, notes
