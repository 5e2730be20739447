"""Hypothesis strategies for workloads, inventories and policies.

`policies()` builds valid policy TEXT from the language's own vocabulary (known workload
fields, target attributes, options and the strings the generated inventories use), so the
policies mean something; `grammar_texts()` is hypothesis' `from_lark` over grammar/router.lark,
syntactically shaped text with random names, for "the parser never crashes" tests.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from router.models import Inventory, Workload

KINDS = ("training", "inference", "batch", "notebook", "eval")
TEAMS = ("default", "research", "vision")
GPU_TYPES = ("h100", "a100", "l4")
CLUSTERS = ("hpc", "k8s")


# -- workloads -------------------------------------------------------------------------------
FieldValue = Any  # a value, or a strategy drawing values (st.integers(8, 64))


@st.composite
def workload_dicts(
    draw: st.DrawFn, /, name: str | None = None, max_gpus: int = 16, **fields: FieldValue
) -> dict[str, Any]:
    """A workload as written in workloads/*.yaml (a dict). Keyword arguments fix a field:
    a plain value, or a strategy to draw it from (`gpus=st.integers(8, 64)`); None leaves
    the field out."""
    doc: dict[str, Any] = {
        "name": name or draw(st.from_regex(r"w[a-z0-9]{0,6}", fullmatch=True)),
        "kind": draw(st.sampled_from(KINDS)),
        "image": "registry.example/app:1",
    }
    if draw(st.booleans()):
        doc["team"] = draw(st.sampled_from(TEAMS))
    gpus = draw(st.integers(0, max_gpus))
    doc["gpus"] = gpus
    if gpus and draw(st.booleans()):
        doc["gpu_type"] = draw(st.sampled_from(GPU_TYPES))
    doc["cpus"] = draw(st.integers(1, 64))
    doc["memory"] = f"{draw(st.integers(1, 256))}GiB"
    doc["duration"] = f"{draw(st.integers(1, 96))}h"
    doc["priority"] = draw(st.sampled_from(("low", "normal", "high")))
    if draw(st.booleans()):
        doc["labels"] = {"tier": draw(st.sampled_from(("prod", "dev")))}
    for key, value in sorted(fields.items()):
        if isinstance(value, st.SearchStrategy):
            value = draw(value)
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    if not doc.get("gpus") and "gpu_type" not in fields:
        doc.pop("gpu_type", None)  # a GPU type without GPUs is not a workload anyone writes
    return doc


def workloads(max_gpus: int = 16, **fields: FieldValue) -> st.SearchStrategy[Workload]:
    """Valid `Workload` models; keyword arguments fix or constrain fields, as in
    `workloads(kind="training", gpus=st.integers(8, 64))` (see workload_dicts). Its repr in
    a falsifying example is the workload's fields, not a whole platform."""
    return workload_dicts(max_gpus=max_gpus, **fields).map(Workload.model_validate)


# -- inventories -----------------------------------------------------------------------------
@st.composite
def _target(draw: st.DrawFn, name: str, backend: str) -> dict[str, Any]:
    gpus = draw(st.sampled_from((0, 4, 8)))
    t: dict[str, Any] = {
        "name": name,
        "nodes": draw(st.integers(1, 4)),
        "cpus_per_node": draw(st.sampled_from((16, 32, 64))),
        "memory_per_node": f"{draw(st.sampled_from((64, 256, 1024)))}GiB",
    }
    if gpus:
        # "any": untyped GPUs (only workloads asking for any GPU type fit there)
        t |= {"gpus_per_node": gpus, "gpu_type": draw(st.sampled_from((*GPU_TYPES, "any"))),
              "cost_per_gpu_hour": draw(st.sampled_from((1.0, 2.5)))}  # fmt: skip
    if backend == "slurm":
        t["max_time"] = f"{draw(st.sampled_from((24, 48, 72)))}h"
        if draw(st.booleans()):
            t["features"] = ["ib"]
    return t


@st.composite
def inventory_dicts(draw: st.DrawFn, max_targets: int = 3) -> dict[str, Any]:
    """An inventory as written in inventory.yaml: one Slurm and/or one Kubernetes cluster."""
    n = draw(st.integers(1, max_targets))
    backends = [draw(st.sampled_from(("slurm", "kubernetes"))) for _ in range(n)]
    clusters = []
    for cluster, backend in zip(CLUSTERS, ("slurm", "kubernetes"), strict=True):
        mine = [i for i, b in enumerate(backends) if b == backend]
        if not mine:
            continue
        key = "partitions" if backend == "slurm" else "node_pools"
        targets = [draw(_target(f"t{i}", backend)) for i in mine]
        clusters.append({"name": cluster, "backend": backend, key: targets})
    return {"clusters": clusters}


def inventories(max_targets: int = 3) -> st.SearchStrategy[Inventory]:
    """Valid `Inventory` models."""
    return inventory_dicts(max_targets).map(Inventory.model_validate)


# -- policies --------------------------------------------------------------------------------
def _string_atom() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(KINDS).map(lambda k: f'kind == "{k}"'),
        st.sampled_from(KINDS).map(lambda k: f'kind != "{k}"'),
        st.sampled_from(TEAMS).map(lambda t: f'team == "{t}"'),
        st.lists(st.sampled_from(KINDS), min_size=1, max_size=3, unique=True).map(
            lambda ks: "kind in [" + ", ".join(f'"{k}"' for k in ks) + "]"),
        st.just('labels.tier == "prod"'),
    )  # fmt: skip


def _number_atom() -> st.SearchStrategy[str]:
    ops = st.sampled_from((">", ">=", "<", "<=", "==", "!="))
    return st.one_of(
        st.tuples(ops, st.integers(0, 16)).map(lambda t: f"gpus {t[0]} {t[1]}"),
        st.tuples(ops, st.integers(1, 64)).map(lambda t: f"cpus {t[0]} {t[1]}"),
        st.tuples(ops, st.integers(1, 96)).map(lambda t: f"duration {t[0]} {t[1]}h"),
        st.tuples(ops, st.integers(1, 256)).map(lambda t: f"memory {t[0]} {t[1]}GiB"),
    )


def conditions(depth: int = 2) -> st.SearchStrategy[str]:
    """A workload condition over known fields (as text)."""
    atom = st.one_of(_string_atom(), _number_atom())
    return st.recursive(
        atom,
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(("and", "or")), inner).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"),
            inner.map(lambda c: f"not ({c})"),
        ),
        max_leaves=depth + 1,
    )  # fmt: skip


def _where() -> st.SearchStrategy[str | None]:
    return st.one_of(
        st.none(),
        st.sampled_from(GPU_TYPES).map(lambda g: f'gpu_type == "{g}"'),
        st.just("gpus_per_node >= workload.gpus"),
        st.just('"ib" in features'),
        st.just("max_time >= workload.duration"),
        st.sampled_from(CLUSTERS).map(lambda c: f'cluster == "{c}"'),
    )


_OPTIONS = {"slurm": ("exclusive", 'qos = "high"'), "kubernetes": ('queue = "q"', "hpa"),
            "any": ()}  # fmt: skip


@st.composite
def _route(draw: st.DrawFn, keyword: str) -> str:
    backend = draw(st.sampled_from(("slurm", "kubernetes", "any")))
    text = f"{keyword} {backend}"
    opts = (
        draw(st.lists(st.sampled_from(_OPTIONS[backend]), unique=True, max_size=2))
        if (_OPTIONS[backend])
        else []
    )
    if opts:
        text += " with " + ", ".join(opts)
    where = draw(_where())
    if where:
        text += f" where {where}"
    if draw(st.booleans()):
        text += " prefer lower cost"
    return text


@st.composite
def policies(draw: st.DrawFn, max_rules: int = 4, catch_all: bool | None = None) -> str:
    """The text of a valid policy over known field names and constants."""
    lines = ["policy generated", ""]
    if draw(st.booleans()):
        lines += [f"let big_job = {draw(st.integers(1, 16))}", ""]
    for i in range(draw(st.integers(0, 2))):
        lines += [f"deny d{i}:", f"  when {draw(conditions())}", f'  because "denied {i}"', ""]
    n = draw(st.integers(1, max_rules))
    for i in range(n):
        last = i == n - 1 and (catch_all if catch_all is not None else draw(st.booleans()))
        lines.append(f"rule r{i}:")
        if not last:
            lines.append(f"  when {draw(conditions())}")
        lines.append("  " + draw(_route("route")))
        if draw(st.integers(0, 3)) == 0:
            lines.append("  " + draw(_route("else route")))
        lines.append("")
    if draw(st.booleans()):
        lines += ["quota q0:", f"  for {draw(conditions(1))}",
                  f"  limit gpus <= {draw(st.integers(0, 32))}", ""]  # fmt: skip
    if draw(st.booleans()):
        lines += draw(_per_quota())
    if draw(st.booleans()):
        lines += draw(_spread())
    return "\n".join(lines)


@st.composite
def _per_quota(draw: st.DrawFn) -> list[str]:
    """A quota with a limit per value of a key: `per team`, `per cluster`, or both."""
    per = draw(st.sampled_from(("team", "cluster", "team, cluster", "workload.kind")))
    limit = draw(
        st.one_of(
            st.integers(0, 32).map(str), st.sampled_from((50, 80, 100)).map(lambda p: f"{p}%")
        )
    )
    on = draw(st.one_of(st.none(), st.sampled_from(CLUSTERS).map(lambda c: f'cluster == "{c}"')))
    return ["quota per_q:", *([f"  on {on}"] if on else []), f"  per {per}",
            f"  limit gpus <= {limit}", ""]  # fmt: skip


@st.composite
def _spread(draw: st.DrawFn) -> list[str]:
    """A spread of a group of workloads across a target attribute (`max N` or even)."""
    lines = ["spread s0:"]
    if draw(st.booleans()):
        lines.append(f"  for {draw(conditions(1))}")
    lines.append(f"  by {draw(st.sampled_from(('team', 'kind', 'labels.tier')))}")
    lines.append(f"  across {draw(st.sampled_from(SPREAD_ACROSS))}")
    if draw(st.booleans()):
        lines.append(f"  max {draw(st.integers(1, 3))}")
    return [*lines, ""]


SPREAD_ACROSS = ("cluster", "backend", "name", "gpu_type", "target")


@st.composite
def platforms(draw: st.DrawFn, max_workloads: int = 6, max_targets: int = 3) -> dict[str, Any]:
    """A small platform: {"policy": text, "inventory": dict, "workloads": [dict, ...]}."""
    n = draw(st.integers(1, max_workloads))
    ws = [draw(workload_dicts(name=f"w{i}", max_gpus=12)) for i in range(n)]
    return {"policy": draw(policies(catch_all=True)),
            "inventory": draw(inventory_dicts(max_targets)), "workloads": ws}  # fmt: skip


@st.composite
def previous_plans(draw: st.DrawFn, platform: dict[str, Any]) -> dict[str, Any]:
    """A previous plan of `platform` (from platforms()) as router.plan accepts it: some of
    its workloads on some of its targets (fit or not: the inventory may have changed)."""
    ids: list[str] = [
        f"{c['name']}/{t['name']}"
        for c in platform["inventory"]["clusters"]
        for t in c.get("partitions", c.get("node_pools", []))
    ]
    placements: list[dict[str, str]] = []
    for w in platform["workloads"] if ids else []:
        if draw(st.booleans()):
            placements.append({"workload": w["name"], "target_id": draw(st.sampled_from(ids))})
    return {"placements": placements}


def grammar_texts() -> st.SearchStrategy[str]:
    """Text from the grammar itself (hypothesis.extra.lark.from_lark): random names."""
    from hypothesis.extra.lark import from_lark
    from lark import Lark

    from router.language.grammar import grammar_text

    # A plain LALR parser over the same grammar: from_lark reads only its rules and terminals.
    return from_lark(Lark(grammar_text(), parser="lalr"), start="start")
