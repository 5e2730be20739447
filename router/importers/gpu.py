"""GPU names as clusters spell them → router's short GPU types and MIG layouts.

Shared by the Slurm and Kubernetes importers, so `nvidia_h100_80gb_hbm3` (Slurm's NVML
autodetect), `NVIDIA-H100-80GB-HBM3` (the GPU operator's product label), `H100` (a hand-written
gres.conf) and `nvidia-h100-80gb` (GKE's accelerator label) all become `h100`: the word a
workload asks for. Memory size and form factor are dropped (a100 40GB and 80GB are both a100).

A MIG profile ("1g.10gb", also inside "nvidia_a100_3g.40gb" or "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb")
is a slice of a GPU, never a GPU. `slices_per_gpu` says how many slices of a profile one GPU
holds (NVIDIA's tables in router/models/mig_geometry.py, which the inventory checks cuts
against), so a node's slice counts become a layout of partitioned GPUs.
"""

from __future__ import annotations

import re

from router.models.mig_geometry import most_per_gpu

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


def mig_layout(slices: dict[str, int], gpu: str | None = None) -> list[tuple[int, str, int]]:
    """(gpus, profile, slices per GPU) groups holding `slices` ({profile: slices per node}) on
    GPUs named `gpu` (see slices_per_gpu).

    14 × 1g.10gb is 2 GPUs of 7; 10 × 1g.10gb is 1 GPU of 7 and 1 of 3 (a GPU partly cut).
    """
    groups: list[tuple[int, str, int]] = []
    for profile, count in sorted(slices.items()):
        per = slices_per_gpu(profile, gpu)
        whole, rest = divmod(count, per)
        if whole:
            groups.append((whole, profile, per))
        if rest:
            groups.append((1, profile, rest))
    return groups
