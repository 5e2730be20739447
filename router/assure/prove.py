"""Prove or refute `check` blocks over the whole bounded workload space (`router test`).

    results = prove_checks(policy, inventory)      # one CheckResult per `check` block

A check `for F expect E` holds when every workload satisfying F has an outcome satisfying E.
The rule-level routing decision is encoded as a CP-SAT model (encode.py gives the workload
space and the conditions): deny rules first (the first match denies), then rules in order
(claim_i = when_i and no earlier rule matched). The model "F and not E" is solved: INFEASIBLE
is a proof ("proven"); otherwise its lexicographically smallest solution (fewest GPUs, then
nodes, ..., then closest to the defaults) is the counterexample, printed as workload YAML.

Outcome semantics (what `expect` reads):

- `denied`, `routed`, `rule`: the deny rule or rule that decided the workload (`rule` is the
  deny rule's name for a denied workload, none for an unrouted one).
- `backend`, `cluster`, `target` (the id "cluster/target") and the options (`exclusive`,
  `qos`, ...): E must hold for EVERY target the claiming rule could route the workload to:
  each `route` / `else route` clause, and each inventory target of its backend whose `where`
  admits the workload (a target reached by an earlier clause counts for that clause only, as
  in the evaluator), with that clause's options. Shape and capacity are not considered here: a
  target the workload may not fit still counts, so a proven property holds wherever the
  workload lands. When no target is admitted at all, the outcome is each clause's backend
  (none for `any`) with no cluster or target.
- `placed`: the claiming rule has a target whose `where` admits the workload and whose node
  shape holds it (GPUs per node, GPU type, CPUs, memory, max time, node count). This is shape
  feasibility in an empty inventory, not capacity contention with other workloads or quotas.
  The workload space assumes a runnable workload: it has an image (unless the policy itself
  tests `image`) and a command.

A construct the encoder cannot express becomes a free boolean (a sound over-approximation):
INFEASIBLE is still a proof, but a counterexample is then re-checked with the evaluator; if it
does not really violate the property, the check falls back to enumerating a small domain of
workloads and says so ("checked by enumeration over N workloads"), never "proven".
"""

from __future__ import annotations

import itertools
import math
import random
import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from router.debug import debugging
from router.evaluate.evaluate import Evaluator
from router.evaluate.expr import compile_expr
from router.evaluate.views import workload_view
from router.language import ast
from router.language.names import OPTIONS
from router.models import Inventory, Workload
from router.models.workload import WORKLOAD_DEFAULTS

Status = Literal["proven", "refuted", "enumerated", "error"]
PLACEHOLDER_IMAGE = "registry.example/app:1"
PLACEHOLDER_COMMAND = ["run"]
ENUMERATION_LIMIT = 20000
SEMANTICS = (
    "backend/cluster/target/options must hold for every target the claiming rule's route "
    "clauses admit by `where` (shape not considered); `placed` means some admitted target's "
    "node shape holds the workload (no capacity contention)"
)


@dataclass
class CheckResult:
    name: str
    source: str  # file:line of the check block
    status: Status
    method: str  # "cp-sat" or "enumeration"
    workloads: int = 0  # how many were enumerated, for the enumeration method
    counterexample: dict[str, Any] | None = None  # workload YAML document
    decided_by: tuple[str, str | None] | None = None  # ("rule NAME", "file:line")
    outcome: dict[str, Any] | None = None  # the violating outcome
    note: str = ""
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status in ("refuted", "error")


def _src(node: Any) -> str:
    return f"{node.span.path}:{node.span.line}"


# -- the reference semantics (evaluator-based): enumeration and cross-checks ----------------
def runnable(doc: dict[str, Any]) -> dict[str, Any]:
    """A partial workload document with what a runnable workload needs filled in."""
    out = dict(doc)
    out.setdefault("name", "workload")
    out.setdefault("image", PLACEHOLDER_IMAGE)
    out.setdefault("command", list(PLACEHOLDER_COMMAND))
    return out


def _option_view(options: dict[str, Any], backend: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in options.items():
        if backend is not None and backend not in OPTIONS[name].backends:
            continue
        out[name] = True if value == {} else value  # `with hpa`: present, so truthy
    return out


def _view(**kw: Any) -> dict[str, Any]:
    base = {"denied": False, "routed": False, "placed": False, "rule": None, "backend": None,
            "cluster": None, "target": None}  # fmt: skip
    base.update(kw)
    return base


def outcomes(ev: Evaluator, w: Workload) -> list[dict[str, Any]]:
    """Every outcome the property must hold for (module docstring), from the evaluator."""
    d = ev.decide(w)
    if d.status == "denied":
        assert d.rule is not None
        return [_view(denied=True, rule=d.rule.name)]
    if d.status == "unrouted":
        return [_view()]
    crule = next(r for r in ev.rules if r.rule is d.rule)
    wv, placed, seen = workload_view(w), bool(d.candidates), set()
    outs = []
    for route in crule.routes:
        for ref, tv in ev.target_views:
            if route.route.backend not in ("any", ref.backend) or ref.id in seen:
                continue
            if route.where is not None and not route.where(wv, tv):
                continue
            seen.add(ref.id)
            outs.append(_view(routed=True, placed=placed, rule=crule.rule.name,
                              backend=ref.backend, cluster=ref.cluster, target=ref.id,
                              **_option_view(route.options, ref.backend)))  # fmt: skip
    if not outs:
        for route in crule.routes:
            b = None if route.route.backend == "any" else route.route.backend
            outs.append(_view(routed=True, placed=placed, rule=crule.rule.name, backend=b,
                              **_option_view(route.options, b)))  # fmt: skip
    return outs


def violation(ev: Evaluator, check: ast.Check, w: Workload) -> dict[str, Any] | None:
    """The first outcome of `w` that breaks `check`, or None when it holds (or F is false)."""
    c = ev.policy.constants
    if check.for_ is not None and not compile_expr(check.for_, c)(workload_view(w), {}):
        return None
    expect = compile_expr(check.expect, c)
    broken = [o for o in outcomes(ev, w) if not expect({}, o)]
    # Show a target the workload would fit first: the most convincing witness.
    fitting = {cand.target.id for cand in ev.decide(w).candidates}
    broken.sort(key=lambda o: o.get("target") not in fitting)
    return broken[0] if broken else None


def decided_by(ev: Evaluator, w: Workload) -> tuple[str, str | None]:
    """("rule NAME" | "deny NAME" | "no rule (unrouted)", its file:line)."""
    d = ev.decide(w)
    if d.rule is None:
        return "no rule (unrouted)", None
    word = "deny" if isinstance(d.rule, ast.Deny) else "rule"
    return f"{word} {d.rule.name}", _src(d.rule)


# -- proving ---------------------------------------------------------------------------------
def prove_checks(policy: ast.Policy, inventory: Inventory) -> list[CheckResult]:
    ev = Evaluator(policy, inventory)
    return [prove_check(ev, check, inventory) for check in policy.checks]


def prove_check(ev: Evaluator, check: ast.Check, inventory: Inventory) -> CheckResult:
    t0 = time.perf_counter()
    try:
        result = _prove(ev, check, inventory)
    except Exception as e:  # a bug in the prover: this check reports it, the others still run
        if debugging():
            raise
        result = CheckResult(check.name, _src(check), "error", "cp-sat",
                             note=f"{type(e).__name__}: {e}")  # fmt: skip
    result.seconds = time.perf_counter() - t0
    return result


def _names(e: ast.Expr | None) -> set[str]:
    return {n.field or "" for n in ast.find(e, ast.Name)}


def _prove(ev: Evaluator, check: ast.Check, inventory: Inventory) -> CheckResult:
    from router.assure.encode import encode_condition, encode_workload_space, minimal_witness
    from router.assure.shape_model import ShapeModel

    policy = ev.policy
    space = encode_workload_space(policy, inventory)
    m = space.model
    # A runnable workload has an image unless the policy asks about images.
    image_var, images = space.strings["image"]
    if len(images) <= 2 and None in images:
        m.add(image_var != images.index(None))
    shapes = ShapeModel(space, ev)
    expect = compile_expr(check.expect, policy.constants)
    uses_placed = "placed" in _names(check.expect)

    def breaks(view: dict[str, Any]) -> list[bool]:
        """The `placed` values under which the outcome `view` breaks E."""
        values = [True, False] if uses_placed and view["routed"] else [view["placed"]]
        return [p for p in values if not expect({}, {**view, "placed": p})]

    bad: list[Any] = []  # literals: the workload has a breaking outcome
    earlier: list[Any] = []
    for deny in policy.denies:
        hit = space.all_of([encode_condition(space, deny.when), *(x.Not() for x in earlier)])
        earlier.append(encode_condition(space, deny.when))
        if breaks(_view(denied=True, rule=deny.name)):
            bad.append(hit)
    for crule in ev.rules:
        rule = crule.rule
        when = encode_condition(space, rule.when)
        claim = space.all_of([when, *(x.Not() for x in earlier)])
        earlier.append(when)
        reach: list[tuple[Any, dict[str, Any], Any]] = []  # (literal, view, fits)
        admitted: dict[str, list[Any]] = {}
        for route in crule.routes:
            for ref, tv in ev.target_views:
                if route.route.backend not in ("any", ref.backend):
                    continue
                where = encode_condition(space, route.route.where, target=tv)
                before = admitted.setdefault(ref.id, [])
                lit = space.all_of([where, *(x.Not() for x in before)])
                before.append(where)
                opts = _option_view(route.options, ref.backend)
                view = _view(routed=True, rule=rule.name, backend=ref.backend,
                             cluster=ref.cluster, target=ref.id, **opts)  # fmt: skip
                fits = shapes.fits(ref, tv, route.options) if uses_placed else None
                reach.append((lit, view, space.all_of([where, fits]) if fits is not None else None))
        placed = space.any_of([f for _, _, f in reach if f is not None]) if uses_placed else None
        none = space.any_of([lit for lit, _, _ in reach]).Not()
        scenarios = [(lit, view) for lit, view, _ in reach]
        for route in crule.routes:
            b = None if route.route.backend == "any" else route.route.backend
            scenarios.append((none, _view(routed=True, rule=rule.name, backend=b,
                                          **_option_view(route.options, b))))  # fmt: skip
        for lit, view in scenarios:
            for p in breaks(view):
                parts = [claim, lit]
                if placed is not None:
                    parts.append(placed if p else placed.Not())
                bad.append(space.all_of(parts))
    if breaks(_view()):
        bad.append(space.all_of([x.Not() for x in earlier]))
    for_ = encode_condition(space, check.for_)
    cex = minimal_witness(space, [for_, space.any_of(bad)]) if bad else None
    approx = bool(space.approximate)
    if cex is None:
        note = "proven by CP-SAT" + (" (some conditions over-approximated)" if approx else "")
        return CheckResult(check.name, _src(check), "proven", "cp-sat", note=note)
    doc = shapes.document(cex, check.name)
    try:
        w = Workload.model_validate(runnable(doc))
    except ValidationError:  # a witness no workload can be (over-approximated): enumerate
        return _enumerate(ev, check, space.strings, approx)
    broken = violation(ev, check, w)
    if broken is not None:
        return CheckResult(check.name, _src(check), "refuted", "cp-sat", counterexample=doc,
                           decided_by=decided_by(ev, w), outcome=_shown(broken))  # fmt: skip
    return _enumerate(ev, check, space.strings, approx)


def _shown(view: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in view.items() if v is not None and v is not False} or {"routed": False}


# -- enumeration fallback ----------------------------------------------------------------------
_NUMERIC = ("gpus", "nodes", "cpus", "memory", "duration", "priority")
_DEFAULTS: dict[str, Any] = {
    k: WORKLOAD_DEFAULTS[k] for k in (*_NUMERIC, "kind", "team", "gpu_type")
}
# A few values across each field's range, for conditions the encoder cannot read exactly.
_SPREAD = {
    "gpus": [2**i for i in range(11)], "nodes": [2**i for i in range(7)],
    "cpus": [2**i for i in range(11)], "memory": [2**i * 1024 for i in range(12)],
    "duration": [3600, 86400, 7 * 86400], "priority": [1, 4, 8],
}  # fmt: skip


def _numbers_near(policy: ast.Policy, ev: Evaluator, fld: str) -> list[int]:
    """Values of a numeric field on both sides of every constant it is compared with."""
    from router.assure.encode import policy_exprs

    consts: set[float] = set()
    for top in policy_exprs(policy):
        for e in ast.walk(top):
            if not isinstance(e, ast.Binary) or e.op in ("and", "or"):
                continue
            for side, other in ((e.left, e.right), (e.right, e.left)):
                if isinstance(side, ast.Name) and side.scope == "workload" and side.field == fld:
                    for o in ast.walk(other):
                        if isinstance(o, ast.Literal) and isinstance(o.value, (int, float)):
                            consts.add(float(o.value))
                        elif isinstance(o, ast.Name) and o.scope == "const":
                            v = policy.constants.get(o.field or "")
                            if isinstance(v, (int, float)):
                                consts.add(float(v))
                        elif isinstance(o, ast.Name) and o.scope == "target":
                            for _, tv in ev.target_views:
                                v = tv.get(o.field or "")
                                if isinstance(v, (int, float)) and not isinstance(v, bool):
                                    consts.add(float(v))
    low = 1 if fld in ("nodes", "cpus", "memory", "duration") else 0
    values = {low, _DEFAULTS[fld], *_SPREAD[fld]}
    for c in consts:
        values |= {int(c) - 1, int(c), int(c) + 1}
    return sorted(v for v in values if v >= low)


def _enumerate(
    ev: Evaluator, check: ast.Check, strings: dict[str, Any], approx: bool
) -> CheckResult:
    from router.assure.encode import OTHER

    used = set().union(*(_names(e) for e in _exprs(ev.policy, check)))
    axes: list[tuple[str, list[Any]]] = []
    for key, (_, values) in sorted(strings.items()):
        if key.startswith("labels.") or key.split(".")[0] in used or key == "kind":
            axes.append((key, [("other-value" if v == OTHER else v) for v in values]))
    for fld in _NUMERIC:
        if fld in used or fld == "gpus":
            axes.append((fld, _numbers_near(ev.policy, ev, fld)))
    if "preemptible" in used:
        axes.append(("preemptible", [False, True]))
    sizes = [len(v) for _, v in axes]
    total = math.prod(sizes)
    note = "checked by enumeration"
    if total <= ENUMERATION_LIMIT:
        combos = list(itertools.product(*(v for _, v in axes)))
    else:  # the same sample as from the product's list, without building it (it can be huge)
        picked = random.Random(0).sample(range(total), ENUMERATION_LIMIT)
        combos = [_combo(axes, sizes, i) for i in picked]
        note = "checked by sampling"
    docs = []
    for combo in combos:
        doc: dict[str, Any] = {"name": check.name.replace("_", "-")[:50] or "workload"}
        labels = {}
        for (key, _), value in zip(axes, combo, strict=True):
            if key.startswith("labels."):
                if value is not None:
                    labels[key[7:]] = value
            elif value is not None and value != _DEFAULTS.get(key):
                doc[key] = value
        if labels:
            doc["labels"] = labels
        docs.append(doc)
    docs.sort(key=_smallness)
    n = 0
    for doc in docs:
        try:
            w = Workload.model_validate(runnable(doc))
        except ValidationError:  # a combination that is not a valid workload
            continue
        n += 1
        broken = violation(ev, check, w)
        if broken is not None:
            return CheckResult(
                check.name,
                _src(check),
                "refuted",
                "enumeration",
                workloads=n,
                counterexample=doc,
                decided_by=decided_by(ev, w),
                outcome=_shown(broken),
                note="the smallest found by enumeration (the CP-SAT encoding is partial here)",
            )
    why = (
        "some conditions cannot be encoded exactly"
        if approx
        else "the CP-SAT witness did not replay"
    )
    return CheckResult(
        check.name,
        _src(check),
        "enumerated",
        "enumeration",
        workloads=n,
        note=f"{note} over {n} workloads ({why}); not proven",
    )


def _combo(axes: list[tuple[str, list[Any]]], sizes: list[int], index: int) -> tuple[Any, ...]:
    """Item `index` of itertools.product over the axes' values (the last axis fastest)."""
    picked: list[Any] = []
    for (_, values), size in zip(reversed(axes), reversed(sizes), strict=True):
        index, i = divmod(index, size)
        picked.append(values[i])
    return tuple(reversed(picked))


def _smallness(doc: dict[str, Any]) -> tuple[int, ...]:
    """The witness order of encode.py: fewest GPUs, then nodes, then closest to the defaults."""
    near = [abs(doc.get(f, _DEFAULTS[f]) - _DEFAULTS[f]) for f in _NUMERIC[2:]]
    return (doc.get("gpus", 0), doc.get("nodes", 1), len(doc), *near)


def _exprs(policy: ast.Policy, check: ast.Check) -> list[ast.Expr | None]:
    from router.assure.encode import policy_exprs

    return [*policy_exprs(policy), check.for_]


__all__ = [
    "SEMANTICS",
    "CheckResult",
    "outcomes",
    "prove_check",
    "prove_checks",
    "runnable",
    "violation",
]
