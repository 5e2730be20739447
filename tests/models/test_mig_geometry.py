"""MIG cuts real GPUs allow (router/models/mig_geometry.py, NVIDIA's placement tables): cuts
per GPU model, the inventory's errors at their keys, and a placement behind every cut the check
accepts."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from router.errors import LoadError
from router.importers import render_inventory
from router.importers.kubernetes import import_cluster
from router.importers.slurm.nodes import gpus_of
from router.models import Inventory, NodePool, load_inventory
from router.models.mig_geometry import MODELS, GpuModel, Verdict, check, models_for, pack
from tests.importers.test_k8s_fixtures import node as k8s_node
from tests.importers.test_k8s_fixtures import nodes as k8s_nodes
from tests.importers.test_slurm_fixtures import inventory as slurm_fixture
from tests.models.test_inventory import POOL, error_of
from tests.profiles import BOUNDED

MODEL = {m.name: m for m in MODELS}
K8S_DATA = Path(__file__).parents[1] / "k8s" / "data"


@pytest.mark.parametrize(
    ("gpu_type", "cut", "model"),
    [
        ("a100", {"3g.20gb": 2}, "A100-40GB"),
        ("a100", {"4g.20gb": 1, "2g.10gb": 1, "1g.5gb": 1}, "A100-40GB"),
        ("a100-40gb", {"1g.10gb": 4}, "A100-40GB"),  # the 40GB card's 1g of 2 memory slices
        ("a100", {"2g.10gb": 3, "1g.5gb": 1}, "A100-40GB"),
        ("a100", {"1g.5gb+me": 1, "1g.5gb": 6}, "A100-40GB"),
        ("a100", {"1g.10gb": 7}, "A100-80GB"),
        ("a100", {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}, "A100-80GB"),
        ("h100", {"4g.40gb": 1, "3g.40gb": 1}, "H100-80GB"),
        ("h100", {"1g.20gb": 4}, "H100-80GB"),
        ("h100-nvl", {"3g.47gb": 1, "2g.24gb": 1, "1g.12gb": 2}, "H100-94GB"),
        ("h200", {"1g.18gb": 7}, "H200-141GB"),
        ("h200", {"4g.71gb": 1, "3g.71gb": 1}, "H200-141GB"),
        ("a30", {"1g.6gb": 4}, "A30-24GB"),
        ("a30", {"2g.12gb": 1, "1g.6gb": 2}, "A30-24GB"),
        ("a30", {"4g.24gb": 1}, "A30-24GB"),
        ("b200", {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1}, "B200-180GB"),
        ("any", {"7g.80gb": 1}, "A100-80GB"),
    ],
)
def test_cuts_real_gpus_have(gpu_type: str, cut: dict[str, int], model: str) -> None:
    verdict = check(cut, gpu_type)
    assert verdict is not None and verdict.ok, verdict
    assert verdict.model == model
    assert _valid(MODEL[model], cut, verdict.placement)


@pytest.mark.parametrize(
    ("gpu_type", "cut", "reason"),
    [
        (
            "a100",
            {"3g.20gb": 2, "1g.5gb": 1},
            "no a100 GPU can be cut into 2 × 3g.20gb + 1 × 1g.5gb: they take 9 of an"
            " A100-40GB's 8 memory slices (4 per 3g.20gb, 1 per 1g.5gb)",
        ),
        (
            "a30",
            {"1g.6gb": 7},
            "no a30 GPU can be cut into 7 × 1g.6gb: they take 7 of an A30-24GB's 4 memory slices",
        ),
        (
            "a100-40gb",
            {"1g.10gb": 7},
            "they take 14 of an A100-40GB's 8 memory slices (2 per 1g.10gb)",
        ),
        (
            "a30",
            {"1g.10gb": 1},
            "gpu_type a30 is an A30-24GB, which has no 1g.10gb (a profile of A100-40GB,"
            " A100-80GB, H100-80GB)",
        ),
        (
            "any",
            {"1g.5gb": 1, "1g.20gb": 1},
            "1g.5gb (A100-40GB) and 1g.20gb (A100-80GB, H100-80GB) are profiles of different GPUs",
        ),
        (  # 1g.10gb goes with either, but no GPU has the other two
            "any",
            {"1g.10gb": 1, "1g.5gb": 1, "1g.20gb": 1},
            "1g.5gb (A100-40GB) and 1g.20gb (A100-80GB, H100-80GB) are profiles of different GPUs",
        ),
        (
            "h100",
            {"1g.6gb": 1},
            "gpu_type h100 is an H100-80GB or an H100-94GB or an H100-96GB, none of which has"
            " 1g.6gb (a profile of A30-24GB)",
        ),
        ("a100", {"1g.10gb+me": 2}, "an A100-80GB holds at most 1 × 1g.10gb+me"),
        (
            "a100",
            {"4g.20gb": 1, "2g.10gb": 2},
            "no start slots fit on an A100-40GB (4g.20gb starts at 0; 2g.10gb at 0, 2 or 4)",
        ),
    ],
)
def test_cuts_no_gpu_has(gpu_type: str, cut: dict[str, int], reason: str) -> None:
    verdict = check(cut, gpu_type)
    assert verdict is not None and not verdict.ok
    assert reason in verdict.reason


@pytest.mark.parametrize(
    ("gpu_type", "cut"),
    [
        ("b300", {"1g.10gb": 7}),  # a MIG GPU type with no table: the compute check only
        ("a100", {"1c.3g.20gb": 3}),  # compute instances inside one GPU instance
        ("any", {"1g.7gb": 1}),  # a profile of no model listed
    ],
)
def test_unknown_models_and_profiles_are_not_judged(gpu_type: str, cut: dict[str, int]) -> None:
    assert check(cut, gpu_type) is None


def test_gpu_type_narrows_by_family_and_memory() -> None:
    assert [m.name for m in models_for("a100") or ()] == ["A100-40GB", "A100-80GB"]
    assert [m.name for m in models_for("a100-80gb") or ()] == ["A100-80GB"]
    assert [m.name for m in models_for("nvidia-h100-94gb") or ()] == ["H100-94GB"]
    assert models_for("a10g") is None and models_for("any") == MODELS


def test_node_pool_refuses_a_cut_of_its_gpu_type() -> None:
    a30 = {**POOL, "gpu_type": "a30"}
    text = error_of(NodePool, {**a30, "mig": [{"gpus": 1, "slices": {"1g.6gb": 7}}]})
    assert "they take 7 of an A30-24GB's 4 memory slices" in text
    ok = NodePool.model_validate({**a30, "mig": [{"gpus": 1, "slices": {"1g.6gb": 4}}]})
    assert ok.slices_per_node == {"1g.6gb": 4}


INVENTORY = """clusters:
  - name: k8s
    backend: kubernetes
    node_pools:
      - name: a100
        nodes: 2
        gpus_per_node: 8
        gpu_type: GPU_TYPE
        cpus_per_node: 96
        memory_per_node: 1TiB
        mig:
          - {gpus: 4, slices: {1g.10gb: 7}}
          - gpus: 2
            slices: SLICES
"""


@pytest.mark.parametrize(
    ("gpu_type", "slices", "where", "message"),
    [
        (
            "a100",
            "{3g.20gb: 2, 1g.5gb: 1}",
            "14:13",
            "no a100 GPU can be cut into 2 × 3g.20gb + 1 × 1g.5gb: they take 9 of an"
            " A100-40GB's 8 memory slices",
        ),
        (  # one profile: at its count
            "a100-40gb",
            "{1g.5gb: 3}",
            "12:41",
            "no a100-40gb GPU can be cut into 7 × 1g.10gb: they take 14 of an A100-40GB's",
        ),
        ("a30", "{1g.6gb: 2}", "12:41", "gpu_type a30 is an A30-24GB, which has no 1g.10gb"),
    ],
)
def test_inventory_errors_at_the_cut(
    tmp_path: Path, gpu_type: str, slices: str, where: str, message: str
) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY.replace("GPU_TYPE", gpu_type).replace("SLICES", slices))
    with pytest.raises(LoadError) as info:
        load_inventory(path)
    text = info.value.format()
    assert f"{path}:{where}" in text, text
    assert message in text
    if gpu_type == "a30":  # the hint says what an a30 offers
        assert "\n  an A30-24GB has 1g.6gb, 1g.6gb+me, 2g.12gb, 2g.12gb+me, 4g.24gb" in text


def test_imported_media_extension_slices_are_one_per_gpu() -> None:
    # NVML's type names; a GPU holds one +me slice, so two are on two GPUs (before: one GPU
    # of 2 × 1g.10gb+me, which no GPU can be)
    g = gpus_of("gpu:a100:2,gpu:nvidia_a100_1g.10gb+me:2,gpu:nvidia_a100_1g.10gb:12")
    # one +me slice per GPU: the 2 on 2 GPUs, beside 6 × 1g.10gb each
    assert g.mig == ((2, (("1g.10gb", 6), ("1g.10gb+me", 1))),)
    for _, cut in g.mig:
        verdict = check(dict(cut), "a100")
        assert verdict is not None and verdict.ok


# ---- every accepted cut has a placement; every refused one has none (brute force) ---------


def _valid(model: GpuModel, cut: dict[str, int], placement: tuple[tuple[str, int], ...]) -> bool:
    """Whether `placement` puts exactly `cut` on `model`: starts from the table, in range, no
    memory slice twice, no profile over its limit."""
    taken: list[int] = []
    for profile, start in placement:
        shape = model.profiles[profile]
        if start not in shape.starts or start + shape.size > model.slices:
            return False
        taken.extend(range(start, start + shape.size))
    counts = {p: sum(1 for q, _ in placement if q == p) for p in cut}
    limits = all(n <= model.profiles[p].most for p, n in counts.items())
    return len(taken) == len(set(taken)) and counts == cut and limits


def _exists(model: GpuModel, cut: dict[str, int]) -> bool:
    """Whether any choice of start slots places `cut` on `model`: every combination tried (the
    instances of one profile on distinct starts, since two at one start would overlap)."""
    per_profile = [
        [[(p, s) for s in starts] for starts in itertools.combinations(model.profiles[p].starts, n)]
        for p, n in cut.items()
    ]
    tries = itertools.product(*per_profile)
    return any(_valid(model, cut, tuple(itertools.chain(*t))) for t in tries)


@st.composite
def cuts(draw: st.DrawFn) -> tuple[GpuModel, dict[str, int]]:
    model = draw(st.sampled_from(MODELS))
    names = draw(st.lists(st.sampled_from(sorted(model.profiles)), min_size=1, max_size=3))
    cut = {p: draw(st.integers(1, 7)) for p in sorted(set(names))}
    return model, cut


@settings(BOUNDED, max_examples=60)
@given(cuts())
def test_accepted_cuts_have_a_placement_and_refused_ones_none(
    drawn: tuple[GpuModel, dict[str, int]],
) -> None:
    model, cut = drawn
    assert models_for(model.name.lower()) == (model,)  # a100-40gb: that one model
    verdict = check(cut, model.name.lower())
    assert verdict is not None
    assert verdict.ok == _exists(model, cut), (cut, verdict)
    if verdict.ok:
        assert verdict.model == model.name and _valid(model, cut, verdict.placement)


def _judged_groups(inv: Inventory) -> list[tuple[str, dict[str, int], Verdict | None]]:
    return [
        (ref.id, g.slices, check(g.slices, ref.target.gpu_type))
        for ref in inv.targets()
        for g in ref.target.mig
    ]


def test_importers_real_fixtures_give_cuts_the_tables_accept() -> None:
    """Both importers on their real captures (tests/importers/data/README.md): every MIG group
    is judged by a table (not left to the compute check) and holds."""
    gke = json.loads((K8S_DATA / "gke-nodes.json").read_text(encoding="utf-8"))
    inventories = [
        slurm_fixture("live-22.05-mig-sinfo.json", "live-22.05-mig-partitions.txt")[1],
        slurm_fixture("restd-nodes-23.11.1.json", "restd-partitions-23.11.1.json")[1],
        Inventory.model_validate(yaml.safe_load(render_inventory(import_cluster(gke)))),
    ]
    groups = [g for inv in inventories for g in _judged_groups(inv)]
    assert len(groups) >= 4, groups  # a100 14 slices; 23.11's 21; GKE's 1g.10gb and 3g.40gb
    for target, slices, verdict in groups:
        assert verdict is not None and verdict.ok, (target, slices, verdict)


@pytest.mark.parametrize(
    ("product", "layout"),
    [
        # a 40GB card's 1g.10gb takes 2 memory slices: 4 per GPU (before: 1 GPU of 7 and 1 of 1)
        ("NVIDIA-A100-SXM4-40GB", [{"gpus": 2, "slices": {"1g.10gb": 4}}]),
        (
            "NVIDIA-A100-SXM4-80GB",
            [{"gpus": 1, "slices": {"1g.10gb": 7}}, {"gpus": 1, "slices": {"1g.10gb": 1}}],
        ),
    ],
)
def test_kubernetes_import_reads_the_model_off_the_product(
    product: str, layout: list[dict[str, object]]
) -> None:
    labels = {"nvidia.com/gpu.product": product, "router.dev/pool": "mig"}
    extra = {"nvidia.com/gpu": "2", "nvidia.com/mig-1g.10gb": "8"}
    (pool,) = import_cluster(k8s_nodes(k8s_node("m", labels, extra=extra))).targets
    assert pool.fields["mig"] == layout
    for group in layout:
        slices = group["slices"]
        assert isinstance(slices, dict)
        verdict = check(slices, pool.fields["gpu_type"])
        assert verdict is not None and verdict.ok


def test_slurm_import_reads_the_model_off_the_whole_gpus_type() -> None:
    assert gpus_of("gpu:nvidia_a100-sxm4-40gb:2,gpu:nvidia_a100_1g.10gb:8").mig == (
        (2, (("1g.10gb", 4),)),
    )
    assert gpus_of("gpu:a100:2,gpu:nvidia_a100_1g.10gb:14").mig == ((2, (("1g.10gb", 7),)),)


# ---- stop 24: GPU types without MIG, one model per node, slices packed onto GPUs ----------


@pytest.mark.parametrize(
    ("gpu_type", "hint"),
    [("l4", "GPUs without MIG are whole"), ("a10", 'did you mean "a100"?'), ("t4", "a100, a30")],
)
def test_mig_on_a_gpu_type_without_it_is_refused_at_the_cut(
    tmp_path: Path, gpu_type: str, hint: str
) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY.replace("GPU_TYPE", gpu_type).replace("SLICES", "{1g.10gb: 2}"))
    with pytest.raises(LoadError) as info:
        load_inventory(path)
    text = info.value.format()
    assert f"{path}:12:23" in text, text  # the first group's `slices`
    assert f"gpu_type {gpu_type} has no MIG" in text and hint in text, text


def test_a_node_s_groups_must_fit_one_model(tmp_path: Path) -> None:
    """`a100` resolves by profiles: 7 × 1g.10gb is an A100-80GB's, 2 × 3g.20gb an
    A100-40GB's, each accepted alone; one node with both is refused at the second group."""
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY.replace("GPU_TYPE", "a100").replace("SLICES", "{3g.20gb: 2}"))
    with pytest.raises(LoadError) as info:
        load_inventory(path)
    text = info.value.format()
    assert f"{path}:14:13" in text, text
    assert (
        "no a100 GPU model has both cuts: 2 × 3g.20gb fits only an A100-40GB, mig group 1's"
        " 7 × 1g.10gb only an A100-80GB" in text
    ), text
    ok = INVENTORY.replace("GPU_TYPE", "a100").replace("SLICES", "{3g.40gb: 2}")
    path.write_text(ok)
    assert load_inventory(path).targets()[0].target.slices_per_node == {
        "1g.10gb": 28,
        "3g.40gb": 4,
    }


@pytest.mark.parametrize(
    ("slices", "gpu", "gpus", "model", "groups"),
    [
        # NVIDIA/gpu-operator#637 (kubectl describe node, A100): 6 × 1g.10gb, 4 × 2g.20gb
        (
            {"1g.10gb": 6, "2g.20gb": 4},
            "a100",
            None,
            "A100-80GB",
            [(2, {"1g.10gb": 3, "2g.20gb": 2})],
        ),
        # davidB/kubectl-view-allocations#258: one H100 NVL, mixed, all-balanced
        (
            {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1},
            None,
            None,
            "H100-94GB",
            [(1, {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1})],
        ),
        (
            {"1g.10gb": 4, "3g.40gb": 1},
            "a100",
            None,
            "A100-80GB",
            [(1, {"1g.10gb": 4, "3g.40gb": 1})],
        ),
        # tests/k8s/data/gke-nodes.json's A100 node: 4 GPUs in MIG mode by its gpu.count
        (
            {"1g.10gb": 14, "3g.40gb": 4},
            "NVIDIA-A100-SXM4-80GB",
            4,
            "A100-80GB",
            [(2, {"1g.10gb": 7}), (2, {"3g.40gb": 2})],
        ),
        # the labels give 3 GPUs (2 hold it): the slices laid on 3, each GPU holding some
        (
            {"1g.10gb": 7, "3g.40gb": 2},
            "a100",
            3,
            "A100-80GB",
            [(1, {"1g.10gb": 6}), (1, {"1g.10gb": 1}), (1, {"3g.40gb": 2})],
        ),
    ],
)
def test_pack_puts_a_node_s_slices_on_the_fewest_gpus(
    slices: dict[str, int],
    gpu: str | None,
    gpus: int | None,
    model: str,
    groups: list[tuple[int, dict[str, int]]],
) -> None:
    packed = pack(slices, gpu, gpus)
    assert packed is not None and packed.model == model
    assert [(n, dict(cut)) for n, cut in packed.groups] == groups
    for _, cut in packed.groups:  # every GPU's cut holds on that model
        verdict = check(dict(cut), model.lower())
        assert verdict is not None and verdict.ok, verdict
    assert {p: sum(n * dict(c).get(p, 0) for n, c in packed.groups) for p in slices} == slices


def _mig_node(gpu_count: str, extra: dict[str, str]) -> tuple[int, list[Any], list[str]]:
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "nvidia.com/gpu.count": gpu_count,
        "nvidia.com/mig.strategy": "mixed",
        "router.dev/pool": "mig",
    }
    (pool,) = import_cluster(k8s_nodes(k8s_node("m", labels, extra=extra))).targets
    return pool.fields["gpus_per_node"], pool.fields["mig"], [str(n) for n in pool.notes]


def test_kubernetes_import_puts_two_profiles_on_one_gpu() -> None:
    """One A100-80GB cut 3g.40gb + 4 × 1g.10gb beside 1 whole GPU: 2 GPUs, not 3 (before:
    one GPU per profile, gpus_per_node overstated)."""
    extra = {"nvidia.com/gpu": "1", "nvidia.com/mig-3g.40gb": "1", "nvidia.com/mig-1g.10gb": "4"}
    gpus, mig, notes = _mig_node("2", extra)
    assert gpus == 2
    assert mig == [{"gpus": 1, "slices": {"1g.10gb": 4, "3g.40gb": 1}}]
    assert not any("MIG mode" in str(n) for n in notes)  # nothing to reconcile


def test_kubernetes_import_says_when_the_gpu_count_cannot_hold_the_slices() -> None:
    extra = {"nvidia.com/gpu": "0", "nvidia.com/mig-3g.40gb": "2", "nvidia.com/mig-1g.10gb": "7"}
    gpus, mig, notes = _mig_node("1", extra)
    assert gpus == 2 and len(mig) == 2  # the slices need 2 A100-80GB: counted so
    assert any(
        "nvidia.com/gpu.count 1 gives 1 GPUs in MIG mode, but the node's slices (7 × 1g.10gb +"
        " 2 × 3g.40gb) need at least 2 A100-80GB GPUs: counted as 2" in str(n)
        for n in notes
    ), notes
