"""GPU names as clusters spell them → router's short GPU types and MIG layouts.

Shared by the Slurm and Kubernetes importers, so `nvidia_h100_80gb_hbm3` (Slurm's NVML
autodetect), `NVIDIA-H100-80GB-HBM3` (the GPU operator's product label), `H100` (a hand-written
gres.conf) and `nvidia-h100-80gb` (GKE's accelerator label) all become `h100`: the word a
workload asks for. Memory size and form factor are dropped (a100 40GB and 80GB are both a100).

A MIG profile ("1g.10gb", also inside "nvidia_a100_3g.40gb" or "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb")
is a slice of a GPU, never a GPU. `mig_layout` lays a node's slice counts on the fewest GPUs
NVIDIA's tables allow (router/models/mig_geometry.py, which the inventory checks cuts
against): a layout of partitioned GPUs, one GPU holding several profiles where it can.
"""

from __future__ import annotations

import re

from router.models.mig_geometry import Cut, most_per_gpu, pack

# Short GPU types, by the product's model word. Longer names that share a prefix (a10g, l40s)
# are separate entries: the match is on the whole word.
GPU_MODELS = frozenset(
    {
        "gb300",
        "gb200",
        "b300",
        "b200",
        "b100",
        "gh200",
        "h200",
        "h100",
        "h800",
        "h20",
        "a800",
        "a100",
        "a40",
        "a30",
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
VENDOR_WORDS = frozenset({"nvidia", "tesla", "geforce", "amd", "instinct", "intel", "gpu"})
# A GRES type or product that names only a vendor ("gpu:nvidia:3"): GPUs of no stated model.
VENDOR_ONLY = frozenset({"nvidia", "amd", "intel", "tesla", "gpu"})
MIG_PROFILE = re.compile(r"(?:^|[_-])(?:mig-)?(\d+g\.\d+gb(?:\+me)?)$", re.I)


def mig_profile(text: str) -> str | None:
    """The MIG profile a GRES type or product names ("nvidia_a100_3g.40gb" → "3g.40gb")."""
    m = MIG_PROFILE.search(text.strip())
    return m.group(1).lower() if m else None


def slices_per_gpu(profile: str, gpu: str | None = None) -> int:
    """Slices of `profile` one GPU holds: the most on the GPU models `gpu` (a product or GRES
    name) may be, per NVIDIA's tables (router/models/mig_geometry.py): 7 × 1g.10gb, but 4 on
    an NVIDIA-A100-SXM4-40GB; 1 × 1g.10gb+me; 1 when no model has the profile."""
    return most_per_gpu(profile, gpu)


def gpu_type_of(name: str) -> str:
    """The short GPU type for a GRES type or product label (see the module docstring).

    The first word (after vendor words) that is one of GPU_MODELS wins; else a slug of the name
    without the vendor words ("NVIDIA-RTX-A6000" → rtx-a6000); a name of only vendor words → any.
    """
    words = [w for w in re.split(r"[^a-z0-9.]+", name.lower()) if w]
    for w in words:
        if w in GPU_MODELS:
            return w
        # "h100-80gb", "a100x" are split above; "h100sxm" and the like are not model words
    words = [w for w in words if w not in VENDOR_WORDS]
    slug = re.sub(r"[^a-z0-9.]+", "-", "-".join(words)).strip("-.")[:63].strip("-.")
    return slug or "any"


def vendor_only(name: str) -> bool:
    """Whether a GRES type names a vendor rather than a model ("nvidia" in gpu:nvidia:3)."""
    return name.strip().lower() in VENDOR_ONLY


def mig_layout(
    slices: dict[str, int], gpu: str | None = None, gpus: int | None = None, said: str = ""
) -> tuple[list[tuple[int, Cut]], list[str]]:
    """(GPUs, cut of each) groups holding `slices` ({profile: slices per node}) on GPUs named
    `gpu` (router/models/mig_geometry.py `pack`: the fewest GPUs, several profiles on one GPU
    where the tables allow), and notes. `gpus`: the node's GPUs in MIG mode as its labels
    give them (`said` names the labels); the cut is on that many GPUs when the slices can fill
    them, and a note says so when they cannot.

    14 × 1g.10gb is 2 GPUs of 7; 10 × 1g.10gb is 1 GPU of 7 and 1 of 3 (a GPU partly cut);
    3g.40gb + 4 × 1g.10gb is one A100-80GB. Profiles with no table here (1c.3g.20gb) are
    each on GPUs of their own, slices_per_gpu to a GPU.
    """
    packed = pack(slices, gpu, gpus)
    notes: list[str] = []
    if packed is None:
        groups: list[tuple[int, Cut]] = []
        for profile, count in sorted(slices.items()):
            per = slices_per_gpu(profile, gpu)
            whole, rest = divmod(count, per)
            if whole:
                groups.append((whole, ((profile, per),)))
            if rest:
                groups.append((1, ((profile, rest),)))
        if len(slices) > 1:
            notes.append(
                f"MIG slices {shown(slices)} taken as GPUs of one profile each: no NVIDIA"
                " table here says which profiles share a GPU"
            )
        packed_gpus = sum(n for n, _ in groups)
    else:
        groups = list(packed.groups)
        packed_gpus = packed.gpus
    if gpus is not None and gpus != packed_gpus:
        model = f"{packed.model} " if packed else ""
        if gpus < packed_gpus:
            notes.append(
                f"{said} gives {gpus} GPUs in MIG mode, but the node's slices ({shown(slices)})"
                f" need at least {packed_gpus} {model}GPUs: counted as {packed_gpus}; the"
                " labels or the slices are stale"
            )
        else:
            notes.append(
                f"{said} gives {gpus} GPUs in MIG mode; the node's {sum(slices.values())}"
                f" slices ({shown(slices)}) are on {packed_gpus}: {gpus - packed_gpus} GPUs in"
                " MIG mode hold no slice and are left out"
            )
    return groups, notes


def shown(slices: dict[str, int]) -> str:
    """Slice counts in words: "4 × 1g.10gb + 1 × 3g.40gb"."""
    return " + ".join(f"{n} × {p}" for p, n in sorted(slices.items()))


def cut_text(cut: Cut) -> str:
    """One GPU's cut in words: "4 × 1g.10gb + 1 × 3g.40gb"."""
    return " + ".join(f"{n} × {p}" for p, n in cut)
