"""plan.json, format_version "1": the plan as a GitOps pipeline diffs, reviews and gates on.

Byte-identical for the same inputs: sorted keys and lists, no timestamps, no absolute paths,
and nothing that depends on the run: wall-clock seconds, the number of workers and the
solver's deterministic time all vary between runs and machines while the plan does not, so
they are printed by the command (`Solver: ... in 0.4 s`) and left out of the file.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pydantic_core
from pydantic import BaseModel, TypeAdapter

from router.evaluate.quota import capacity, usage
from router.gcpause import paused_gc
from router.models.placement import Placement
from router.models.plan import PlanDocument, ReasonsEntry, ScaleOut
from router.models.schema import sorted_keys
from router.plan.build import Plan, input_hashes
from router.plan.packcheck import scale_out
from router.version import __version__

FORMAT_VERSION = "1"


def _round(x: float | None, digits: int = 6) -> float | None:
    # A float, as the model's float fields hold it (an int would be written "3", not "3.0").
    return None if x is None else round(float(x), digits)


def node_json(
    plan: Plan, nodes: list[tuple[str, int]], names: dict[str, list[str]] | None = None
) -> list[dict[str, Any]]:
    """Where a placement's pods (or whole nodes) are: node set id, node index, and the node's
    name when the inventory gives node_names. `names`: node set id -> node_names, a cache
    filled as it goes (a plan names the same few node sets 100k times)."""
    names = {} if names is None else names
    out = []
    for sid, i in nodes:
        entry: dict[str, Any] = {"node": i, "node_set": sid}
        known = names.get(sid)
        if known is None:
            known = names[sid] = plan.inputs.inventory.node_set(sid).spec.node_names
        if i < len(known):
            entry["name"] = known[i]
        out.append(entry)
    return out


def _after(p: Placement, where: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """The `after` dependencies of a placement, each with where its parent went: `router
    apply` turns same-cluster Slurm ones into --dependency=afterok and refuses the others."""
    if not p.workload.after:
        return {}
    out = []
    for name in sorted(p.workload.after):
        backend, cluster = where.get(name, ("", ""))
        supported = backend == "slurm" and cluster == p.cluster and p.backend == "slurm"
        entry: dict[str, Any] = {"workload": name, "supported": supported}
        if backend:
            entry |= {"backend": backend, "cluster": cluster}
        out.append(entry)
    return {"after": out}


@dataclass(frozen=True)
class Later:
    """The sections of plan.json made last, which `router plan` makes in a child beside the
    emitters' (api.Plan.write) while this process makes the rest: the `unplaced` entries (the
    reasons, Plan.later), `preempted` (planned against a previous plan) and `scale_out`
    (packcheck.scale_out's checks); between them a third of plan.json's time or more. With
    texts, the unplaced and scale_out entries' text as plan.json holds them, checked
    (section_text)."""

    unplaced: list[dict[str, Any]]
    preempted: list[dict[str, Any]] | None
    scale_out: list[dict[str, Any]]
    text: str | None = None
    scale_text: str | None = None


@paused_gc()
def plan_later(plan: Plan, text: bool = False) -> Later:
    unplaced = [
        {
            "fix": u.fix,
            "reasons": u.reasons,
            "rule": u.decision.rule.name if u.decision.rule else None,
            "workload": u.decision.workload.name,
        }
        for u in sorted(plan.unplaced, key=lambda u: u.decision.workload.name)
    ]
    preempted = None if plan.preempted is None else [p.to_json() for p in plan.preempted]
    # services that can scale: what their max replicas would need (packcheck.py)
    scaling = scale_out(plan.inputs.inventory, plan.inputs.running, plan.placements)
    if not text:
        return Later(unplaced, preempted, scaling)
    return Later(
        unplaced,
        preempted,
        scaling,
        section_text(unplaced, ReasonsEntry),
        section_text(scaling, ScaleOut),
    )


@paused_gc()
def plan_document(plan: Plan, later: Callable[[], Later] | None = None) -> dict[str, Any]:
    """The document; `later` gives its Later sections (default: plan_later), asked for
    last, once everything else is made (they may come from a child working meanwhile)."""
    project = plan.project
    rel = functools.lru_cache(maxsize=None)(project.relative)  # a few files, named often
    where = {p.workload.name: (p.backend, p.cluster) for p in plan.placements}
    names: dict[str, list[str]] = {}
    placements = [
        {
            **_after(p, where),
            "artifacts": sorted(p.artifacts),
            "backend": p.backend,
            "cluster": p.cluster,
            "kind": p.workload.kind,
            "nodes": node_json(plan, p.nodes, names),  # one per pod, or per whole node
            "options": sorted_keys(p.options) if p.options else {},  # in order: see _fast
            "rank": p.rank,
            "resources": p.resources.to_json(),
            "rule": p.rule,
            "rule_source": p.rule_source,
            "target": p.target.target.name,
            "target_id": p.target.id,
            "team": p.workload.team,
            "workload": p.workload.name,
        }
        for p in sorted(plan.placements, key=lambda p: p.workload.name)
    ]
    denied = [
        {
            "message": d.message,
            "rule": d.rule.name if d.rule else None,
            "rule_source": f"{rel(d.rule.span.path)}:{d.rule.span.line}" if d.rule else None,
            "workload": d.workload.name,
        }
        for d in sorted(plan.denied, key=lambda d: d.workload.name)
    ]
    unrouted = [
        {
            "reasons": [f"no rule matches (tried {', '.join(d.rules_tried) or 'none'})"],
            "workload": d.workload.name,
        }
        for d in sorted(plan.unrouted, key=lambda d: d.workload.name)
    ]
    made = later() if later is not None else plan_later(plan)
    unplaced = made.unplaced
    by_backend = Counter(p.backend for p in plan.placements)
    summary = {
        "by_backend": dict(sorted(by_backend.items())),
        "denied": len(denied),
        "placed": len(placements),
        "unplaced": len(plan.left_out),  # one entry each (made.unplaced)
        "unrouted": len(unrouted),
        "workloads": len(plan.decisions),
    }
    s = plan.solve
    solver = {
        "bound": s.bound,
        "gap": _round(s.gap),
        "levels": [
            {"bound": lv.bound, "name": lv.name, "status": lv.status, "value": lv.value}
            for lv in s.levels
        ],
        "lp_bound": _round(plan.lp_bound, 3),
        "objective": s.objective,
        "seed": s.seed,
        "status": s.status,
        # Components are solved by one deterministic search each, so any number of threads
        # gives this plan; the count used by this run would only make the bytes differ.
        "workers": "any",
    }
    doc: dict[str, Any] = {
        "denied": denied,
        "format_version": FORMAT_VERSION,
        "inputs": input_hashes(project, plan.inputs.files, plan.inputs.contents),
        "placements": placements,
        "policy": plan.inputs.policy.name,
        "router_version": __version__,
        "solver": solver,
        "summary": summary,
        "targets": target_usage(plan),  # nodes: whole nodes taken
        "unplaced": unplaced,
        "unrouted": unrouted,
    }
    if made.scale_out:
        doc["scale_out"] = made.scale_out
    if made.preempted is not None:  # planned against a previous plan
        doc["preempted"] = made.preempted
    return doc


def target_usage(plan: Plan) -> list[dict[str, Any]]:
    """Per target: capacity and what the plan uses of it (GPUs, CPUs, memory, whole nodes)."""
    by_target: dict[str, list[Placement]] = {}
    for p in plan.placements:  # in plan order, as each target's sums always were
        by_target.setdefault(p.target.id, []).append(p)
    out = []
    for ref in plan.targets:
        mine = by_target.get(ref.id, [])
        row: dict[str, Any] = {
            "backend": ref.backend,
            "cluster": ref.cluster,
            "id": ref.id,
            "placements": len(mine),
        }
        for resource in ("gpus", "cpus", "memory", "nodes"):
            key = "memory_mib" if resource == "memory" else resource
            used = (
                sum(p.resources.whole_nodes for p in mine)
                if resource == "nodes"
                else sum(usage(resource, p.resources, ref) for p in mine)
            )
            row[key] = {"capacity": capacity(ref, resource), "used": used}
        out.append(dict(sorted(row.items())))  # in plan.json's order (_fast)
    return out


def with_diff(doc: dict[str, Any], diff: dict[str, Any] | None) -> dict[str, Any]:
    """The document with a `diff` section (see router.plan.diff) when a previous plan was
    given; without one the document, and so plan.json, is exactly as before."""
    return doc if diff is None else {**doc, "diff": diff}


@paused_gc()
def dumps(doc: dict[str, Any], unplaced_text: str | None = None) -> str:
    """plan.json's text, checked by PlanDocument (strict, extra keys refused): a field the
    model does not know fails here, so the model and its schema cannot drift. The text is
    the document's own: the model changes nothing it accepts (its floats are made floats in
    plan_document; tests/models checks every document dumps back as the same text), so
    dumping the model again would only cost the time. `unplaced_text`:
    section_text(doc["unplaced"]), made elsewhere (in a child, Later); the rest is written
    here and the two put together, the same bytes."""
    if unplaced_text is None:
        PlanDocument.model_validate(doc, strict=True)
        return indented(doc)
    # Each top-level field is checked by its own type (PlanDocument has no validator across
    # fields), so checking the rest with no unplaced entries and those alone checks all.
    rest = {**doc, "unplaced": []}
    PlanDocument.model_validate(rest, strict=True)
    return spliced(indented(rest), "unplaced", unplaced_text)


def document_beside(plan: Plan, later: Callable[[], Later]) -> tuple[dict[str, Any], str]:
    """plan_document and its dumps, when the Later sections and their texts are being made
    elsewhere meanwhile (api.Plan.write: in a child) and no diff needs them: the rest of the
    document is made and written first (with an empty `scale_out` to fill in or drop), then
    the sections asked for and their texts put in their places."""
    rest = {**plan_document(plan, lambda: Later([], None, [])), "scale_out": []}
    text = dumps(rest)
    made = later()
    if made.text is None or made.scale_text is None or made.preempted is not None:
        raise ValueError("document_beside needs the sections' texts, and no preempted entries")
    doc = {**rest, "unplaced": made.unplaced}
    text = spliced(text, "unplaced", made.text)
    if made.scale_out:
        doc["scale_out"] = made.scale_out
        return doc, spliced(text, "scale_out", made.scale_text)
    del doc["scale_out"]
    return doc, spliced(text, "scale_out", None)


@functools.cache
def _entries(model: type[BaseModel]) -> TypeAdapter[list[BaseModel]]:
    return TypeAdapter(list[model])  # type: ignore[valid-type]


def section_text(entries: list[dict[str, Any]], model: type[BaseModel]) -> str:
    """The text of a list of plan.json's entries of `model` (a top-level section: unplaced's
    ReasonsEntry, scale_out's ScaleOut) standing alone, indented as dumps writes the
    document, checked as PlanDocument checks them."""
    _entries(model).validate_python(entries, strict=True)
    return indented(entries)


def spliced(rest: str, key: str, section: str | None) -> str:
    """The document text `rest`, whose top-level `key` holds [], with `section` (the text of
    the list alone, as indented writes it) in its place, or with no `key` when `section` is
    None. indented writes each value one level in, two spaces more, on every line after its
    first (strings hold no newline: JSON escapes it), and a top-level key is the only one on
    a line indented by two spaces."""
    empty = f'\n  "{key}": []'
    head, found, tail = rest.partition(empty)
    if not found or empty in tail or tail[:2] not in (",\n", "\n}"):
        raise ValueError(f"plan.json text has no single top-level {key!r} to fill in")
    if section is None:  # the key and its comma go: the one after it, else the one before
        if tail[0] == ",":
            return head + tail[1:]
        return "{}" + tail[2:] if head == "{" else head.removesuffix(",") + tail
    body = section.removesuffix("\n").replace("\n", "\n  ")
    return f'{head}\n  "{key}": {body}{tail}'


def indented(doc: dict[str, Any] | list[Any]) -> str:
    """json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + a newline: see _fast."""
    text = _fast(doc)
    if text is None:
        text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return text


def _fast(doc: dict[str, Any] | list[Any]) -> str | None:
    """The text of `indented`, with pydantic-core's serializer (Rust) doing the indenting:
    the pure-Python encoder that json.dumps's indent= selects was most of the time of writing
    plan.json. The C encoder writes the document compact with sorted keys; pydantic-core reads
    that back (keeping the order) and must write the very same compact text, so every string
    escape, float and int is proven to be json.dumps's for this document (they differ on some:
    "1e-05" against "0.00001"); what is left, where the newlines and spaces go, is the same for
    both (tests/plan compares them over generated documents). None when the texts differ.
    The document itself is written first: plan_document makes its keys in sorted order, so
    its own compact text is that one as a rule, without reading the text back (bench L:
    0.08 s less); the text read back is for a document whose keys are not all in order."""
    try:
        compact = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        # The top level's few keys put in order here (sections are added last).
        ordered = {k: doc[k] for k in sorted(doc)} if isinstance(doc, dict) else doc
        if pydantic_core.to_json(ordered).decode() == compact:
            return pydantic_core.to_json(ordered, indent=2).decode() + "\n"
        value = pydantic_core.from_json(compact)
        if pydantic_core.to_json(value).decode() != compact:
            return None
        return pydantic_core.to_json(value, indent=2).decode() + "\n"
    except (ValueError, TypeError, pydantic_core.PydanticSerializationError):
        return None
