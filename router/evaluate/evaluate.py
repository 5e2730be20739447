"""Evaluate the policy for every workload: denied, unrouted, or ranked candidate targets.

1. deny rules, in order: the first whose `when` holds rejects the workload;
2. rules, in order: the first whose `when` holds claims it (none: unrouted);
3. the claiming rule's `route` and `else route` clauses, rank 0, 1, ...: every target of that
   backend whose attributes satisfy `where` and whose shape can hold the workload. A target
   reachable from several clauses keeps its best rank.
4. `prefer` terms order a workload's candidates; `pref` is the candidate's place in that order
   (0 is best; equal preferences share a place).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from router.evaluate.expr import Compiled, compile_expr, constant_value
from router.evaluate.shape import shape
from router.evaluate.signature import signature_of
from router.evaluate.views import target_view, workload_view
from router.language import ast
from router.language.names import OPTIONS
from router.models import Inventory, TargetRef, Workload
from router.models.placement import Resources


@dataclass(frozen=True)
class Candidate:
    """One target a workload may go to. Frozen: decisions of one signature share them."""

    target: TargetRef
    rank: int
    pref: int
    options: dict[str, Any]
    resources: Resources
    prefer_key: tuple[Any, ...] = ()


@dataclass
class Exclusion:
    """A target the claiming rule could have used, and why it is not a candidate."""

    target: str
    rank: int
    reason: str  # "where" (the clause's condition) or the shape reason in words
    kind: Literal["where", "shape", "backend"]


@dataclass
class Decision:
    workload: Workload
    status: Literal["denied", "unrouted", "routed"]
    rule: ast.Rule | ast.Deny | None = None
    message: str = ""
    candidates: list[Candidate] = field(default_factory=list)
    excluded: list[Exclusion] = field(default_factory=list)
    denies_tried: list[str] = field(default_factory=list)
    rules_tried: list[str] = field(default_factory=list)
    # The routing signature (signature.py) this decision was made for; () if none.
    signature: Hashable = ()


def _option_values(route: ast.Route, constants: dict[str, Any]) -> dict[str, Any]:
    """Resolved option values. Percent arguments become whole percents (70% -> 70)."""
    out: dict[str, Any] = {}
    for opt in route.options:
        spec = OPTIONS[opt.name]
        if opt.is_call or (spec.type == "call"):
            args: dict[str, Any] = {}
            for name, expr in sorted(opt.args.items()):
                value = constant_value(expr, constants)
                if spec.args.get(name) == "percent" and isinstance(value, float):
                    value = round(value * 100)
                args[name] = value
            out[opt.name] = args
        elif opt.value is None:
            out[opt.name] = True
        else:
            out[opt.name] = constant_value(opt.value, constants)
    return out


@dataclass
class _CompiledRoute:
    route: ast.Route
    where: Compiled | None
    prefer: list[tuple[Compiled, str | None]]
    options: dict[str, Any]


@dataclass
class _CompiledRule:
    rule: ast.Rule
    when: Compiled | None
    routes: list[_CompiledRoute]


class Evaluator:
    """The policy compiled once; `decide(workload)` routes one workload.

    Decisions are cached by routing signature (signature.py): a workload identical to one
    seen before, in everything the policy and the shape check read, costs a dict lookup.
    Decisions of one signature share their (frozen) candidates and exclusions; with
    `share_candidates` they share the lists too (read-only: what the aggregated solver and
    the benchmark use), otherwise each decision gets lists of its own, so that a list
    changed downstream changes one decision only. Copying the candidates themselves took
    most of the evaluation of a large plan (hundreds of thousands of them).
    """

    def __init__(
        self, policy: ast.Policy, inventory: Inventory, share_candidates: bool = False
    ) -> None:
        c = policy.constants
        self.share_candidates = share_candidates
        self.policy = policy
        self.targets = inventory.targets()
        gated = any(
            getattr(r.target, "allow_accounts", None) is not None
            or getattr(r.target, "allow_groups", None) is not None
            or getattr(r.target, "deny_accounts", None)
            for r in self.targets
        )
        self.signature = signature_of(policy, access_lists=gated)
        self._cache: dict[Hashable, Decision] = {}
        self.target_views = [(ref, target_view(ref)) for ref in self.targets]
        self.denies = [
            (d, compile_expr(d.when, c) if d.when is not None else None) for d in policy.denies
        ]
        self.rules = [
            _CompiledRule(
                rule=r,
                when=compile_expr(r.when, c) if r.when is not None else None,
                routes=[
                    _CompiledRoute(
                        route=rt,
                        where=compile_expr(rt.where, c) if rt.where is not None else None,
                        prefer=[(compile_expr(p.expr, c), p.direction) for p in rt.prefer],
                        options=_option_values(rt, c),
                    )
                    for rt in r.routes
                ],
            )
            for r in policy.rules
        ]

    def decide(self, w: Workload) -> Decision:
        if self.signature is None:
            return self._decide(w)
        key = self.signature(w)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._decide(w)
            hit.signature = key
            if self.share_candidates:  # every decision of the signature holds these lists
                hit.candidates, hit.excluded = SharedList(hit.candidates), SharedList(hit.excluded)
                hit.denies_tried = SharedList(hit.denies_tried)
                hit.rules_tried = SharedList(hit.rules_tried)
            self._cache[key] = hit
            # The first decision of a signature is returned as made; later ones are copies.
            return hit if self.share_candidates else _copy(hit)
        if self.share_candidates:
            return Decision(
                w,
                hit.status,
                hit.rule,
                hit.message,
                hit.candidates,
                hit.excluded,
                hit.denies_tried,
                hit.rules_tried,
                hit.signature,  # the key made here is equal, and is let go
            )
        d = _copy(hit)
        d.workload = w
        return d

    def _decide(self, w: Workload) -> Decision:
        wv = workload_view(w)
        empty: dict[str, Any] = {}
        tried: list[str] = []
        for deny, when in self.denies:
            tried.append(deny.name)
            if when is None or when(wv, empty):
                return Decision(w, "denied", deny, deny.message, denies_tried=tried)
        rules_tried: list[str] = []
        for rule in self.rules:
            rules_tried.append(rule.rule.name)
            if rule.when is None or rule.when(wv, empty):
                d = Decision(w, "routed", rule.rule, denies_tried=tried, rules_tried=rules_tried)
                self._candidates(d, rule, wv)
                return d
        return Decision(
            w, "unrouted", message="no rule matches", denies_tried=tried, rules_tried=rules_tried
        )

    def _candidates(self, d: Decision, rule: _CompiledRule, wv: dict[str, Any]) -> None:
        seen: set[str] = set()
        found: list[tuple[TargetRef, int, dict[str, Any], Resources, tuple[Any, ...]]] = []
        for rank, route in enumerate(rule.routes):
            backend = route.route.backend
            for ref, tv in self.target_views:
                if ref.id in seen:
                    continue
                if backend != "any" and ref.backend != backend:
                    continue
                if route.where is not None and not route.where(wv, tv):
                    d.excluded.append(Exclusion(ref.id, rank, "where", "where"))
                    continue
                options = {
                    k: v for k, v in route.options.items() if ref.backend in OPTIONS[k].backends
                }
                res = shape(d.workload, ref, options)
                if isinstance(res, str):
                    d.excluded.append(Exclusion(ref.id, rank, res, "shape"))
                    continue
                seen.add(ref.id)
                key = tuple(_pref_value(f(wv, tv), direction) for f, direction in route.prefer)
                found.append((ref, rank, options, res, key))
        # Targets excluded by one clause but reached by a later one are not excluded.
        d.excluded = [e for e in d.excluded if e.target not in seen]
        place = _preference_places(key for *_, key in found)
        d.candidates = [Candidate(r, k, place[p], o, s, p) for r, k, o, s, p in found]


class SharedList(list[Any]):
    """A list that decisions share (share_candidates): changing it in place would change
    every decision of its signature, so it raises; copy it (`list(d.candidates)`) instead."""


def _refuse(self: SharedList, *args: Any, **kwargs: Any) -> Any:
    raise TypeError("this list is shared by the decisions of one signature: copy it to change")


_MUTATORS = ("append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse")
for _name in (*_MUTATORS, "__setitem__", "__delitem__", "__iadd__", "__imul__"):
    setattr(SharedList, _name, _refuse)


def _copy(d: Decision) -> Decision:
    return Decision(
        d.workload,
        d.status,
        d.rule,
        d.message,
        list(d.candidates),  # the candidates are frozen: the same objects serve every copy
        list(d.excluded),
        list(d.denies_tried),
        list(d.rules_tried),
        d.signature,
    )


def _pref_value(value: Any, direction: str | None) -> Any:
    """Smaller is better. Missing values sort last."""
    if direction is None:
        return 0 if value else 1
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return float("inf")
    return value if direction == "lower" else -value


def _preference_places(keys: Iterable[tuple[Any, ...]]) -> dict[tuple[Any, ...], int]:
    """Each preference key's place among the distinct keys, best (smallest) first."""
    return {k: i for i, k in enumerate(sorted(set(keys)))}


def evaluate(policy: ast.Policy, inventory: Inventory, workloads: list[Workload]) -> list[Decision]:
    ev = Evaluator(policy, inventory)
    return [ev.decide(w) for w in workloads]
