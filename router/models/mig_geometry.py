"""Which MIG cuts real GPUs allow: NVIDIA's placement tables, and an exact check of one GPU's cut.

A MIG GPU instance takes a fixed run of memory slices that starts at one of its profile's start
slots; two instances never share a memory slice. Sources:

* NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles" (the profiles, their memory
  fractions and instance counts per GPU model) and "Getting Started with MIG" (`nvidia-smi mig
  -lgipp`: on A100 / H100 the 1g profile at {0,1,2,3,4,5,6}:1, the 1g of double memory at
  {0,2,4,6}:2, 2g at {0,2,4}:2, 3g at {0,4}:4, 4g at {0}:4, 7g at {0}:8), on the memory-slice
  axis (nvml.h: `nvmlGpuInstancePlacement_t.start` is the first occupied memory slice);
  https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html
* The A30's 4 memory slices: 1g at {0,1,2,3}:1, 2g at {0,2}:2, 4g at {0}:4 (the guide's A30
  table; NVIDIA go-nvml's A30 placements).
* The profile names of each model: NVIDIA mig-parted, deployments/systemd/config-default.yaml
  (https://github.com/NVIDIA/mig-parted). A profile with media extensions (`+me`) is one per GPU.

Profile names alone do not say the model (`1g.10gb` is an A100-40GB's 2-slice 1g and an
A100-80GB's or H100-80GB's 1-slice one), so a cut is checked on every model its GPU type allows
and holds if one of them can carry it. Models without a table here (B300, GB300, RTX PRO 6000,
GB200 variants not listed) and compute-instance profiles (`1c.3g.20gb`, several compute
instances in one GPU instance) are unknown: `check` returns None and the caller keeps the
compute-slice check only. GPU types NVIDIA makes without MIG (`NO_MIG`: a10g, l4, t4, ...)
are refused.

An ambiguous type resolves by its profiles: on an `a100`, `1g.10gb: 7` is an A100-80GB's cut
(an A100-40GB's 1g.10gb takes 2 memory slices, 4 at most) and `1g.5gb` an A100-40GB's. All
groups of one node are one model (`check_node`): an `a100` node cut `1g.10gb: 7` on some GPUs
and `3g.20gb: 2` on others is refused, since no A100 has both.

`pack` turns a node's slice counts (what the Kubernetes device plugin and Slurm's GRES
report: slices per node, not per GPU) into cuts of the fewest GPUs that hold them, or of the
count the node's labels give: one GPU of 3g.40gb + 4 × 1g.10gb is one A100-80GB, not two.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from router.errors import did_you_mean


@dataclass(frozen=True)
class Shape:
    """Where a profile's GPU instance can sit: `size` memory slices from one of `starts`; at
    most `most` of them on one GPU."""

    size: int
    starts: tuple[int, ...]
    most: int


@dataclass(frozen=True)
class GpuModel:
    """A MIG GPU: `slices` memory slices, and the shape of each profile it offers."""

    name: str  # as NVIDIA writes it: A100-40GB
    families: tuple[str, ...]  # the gpu_type words it goes by (router/importers/gpu.py)
    memory_gb: int
    slices: int
    profiles: dict[str, Shape]


def _eight(name: str, families: tuple[str, ...], gb: int, names: str) -> GpuModel:
    """A model of 8 memory slices and 7 compute slices (Ampere, Hopper, Blackwell datacenter
    GPUs); `names`: its 1g, 1g+me, 1g of double memory, 2g, 3g, 4g and 7g profiles."""
    one, one_me, one_double, two, three, four, seven = names.split()
    shapes = {
        one: Shape(1, (0, 1, 2, 3, 4, 5, 6), 7),
        one_me: Shape(1, (0, 1, 2, 3, 4, 5, 6), 1),
        one_double: Shape(2, (0, 2, 4, 6), 4),
        two: Shape(2, (0, 2, 4), 3),
        three: Shape(4, (0, 4), 2),
        four: Shape(4, (0,), 1),
        seven: Shape(8, (0,), 1),
    }
    return GpuModel(name, families, gb, 8, shapes)


MODELS: tuple[GpuModel, ...] = (
    GpuModel(
        "A30-24GB",
        ("a30",),
        24,
        4,
        {
            "1g.6gb": Shape(1, (0, 1, 2, 3), 4),
            "1g.6gb+me": Shape(1, (0, 1, 2, 3), 1),
            "2g.12gb": Shape(2, (0, 2), 2),
            "2g.12gb+me": Shape(2, (0, 2), 1),
            "4g.24gb": Shape(4, (0,), 1),
        },
    ),
    _eight(
        "A100-40GB",
        ("a100", "a800"),
        40,
        "1g.5gb 1g.5gb+me 1g.10gb 2g.10gb 3g.20gb 4g.20gb 7g.40gb",
    ),
    _eight(
        "A100-80GB",
        ("a100", "a800"),
        80,
        "1g.10gb 1g.10gb+me 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb",
    ),
    _eight(
        "H100-80GB",
        ("h100", "h800"),
        80,
        "1g.10gb 1g.10gb+me 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb",
    ),
    _eight(
        "H100-94GB",  # H100 NVL, H800 NVL
        ("h100", "h800"),
        94,
        "1g.12gb 1g.12gb+me 1g.24gb 2g.24gb 3g.47gb 4g.47gb 7g.94gb",
    ),
    _eight(
        "H100-96GB",  # also GH200 96GB and H20
        ("h100", "gh200", "h20"),
        96,
        "1g.12gb 1g.12gb+me 1g.24gb 2g.24gb 3g.48gb 4g.48gb 7g.96gb",
    ),
    _eight(
        "H200-141GB",  # also H200 NVL
        ("h200",),
        141,
        "1g.18gb 1g.18gb+me 1g.35gb 2g.35gb 3g.71gb 4g.71gb 7g.141gb",
    ),
    _eight(
        "GH200-144GB",
        ("gh200",),
        144,
        "1g.18gb 1g.18gb+me 1g.36gb 2g.36gb 3g.72gb 4g.72gb 7g.144gb",
    ),
    _eight(
        "B200-180GB",
        ("b200",),
        180,
        "1g.23gb 1g.23gb+me 1g.45gb 2g.45gb 3g.90gb 4g.90gb 7g.180gb",
    ),
    _eight(
        "GB200-186GB",
        ("gb200",),
        186,
        "1g.23gb 1g.23gb+me 1g.47gb 2g.47gb 3g.93gb 4g.93gb 7g.186gb",
    ),
)
KNOWN = frozenset(p for m in MODELS for p in m.profiles)
FAMILIES = frozenset(f for m in MODELS for f in m.families)
# GPU types (router/importers/gpu.py's words) of GPUs without MIG: a cut of one is refused
# (NVIDIA's guide lists MIG on A30, A100, H100, H200, GH200, B200 and later datacenter GPUs).
NO_MIG = frozenset(
    {
        "a40",
        "a16",
        "a10g",
        "a10",
        "a2",
        "l40s",
        "l40",
        "l20",
        "l4",
        "t4",
        "v100",
        "p100",
        "p40",
        "p4",
        "k80",
        "mi300x",
        "mi300a",
        "mi250x",
        "mi250",
        "mi210",
        "mi100",
    }
)


@dataclass(frozen=True)
class Verdict:
    """A cut checked: on which model it holds and a placement ((profile, start slot), ...)
    that shows it, or why no model its GPU type allows can carry it."""

    ok: bool
    model: str = ""
    placement: tuple[tuple[str, int], ...] = ()
    reason: str = ""
    hint: str = ""  # the profiles the GPU type's models have, when it has none of the cut's


def models_for(gpu_type: str | None) -> tuple[GpuModel, ...] | None:
    """The models a gpu_type may be: every model for none or `any`; a family's (a100: 40GB
    and 80GB), narrowed by a memory word (a100-40gb); None for a type with no table here."""
    if gpu_type in (None, "any"):
        return MODELS
    words = re.split(r"[^a-z0-9]+", str(gpu_type).lower())
    family = next((w for w in words if w in FAMILIES), None)
    if family is None:
        return None
    found = tuple(m for m in MODELS if family in m.families)
    sizes = {int(w[:-2]) for w in words if re.fullmatch(r"[0-9]+gb", w)}
    narrowed = tuple(m for m in found if m.memory_gb in sizes)
    return narrowed or found


def most_per_gpu(profile: str, gpu: str | None = None) -> int:
    """The most slices of `profile` one GPU holds on the models `gpu` may be (a GPU type or a
    product name: NVIDIA-A100-SXM4-40GB is an A100-40GB) that have it, else on any model that
    has it; 1 when no model has it."""
    for pool in (models_for(gpu) or MODELS, MODELS):
        found = [m.profiles[profile].most for m in pool if profile in m.profiles]
        if found:
            return max(found)
    return 1


def check(cut: dict[str, int], gpu_type: str | None) -> Verdict | None:
    """Whether one GPU of `gpu_type` can be cut into `cut` (profile → slices); None when a
    profile or the GPU type has no table here (the caller's compute-slice check stands)."""
    if no_mig(gpu_type):
        reason = f"gpu_type {gpu_type} has no MIG: NVIDIA's MIG GPUs are the A30, A100, H100,"
        reason += " H200, GH200, B200 and GB200"
        return Verdict(False, reason=reason, hint=_mig_hint(gpu_type))
    candidates = models_for(gpu_type)
    if candidates is None or not cut or any(p not in KNOWN for p in cut):
        return None
    shown = " + ".join(f"{n} × {p}" for p, n in cut.items())
    gpu = f"{gpu_type} GPU" if gpu_type not in (None, "any") else "MIG GPU"
    having = [m for m in candidates if all(p in m.profiles for p in cut)]
    if not having:
        offered = [f"{_a(m.name)} has {', '.join(m.profiles)}" for m in candidates]
        return Verdict(
            False,
            reason=f"no {gpu} can be cut into {shown}: {_no_model(cut, gpu_type, candidates)}",
            hint="; ".join(offered) if candidates != MODELS else "",
        )
    reasons: list[str] = []
    for model in having:
        found = None if _too_much(cut, model) else _place(cut, model)
        if found is not None:
            return Verdict(True, model.name, found)
        reasons.append(
            _too_much(cut, model)
            or f"no start slots fit on {_a(model.name)} ({_starts(cut, model)})"
        )
    return Verdict(False, reason=f"no {gpu} can be cut into {shown}: {'; '.join(reasons)}")


def no_mig(gpu_type: str | None) -> bool:
    """Whether `gpu_type` is a GPU made without MIG (an l4, an a10g-24gb)."""
    words = re.split(r"[^a-z0-9]+", str(gpu_type or "").lower())
    return any(w in NO_MIG for w in words) and not any(w in FAMILIES for w in words)


def _mig_hint(gpu_type: str | None) -> str:
    """What to write instead: the MIG type the name is close to, and what MIG types there are."""
    families = sorted(FAMILIES)
    close = did_you_mean(str(gpu_type), families)
    parts = [close] if close else []
    parts.append("GPUs without MIG are whole: remove the mig groups")
    return "; ".join([*parts, f"MIG GPU types: {', '.join(families)}"])


def check_node(cuts: list[dict[str, int]], gpu_type: str | None) -> tuple[int, Verdict] | None:
    """The first of a node's cuts (its mig groups) that no model carries together with an
    earlier one, as (index, why), or None: a node's GPUs are of one model. No type, `any` or
    a type of no table is not judged here (`check` judges each cut alone)."""
    candidates = models_for(gpu_type)
    if gpu_type in (None, "any") or candidates is None or len(cuts) < 2:
        return None
    if any(p not in KNOWN for cut in cuts for p in cut):
        return None
    holding = [frozenset(m.name for m in candidates if _holds(cut, m)) for cut in cuts]
    if any(not h for h in holding):
        return None  # a cut no model carries: `check` says why, at it
    common = holding[0]
    for i in range(1, len(cuts)):
        if not common & holding[i]:
            j = next(j for j in range(i) if not holding[j] & holding[i])
            reason = (
                f"one node's GPUs are one model, and no {gpu_type} GPU model has both cuts:"
                f" {_shown(cuts[i])} fits only {_names(holding[i])},"
                f" mig group {j + 1}'s {_shown(cuts[j])} only {_names(holding[j])}"
            )
            offered = "; ".join(f"{_a(m.name)} has {', '.join(m.profiles)}" for m in candidates)
            return i, Verdict(False, reason=reason, hint=offered)
        common &= holding[i]
    return None


def _holds(cut: dict[str, int], model: GpuModel) -> bool:
    return (
        all(p in model.profiles for p in cut)
        and _too_much(cut, model) is None
        and _place(cut, model) is not None
    )


def _shown(cut: dict[str, int]) -> str:
    return " + ".join(f"{n} × {p}" for p, n in cut.items())


def _names(names: frozenset[str]) -> str:
    return " or ".join(_a(n) for n in sorted(names))


def _a(name: str) -> str:
    """`name` with its article: an A100-40GB, an H100-80GB, a B200-180GB."""
    return f"{'an' if name[0] in 'AEFHILMNORSX' else 'a'} {name}"


def _too_much(cut: dict[str, int], model: GpuModel) -> str | None:
    """Why `cut` cannot fit `model` by counting alone: memory slices, or a profile's limit."""
    used = sum(model.profiles[p].size * n for p, n in cut.items())
    if used > model.slices:
        verb = "it takes" if sum(cut.values()) == 1 else "they take"
        sizes = ", ".join(f"{model.profiles[p].size} per {p}" for p in cut)
        return f"{verb} {used} of {_a(model.name)}'s {model.slices} memory slices ({sizes})"
    for p, n in cut.items():
        if n > model.profiles[p].most:
            return f"{_a(model.name)} holds at most {model.profiles[p].most} × {p}"
    return None


def _starts(cut: dict[str, int], model: GpuModel) -> str:
    """Each profile's start slots on `model`: "4g.20gb starts at 0; 2g.10gb at 0, 2 or 4"."""
    parts: list[str] = []
    for p in cut:
        starts = [str(s) for s in model.profiles[p].starts]
        slots = starts[0] if len(starts) == 1 else ", ".join(starts[:-1]) + f" or {starts[-1]}"
        parts.append(f"{p} {'starts ' if not parts else ''}at {slots}")
    return "; ".join(parts)


def _owners(profile: str) -> str:
    return ", ".join(m.name for m in MODELS if profile in m.profiles)


def _no_model(cut: dict[str, int], gpu_type: str | None, candidates: tuple[GpuModel, ...]) -> str:
    """Why no candidate model has every profile of `cut`."""
    if any(all(p in m.profiles for p in cut) for m in MODELS):
        # the profiles go together on some model, only not on this gpu_type's
        first = next((p for p in cut if not any(p in m.profiles for m in candidates)), "")
        first = first or next(iter(cut))
        names = " or ".join(_a(m.name) for m in candidates)
        has = "which has no" if len(candidates) == 1 else "none of which has"
        return f"gpu_type {gpu_type} is {names}, {has} {first} (a profile of {_owners(first)})"
    order = sorted(cut, key=lambda p: (_owners(p), p))
    for a, b in itertools.combinations(order, 2):
        if not any(a in m.profiles and b in m.profiles for m in MODELS):
            return f"{a} ({_owners(a)}) and {b} ({_owners(b)}) are profiles of different GPUs"
    return f"no GPU has all of {', '.join(order)}"


def _place(cut: dict[str, int], model: GpuModel) -> tuple[tuple[str, int], ...] | None:
    """A placement of `cut` on `model` ((profile, start), ... largest first), or None: an exact
    search over start slots; instances of one profile take increasing starts (no symmetry)."""
    items = sorted(
        ((p, model.profiles[p]) for p, n in cut.items() for _ in range(n)),
        key=lambda item: (-item[1].size, item[0]),
    )
    free = [True] * model.slices

    def go(i: int, low: int) -> Iterator[list[tuple[str, int]]]:
        if i == len(items):
            yield []
            return
        profile, shape = items[i]
        for start in shape.starts:
            run = range(start, start + shape.size)
            if start < low or not all(free[s] for s in run):
                continue
            for s in run:
                free[s] = False
            same = i + 1 < len(items) and items[i + 1][0] == profile
            for rest in go(i + 1, start + 1 if same else 0):
                yield [(profile, start), *rest]
            for s in run:
                free[s] = True

    found = next(go(0, 0), None)
    return tuple(found) if found is not None else None


# ---- a node's slice counts as cuts of its GPUs ------------------------------------------

Cut = tuple[tuple[str, int], ...]  # (profile, slices on one GPU), by profile
_STATES = 6_000  # count vectors a node's packing may search; past it, None (per profile)


@dataclass(frozen=True)
class Packing:
    """A node's slices laid on its GPUs: (GPUs, the cut of each) groups, on one model."""

    model: str
    groups: tuple[tuple[int, Cut], ...]
    fewest: int  # the fewest GPUs that hold the slices on this model

    @property
    def gpus(self) -> int:
        return sum(n for n, _ in self.groups)


def pack(slices: dict[str, int], gpu: str | None, gpus: int | None = None) -> Packing | None:
    """`slices` (profile → slices on a node) cut onto the fewest GPUs of a model `gpu` (a GPU
    type or product name) may be, or onto exactly `gpus` when the slices can fill that many
    (each GPU holding at least one); None when a profile or the model has no table here, or
    the search would be too large. On a tie of models, the later (larger) one: an a100's
    8 × 1g.10gb is an A100-80GB's 7 + 1 (as most_per_gpu reads it).

    Every GPU cut alike when the counts divide into one full cut (mig-parted's all-balanced:
    2 × 1g.10gb + 2g.20gb + 3g.40gb each); else the fullest cuts first, one profile per GPU
    before several (all-1g.10gb GPUs beside all-3g.40gb ones)."""
    counts = {p: n for p, n in sorted(slices.items()) if n > 0}
    candidates = models_for(gpu)
    if not counts or candidates is None or any(p not in KNOWN for p in counts):
        return None
    best: Packing | None = None
    for model in candidates:
        if not all(p in model.profiles for p in counts):
            continue
        found = _pack_on(model, counts, gpus)
        if found is None:
            return None
        exact = gpus is not None and found.gpus == gpus
        best_exact = best is not None and gpus is not None and best.gpus == gpus
        if best is None or (exact, -found.fewest) >= (best_exact, -best.fewest):
            best = found
    return best


def _pack_on(model: GpuModel, counts: dict[str, int], gpus: int | None) -> Packing | None:
    profiles = tuple(counts)
    total = tuple(counts.values())
    states = 1
    for n in total:
        states *= n + 1
    if states > _STATES:
        return None
    cuts = _cuts(model, profiles, total)
    memo: dict[tuple[tuple[int, ...], int], bool] = {}

    def can(v: tuple[int, ...], j: int) -> bool:
        """Whether v is exactly j cuts, each of one slice or more."""
        if j == 0 or not any(v):
            return j == 0 and not any(v)
        if sum(v) < j or _memory(model, profiles, v) > j * model.slices:
            return False
        key = (v, j)
        if key not in memo:
            memo[key] = any(
                all(a <= b for a, b in zip(c, v, strict=True))
                and can(tuple(b - a for a, b in zip(c, v, strict=True)), j - 1)
                for c in cuts
            )
        return memo[key]

    low = max(1, -(-_memory(model, profiles, total) // model.slices))
    fewest = next(j for j in range(low, sum(total) + 1) if can(total, j))
    j = gpus if gpus is not None and fewest <= gpus <= sum(total) else fewest
    chosen: list[tuple[int, ...]] = []
    uniform = tuple(n // j for n in total)
    if all(n % j == 0 for n in total) and uniform in cuts and _full(model, profiles, uniform):
        chosen = [uniform] * j
    else:
        v = total
        for left in range(j, 0, -1):
            c = next(
                c
                for c in cuts
                if all(a <= b for a, b in zip(c, v, strict=True))
                and can(tuple(b - a for a, b in zip(c, v, strict=True)), left - 1)
            )
            chosen.append(c)
            v = tuple(b - a for a, b in zip(c, v, strict=True))
    groups: dict[Cut, int] = {}
    for c in chosen:
        cut = tuple((p, n) for p, n in zip(profiles, c, strict=True) if n)
        groups[cut] = groups.get(cut, 0) + 1
    ordered = sorted(groups.items(), key=lambda g: [(p, -n) for p, n in g[0]])
    return Packing(model.name, tuple((n, cut) for cut, n in ordered), fewest)


_CUTS: dict[tuple[str, tuple[str, ...], tuple[int, ...]], list[tuple[int, ...]]] = {}


def _cuts(
    model: GpuModel, profiles: tuple[str, ...], caps: tuple[int, ...]
) -> list[tuple[int, ...]]:
    """Every cut of `model` in `profiles` (slices of each, at most `caps`), preferred first:
    most memory slices, fewest profiles, most slices."""
    key = (model.name, profiles, caps)
    if key not in _CUTS:
        ranges = [
            range(min(c, model.profiles[p].most) + 1) for p, c in zip(profiles, caps, strict=True)
        ]
        found = [
            v
            for v in itertools.product(*ranges)
            if any(v) and _holds({p: n for p, n in zip(profiles, v, strict=True) if n}, model)
        ]
        found.sort(
            key=lambda v: (
                -_memory(model, profiles, v),
                sum(1 for n in v if n),
                -sum(v),
                [-n for n in v],
            )
        )
        _CUTS[key] = found
    return _CUTS[key]


def _memory(model: GpuModel, profiles: tuple[str, ...], v: tuple[int, ...]) -> int:
    return sum(model.profiles[p].size * n for p, n in zip(profiles, v, strict=True))


def _full(model: GpuModel, profiles: tuple[str, ...], v: tuple[int, ...]) -> bool:
    """Whether no slice of the node's profiles can be added to cut v (a GPU cut full)."""
    for i in range(len(profiles)):
        more = tuple(n + (k == i) for k, n in enumerate(v))
        if _holds({p: n for p, n in zip(profiles, more, strict=True) if n}, model):
            return False
    return True
