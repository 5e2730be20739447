"""`router check` analysis: what a policy says that cannot be what its author meant.

Each finding names the file and line and, where one exists, a smallest witness workload. The
questions about workloads are decided over the whole bounded workload space with CP-SAT
(encode.py), not by sampling:

- a rule that can never match: `when_i ∧ ¬when_j (j < i) ∧ ¬deny_k` is unsatisfiable (error);
- a deny rule that can never match (warning); workloads no rule matches (info, with a witness);
- a route clause that can never fit any target: no target of its backend satisfies `where` and
  the necessary conditions of shape.py (GPUs, GPU type, time, per-node and total size) for a
  workload that reaches the rule (error when no clause of the rule fits, else warning);
- options a backend or workload ignores: `route any with exclusive` placing on Kubernetes,
  `hpa`/`pdb`/`serving` on a rule that claims only jobs, `operator` one that claims only
  services (warning);
- constants never used (warning); quotas that can never bind: the limit is at least the
  capacity of the targets it is on (with `per`, in every part), it is on no target, or its
  `for` matches no workload a rule routes (warning).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from router.assure.encode import (
    Domains,
    Space,
    any_witness,
    encode_condition,
    encode_workload_space,
    minimal_witness,
    reify,
    satisfiable,
    witness_document,
    workload_domains,
)
from router.assure.findings import SEVERITIES, Finding, Severity, finding_at
from router.errors import did_you_mean
from router.evaluate.views import target_view
from router.language import ast
from router.language.checker import name_span
from router.language.fmt import format_expr
from router.language.names import OPTIONS
from router.models import Inventory, Partition, TargetRef
from router.models.inventory import untolerated

__all__ = ["SEVERITIES", "Finding", "Severity", "analyze", "finding_at"]
Extra = Callable[[Space], list[Any]]  # literals added to a question, in the space asked
Holds = Callable[[Any], bool]  # the same question of a concrete Workload
_JOB_ONLY = {"operator"}  # read only when a job is emitted
_SERVICE_ONLY = {"hpa", "pdb", "serving"}  # read only when a service is emitted
# Target fields that neither shape.py nor the encoding of a fit reads (a `where` that reads
# one is keyed on its value apart).
_NOT_SHAPE = {"name", "labels", "features", "cost_per_gpu_hour", "cost_per_node_hour", "taints"}


def _where(st: Any) -> str:
    return f"`{st.name}` ({st.span.location()})"


_ROUNDS = 6  # counterexample rounds on a small model before the whole policy is asked


class _Full:
    """The whole policy in one model: every deny and rule condition (built on first use)."""

    def __init__(self, policy: ast.Policy, inventory: Inventory, domains: Domains) -> None:
        self.space = s = encode_workload_space(policy, inventory, domains)
        self.deny_lits = [encode_condition(s, d.when) for d in policy.denies]
        self.when_lits = [encode_condition(s, r.when) for r in policy.rules]
        self.not_denied = [d.Not() for d in self.deny_lits]

    def reach(self, i: int) -> list[Any]:
        """Rule i claims the workload: its `when`, no earlier rule's, no deny's."""
        return [self.when_lits[i], *(x.Not() for x in self.when_lits[:i]), *self.not_denied]


class _Analysis:
    """The analyses, each question decided so that `router check` stays near-linear in the
    policy: a question about the workloads a rule claims is first asked of a small model (the
    rule's condition, the denies, and only the earlier rules that a candidate workload showed
    to claim it first), and a candidate the evaluator routes to that rule answers yes. No
    solution on the small model answers no: it is a relaxation of the whole question. Only
    when the two disagree (an over-approximated construct) is the whole policy's model asked.
    Witnesses in findings are still the smallest workloads of the whole model."""

    def __init__(self, policy: ast.Policy, inventory: Inventory) -> None:
        self.policy, self.inventory = policy, inventory
        self.domains = workload_domains(policy, inventory)
        self.targets = inventory.targets()
        self.findings: list[Finding] = []
        self._evaluator: Any = None
        self._full: _Full | None = None
        self.index = {id(r): i for i, r in enumerate(policy.rules)}
        self.examples: dict[int, list[Any]] = {}  # workloads each rule was seen to claim
        self.reachable = [self.claims(i) for i in range(len(policy.rules))]

    @property
    def full(self) -> _Full:
        if self._full is None:
            self._full = _Full(self.policy, self.inventory, self.domains)
        return self._full

    @property
    def space(self) -> Space:
        return self.full.space

    def small(self) -> Space:
        return encode_workload_space(self.policy, self.inventory, self.domains)

    def sat(self, lits: list[Any]) -> bool:
        return satisfiable(self.full.space, lits)

    def witness(self, lits: list[Any]) -> dict[str, Any] | None:
        w = minimal_witness(self.full.space, lits)
        return witness_document(self.full.space, w) if w is not None else None

    @property
    def evaluator(self) -> Any:
        from router.evaluate.evaluate import Evaluator

        if self._evaluator is None:
            self._evaluator = Evaluator(self.policy, self.inventory)
        return self._evaluator

    def decide(self, doc: dict[str, Any]) -> Any:
        """How the evaluator routes a witness (a cross-check of the encoding, and the story);
        None when the witness is no valid workload (`kind == "a\\u0000b"` can be encoded)."""
        from pydantic import ValidationError

        from router.models import Workload

        try:
            return self.evaluator.decide(Workload.model_validate(doc))
        except ValidationError:
            return None

    def workload(self, space: Space, solution: dict[str, Any]) -> Any:
        from pydantic import ValidationError

        from router.models import Workload

        try:
            return Workload.model_validate(witness_document(space, solution))
        except ValidationError:
            return None

    def claims(self, i: int, extra: Extra | None = None, holds: Holds | None = None) -> bool:
        """Is there a workload that rule i claims, for which the literals `extra(space)` hold
        (and `holds(workload)`, what the literals stand for, when a candidate is checked)?"""
        for w in self.examples.get(i, ()):
            if holds is None or holds(w):
                return True
        policy, blockers = self.policy, list[int]()
        for _ in range(_ROUNDS):
            s = self.small()
            lits = [encode_condition(s, policy.rules[i].when)]
            lits += [encode_condition(s, d.when).Not() for d in policy.denies]
            lits += [encode_condition(s, policy.rules[j].when).Not() for j in blockers]
            lits += extra(s) if extra else []
            solution = any_witness(s, lits)
            if solution is None:
                return False  # a relaxation of the whole question has no solution
            w = self.workload(s, solution)
            if w is None:
                break
            j = self.first_rule(w)
            if j == i:
                if holds is None or holds(w):
                    self.examples.setdefault(i, []).append(w)
                    return True
                break
            if not 0 <= j < i or j in blockers:
                break  # the encoding over-approximates here: ask the whole model
            blockers.append(j)
        full = self.full
        return self.sat([*full.reach(i), *(extra(full.space) if extra else [])])

    def first_rule(self, w: Any) -> int:
        """The index of the rule that claims `w`, as the evaluator decides it; -1 if it is
        denied or unrouted. Rules that need another `kind` are skipped (an index by kind), so
        a policy of many per-kind rules is not read rule by rule for every candidate."""
        from router.evaluate.views import workload_view

        view, ev = workload_view(w), self.evaluator
        for _, when in ev.denies:
            if when is None or when(view, {}):
                return -1
        by_kind: dict[Any, list[int]] = self.__dict__.setdefault("_by_kind", {})
        if not by_kind:
            keyed = [_required_kind(r.when) for r in self.policy.rules]
            by_kind[None] = [j for j, k in enumerate(keyed) if k is None]
            for j, k in enumerate(keyed):
                if k is not None:
                    by_kind.setdefault(k, list(by_kind[None])).append(j)
            for k in by_kind:
                by_kind[k].sort()
        for j in by_kind.get(view["kind"], by_kind[None]):
            when = ev.rules[j].when
            if when is None or when(view, {}):
                return j
        return -1

    def add(self, *args: Any, **kw: Any) -> None:
        self.findings.append(finding_at(*args, **kw))

    def matches(self, rule: ast.Rule, doc: dict[str, Any] | None) -> bool:
        """Whether the evaluator finds that `rule`'s `when` holds for the witness `doc`."""
        from pydantic import ValidationError

        from router.evaluate.views import workload_view
        from router.models import Workload

        if doc is None:
            return False
        compiled = next(r for r in self.evaluator.rules if r.rule is rule)
        try:
            view = workload_view(Workload.model_validate(doc))
        except ValidationError:
            return False
        return compiled.when is None or bool(compiled.when(view, {}))

    # -- rules and denies --------------------------------------------------------------------
    def ask(self, conds: list[tuple[ast.Expr | None, bool]], minimal: bool = False) -> Any:
        """A workload for which each condition holds (False: its negation), from a model of
        these conditions only: a minimal witness document, or True; None if there is none."""
        s = self.small()
        lits = [encode_condition(s, e) if holds else encode_condition(s, e).Not()
                for e, holds in conds]  # fmt: skip
        if not minimal:
            return True if any_witness(s, lits) is not None else None
        w = minimal_witness(s, lits)
        return witness_document(s, w) if w is not None else None

    def rules(self) -> None:
        rules, denies = self.policy.rules, self.policy.denies
        for i, rule in enumerate(rules):
            if self.reachable[i]:
                continue
            when = (rule.when, True)
            not_denied = [(d.when, False) for d in denies]
            if self.ask([when]) is None:
                self.add("error", "unreachable-rule",
                         f"rule `{rule.name}` can never match: its `when` is never true",
                         name_span(rule))  # fmt: skip
                continue
            if self.ask([when, *not_denied]) is None:
                doc = self.ask([when], minimal=True)
                by = [d for d in denies if self.ask([when, (d.when, True)])]
                names = ", ".join(_where(d) for d in by)
                msg = f"rule `{rule.name}` can never match: every workload it matches is denied"
                self.add(
                    "error",
                    "unreachable-rule",
                    f"{msg} by {names}",
                    name_span(rule),
                    witness=doc,
                    hint="the witness matches this rule but is denied",
                )
                continue
            doc = self.ask([when, *not_denied], minimal=True)
            shadow = self.shadowing(i, doc)
            hint = None
            if doc is not None:
                decision = self.decide(doc)
                if decision is not None:
                    got = decision.rule.name if decision.rule is not None else decision.status
                    hint = f"the witness matches `{rule.name}` but is claimed by `{got}`"
                    if not self.matches(rule, doc):  # a condition read over-approximately
                        hint = (f"the witness is claimed by `{got}`; `{rule.name}`'s `when` "
                                "holds for it only as router check reads it (part of the "
                                "condition cannot be decided exactly)")  # fmt: skip
            msg = f"rule `{rule.name}` can never match: every workload it matches is claimed by"
            self.add("error", "unreachable-rule", f"{msg} {shadow}", name_span(rule),
                     witness=doc, hint=hint)  # fmt: skip

    def shadowing(self, i: int, doc: dict[str, Any] | None) -> str:
        """Which earlier rules claim every workload rule i matches: one alone if one does,
        else a set that does together (found a claimer at a time, not rule by rule)."""
        rules = self.policy.rules
        base = [(rules[i].when, True), *((d.when, False) for d in self.policy.denies)]
        # A rule that shadows alone matches every workload of rule i, so the witness too.
        earlier = [j for j in range(i) if self.matches(rules[j], doc)] or list(range(i))
        for j in earlier:
            if self.ask([*base, (rules[j].when, False)]) is None:
                return f"the earlier rule {_where(rules[j])}"
        cover: list[int] = []
        while len(cover) < i:
            found = self.ask([*base, *((rules[j].when, False) for j in cover)], minimal=True)
            if found is None:
                break
            d = self.decide(found)
            j = self.index.get(id(d.rule), -1) if d is not None and d.status == "routed" else -1
            if not 0 <= j < i or j in cover:  # the encoding and the evaluator disagree
                cover += [
                    k
                    for k in range(i)
                    if k not in cover and self.ask([*base, (rules[k].when, True)])
                ]
                break
            cover.append(j)
        return "the earlier rules " + ", ".join(_where(rules[j]) for j in sorted(cover))

    def denies(self) -> None:
        denies = self.policy.denies
        for k, deny in enumerate(denies):
            # A small model first: this deny's condition and the earlier denies' negations.
            s = self.small()
            lits = [encode_condition(s, deny.when)]
            lits += [encode_condition(s, d.when).Not() for d in denies[:k]]
            if any_witness(s, lits) is not None:
                continue
            s = self.small()
            never = any_witness(s, [encode_condition(s, deny.when)]) is None
            why = (
                "its `when` is never true"
                if never
                else ("every workload it matches is denied by an earlier deny rule")
            )
            self.add("warning", "unreachable-deny", f"deny `{deny.name}` can never match: {why}",
                     name_span(deny))  # fmt: skip

    def unrouted(self) -> None:
        rules, full = self.policy.rules, self.full
        lits = [*full.not_denied, *(w.Not() for w in full.when_lits)]
        if not self.sat(lits):
            return
        doc = self.witness(lits)
        span = name_span(rules[-1]) if rules else self.policy.files[0].span
        self.add("info", "unrouted", "some workloads match no rule and are left unrouted",
                 span, witness=doc,
                 hint="add a last rule without `when` to route every workload")  # fmt: skip

    # -- routes ------------------------------------------------------------------------------
    def fits(self, s: Space, route: ast.Route, ref: TargetRef, where_only: bool = False) -> Any:
        """A literal of space `s` implied by "this target satisfies `where` and can hold the
        workload" (the necessary conditions of shape.py)."""
        where = encode_condition(s, route.where, target=target_view(ref))
        if where_only:
            return where
        t, ints = ref.target, s.ints
        opts = {o.name: o for o in route.options}
        mig = "mig" in opts
        per_gpu = max(t.slices_per_node.values(), default=0) if mig else t.whole_gpus_per_node
        cap = getattr(t, "max_nodes", None) or t.nodes
        g = ints["gpus"]
        parts = [where, *_partition_access(s, t, opts)]
        if isinstance(t, Partition) and t.max_nodes_per_job is not None:
            cap = min(cap, t.max_nodes_per_job)  # MaxNodes bounds one job's nodes
        taints = getattr(t, "taints", [])
        if taints:  # shape.py: the pool's taints keep out work its rule does not entitle
            tol = opts.get("tolerate")
            value: object = tol.value.value if tol and isinstance(tol.value, ast.Literal) else []
            keys: list[str] = [str(k) for k in value] if isinstance(value, list) else []
            if untolerated(taints, True, keys):
                parts.append(s.const(False))
            elif untolerated(taints, False, keys):
                parts.append(reify(s, g - 1, ">="))
        if per_gpu == 0:
            parts.append(reify(s, g, "=="))
        else:
            gpu_var, gpu_types = s.strings["gpu_type"]
            ok_type = [i for i, v in enumerate(gpu_types) if v in ("any", t.gpu_type)]
            ok = [reify(s, gpu_var - i, "==") for i in ok_type]
            parts.append(s.any_of([reify(s, g, "=="), *ok]))
        time_opt = opts.get("time")
        if t.max_time is not None:
            if time_opt is not None and isinstance(time_opt.value, ast.Literal):
                parts.append(s.const(float(time_opt.value.value) <= t.max_time))
            else:
                parts.append(reify(s, ints["duration"] - t.max_time, "<="))
        svc = ints["service"]
        service_fits = [reify(s, g - per_gpu, "<="), reify(s, ints["cpus"] - t.cpus_per_node, "<="),
                        reify(s, ints["memory"] - t.memory_per_node, "<=")]  # fmt: skip
        job_fits = [
            reify(s, g - per_gpu * cap, "<="),
            reify(s, ints["cpus"] - t.cpus_per_node * cap, "<="),
            reify(s, ints["memory"] - t.memory_per_node * cap, "<="),
            reify(s, ints["nodes"] - cap, "<="),
            s.any_of([s.nodes_given.Not(), reify(s, ints["nodes"] - 1, "=="),
                    reify(s, ints["gpus_per_node"] - per_gpu, "<=")]),
        ]  # fmt: skip
        parts.append(s.any_of([s.all_of([svc, *service_fits]), s.all_of([svc.Not(), *job_fits])]))
        return s.all_of(parts)

    def groups(self, route: ast.Route, refs: list[TargetRef]) -> dict[TargetRef, list[TargetRef]]:
        """The targets by what this route can tell apart (the attributes its `where` reads,
        and the shape): one question per group, not per target (20,000 partitions are often
        a few shapes). Each group is keyed by its first target."""
        used = sorted({(n.field or "", n.key or "") for n in ast.walk(route.where)
                       if isinstance(n, ast.Name) and n.scope == "target"})  # fmt: skip
        found: dict[Any, list[TargetRef]] = {}
        for ref in refs:
            view = self.view(ref)
            seen = [view["labels"].get(k) if f == "labels" and k else view.get(f) for f, k in used]
            dump = ref.target.model_dump(exclude=_NOT_SHAPE)
            key = (ref.backend, repr(seen), repr(sorted(dump.items())))
            found.setdefault(key, []).append(ref)
        return {members[0]: members for members in found.values()}

    def view(self, ref: TargetRef) -> dict[str, Any]:
        views: dict[str, dict[str, Any]] = self.__dict__.setdefault("_views", {})
        if ref.id not in views:
            views[ref.id] = target_view(ref)
        return views[ref.id]

    def fits_concretely(self, rule: ast.Rule, k: int, w: Any, refs: list[TargetRef],
                        where_only: bool = False) -> bool:  # fmt: skip
        """Whether route k of `rule` takes workload `w` on one of `refs`, as the evaluator
        decides it (where, then shape)."""
        from router.evaluate.shape import shape
        from router.evaluate.views import workload_view

        compiled = next(r for r in self.evaluator.rules if r.rule is rule).routes[k]
        wv = workload_view(w)
        for ref in refs:
            if compiled.where is not None and not compiled.where(wv, self.view(ref)):
                continue
            if where_only:
                return True
            options = {n: v for n, v in compiled.options.items()
                       if ref.backend in OPTIONS[n].backends}  # fmt: skip
            if not isinstance(shape(w, ref, options), str):
                return True
        return False

    def fit_question(self, rule: ast.Rule, k: int, refs: list[TargetRef],
                     where_only: bool = False) -> tuple[Extra, Holds]:  # fmt: skip
        """ "Route k of `rule` takes the workload on one of `refs`", for `claims`."""
        route = rule.routes[k]

        def extra(s: Space) -> list[Any]:
            return [s.any_of([self.fits(s, route, r, where_only) for r in refs])]

        def holds(w: Any) -> bool:
            return self.fits_concretely(rule, k, w, refs, where_only)

        return extra, holds

    def routes(self) -> None:
        for i, rule in enumerate(self.policy.rules):
            if not self.reachable[i]:
                continue
            dead: list[tuple[ast.Route, str]] = []
            for k, route in enumerate(rule.routes):
                refs = [r for r in self.targets if route.backend in ("any", r.backend)]
                if not refs:
                    dead.append((route, f"the inventory has no {route.backend} target"))
                    continue
                self.mig_profile(route, refs)
                groups = self.groups(route, refs)
                heads = list(groups)
                self.ignored_options(i, rule, k, groups)
                if self.claims(i, *self.fit_question(rule, k, heads)):
                    continue
                wheres = [m for head, members in groups.items()
                          if self.claims(i, *self.fit_question(rule, k, [head], True))
                          for m in members]  # fmt: skip
                if not wheres:
                    what = "any target" if route.backend == "any" else f"a {route.backend} target"
                    why = f"`where` holds for no {what.split(' ', 1)[1]} in the inventory"
                    if route.where is None:
                        why = f"no {what.split(' ', 1)[1]} can hold a workload this rule claims"
                else:
                    more = ", ..." if len(wheres) > 4 else ""
                    names = ", ".join(r.id for r in wheres[:4]) + more
                    why = (
                        f"the targets `where` admits ({names}) cannot hold any workload"
                        " this rule claims"
                    )
                dead.append((route, why))
            for route, why in dead:
                sev: Any = "error" if len(dead) == len(rule.routes) else "warning"
                which = "route" if route.rank == 0 else f"fallback route {route.rank}"
                msg = f"the {which} of rule `{rule.name}` can never place a workload: {why}"
                doc = self.witness(self.full.reach(i))
                hint = "the witness reaches this rule; no target of the route takes it"
                self.add(
                    sev,
                    "route-never-fits",
                    msg,
                    route.backend_span or route.span,
                    witness=doc,
                    hint=hint,
                )

    def mig_profile(self, route: ast.Route, refs: list[TargetRef]) -> None:
        """A `mig` profile that no target of the route offers: its GPU work can never fit."""
        opt = next((o for o in route.options if o.name == "mig"), None)
        lit = opt.value if opt and isinstance(opt.value, ast.Literal) else None
        value = lit.value if lit else None
        if lit is None or not isinstance(value, str):
            return
        offered = sorted({p for r in refs for p in r.target.slices_per_node})
        if value in offered:
            return
        where = "any target" if route.backend == "any" else f"any {route.backend} target"
        has = f"they offer {', '.join(offered)}" if offered else "none is cut into MIG slices"
        msg = f"MIG profile {value} is not offered by {where} ({has}): GPU work here never fits"
        hint = did_you_mean(value, offered) or "see the targets' `mig` in the inventory"
        self.add("warning", "mig-profile", msg, lit.span, hint=hint)

    def ignored_options(self, i: int, rule: ast.Rule, k: int,
                        groups: dict[TargetRef, list[TargetRef]]) -> None:  # fmt: skip

        route = rule.routes[k]
        for opt in route.options:
            spec = OPTIONS.get(opt.name)
            if spec is None:
                continue
            if route.backend == "any":
                hit = [m for head, members in groups.items()
                       if head.backend not in spec.backends
                       and self.claims(i, *self.fit_question(rule, k, [head], True))
                       for m in members]  # fmt: skip
                if hit:
                    owner = " and ".join(spec.backends)
                    names = ", ".join(r.id for r in hit[:3]) + (", ..." if len(hit) > 3 else "")
                    msg = (
                        f"`{opt.name}` is a {owner} option: it is ignored when this"
                        f" `route any` places on {hit[0].backend} targets ({names})"
                    )
                    hint = f'add `where backend == "{spec.backends[0]}"` or split the route'
                    self.add("warning", "ignored-option", msg, opt.span, hint=hint)
            if "kubernetes" not in spec.backends:
                continue
            service = (_service_lits, _is_service)
            job = (_job_lits, _is_job)
            if opt.name in _SERVICE_ONLY and not self.claims(i, *service):
                msg = (
                    f"`{opt.name}` applies to services only; rule `{rule.name}` claims only jobs"
                    ' (not kind "inference", no replicas), so it is ignored'
                )
                self.add("warning", "ignored-option", msg, opt.span)
            if opt.name in _JOB_ONLY and not self.claims(i, *job):
                msg = (
                    f"`{opt.name}` applies to jobs only; rule `{rule.name}` claims only"
                    " services, so it is ignored"
                )
                self.add("warning", "ignored-option", msg, opt.span)

    # -- constants and quotas ----------------------------------------------------------------
    def unused_constants(self, raw: ast.Policy | None) -> None:
        source = raw or self.policy
        used: set[str] = set()
        for e in _all_exprs(source):
            for n in ast.walk(e):
                if isinstance(n, ast.Name) and len(n.parts) == 1:
                    used.add(n.parts[0])
        for let in source.lets:
            if let.name not in used:
                self.add(
                    "warning",
                    "unused-constant",
                    f"constant `{let.name}` is never used",
                    name_span(let),
                    hint="remove it, or use it where the value is repeated",
                )

    def quotas(self) -> None:
        from router.evaluate.quota import QuotaLimit, compile_quotas

        routed = self.space.any_of(self.full.when_lits)
        # The workload keys of `per` are left out: every workload part of a limit has the same
        # targets and amount, so what holds for one holds for all (and no workloads are needed).
        parts: dict[tuple[int, int], list[QuotaLimit]] = {}
        for ql in compile_quotas(self.policy, self.inventory, workload_keys=False):
            parts.setdefault((id(ql.quota), id(ql.limit)), []).append(ql)
        for q in self.policy.quotas:
            for lim in q.limits:
                self.quota_limit(q, lim, parts.get((id(q), id(lim)), []), routed)

    def quota_limit(self, q: ast.Quota, limit: ast.Limit, parts: list[Any], routed: Any) -> None:
        """Whether one limit of a quota can bind, over its target parts (one without `per`)."""
        from router.evaluate.quota import capacity

        span = limit.span
        if not any(p.targets for p in parts):
            self.add(
                "warning",
                "quota-never-binds",
                f"quota `{q.name}` never binds: its `on` matches no target",
                span,
            )
            return
        if limit.resource != "workloads":
            totals = [
                sum(capacity(r, limit.resource) for r in self.targets if r.id in p.targets)
                for p in parts
            ]
            if all(p.amount >= total for p, total in zip(parts, totals, strict=True)):
                lim, total = parts[0], totals[0]
                msg = (
                    f"quota `{q.name}` never binds: {lim.described}, but the targets it is"
                    f" on have {total} {lim.resource} in all"
                )
                if lim.resource == "memory":
                    msg = (
                        f"quota `{q.name}` never binds: {lim.described} is at least all "
                        "the memory of the targets it is on"
                    )
                if len(parts) > 1:
                    amount = f"{limit.resource} {limit.op} {format_expr(limit.amount)}"
                    msg = (
                        f"quota `{q.name}` never binds: in each of its {len(parts)} parts, "
                        f"{amount} is at least what the part's targets have"
                    )
                self.add("warning", "quota-never-binds", msg, span)
                return
        if q.for_ is not None and not self.a_routed_example_is_member(q.for_):
            member = encode_condition(self.space, q.for_)
            if not self.sat([member, routed, *self.full.not_denied]):
                msg = (
                    f"quota `{q.name}` never binds: its `for` matches no workload that a"
                    " rule routes"
                )
                self.add("warning", "quota-never-binds", msg, q.for_.span)

    def a_routed_example_is_member(self, for_: ast.Expr) -> bool:
        """Whether a workload seen routed (the rules' examples) satisfies `for_`: then the
        quota can bind, and the whole-policy model need not be asked."""
        from router.evaluate.expr import compile_expr
        from router.evaluate.views import workload_view

        holds = compile_expr(for_, self.policy.constants)
        return any(bool(holds(workload_view(w), {}))
                   for found in self.examples.values() for w in found)  # fmt: skip

    def spreads(self) -> None:
        """A spread `across` an attribute no target has puts every target in one value,
        "none": a group then gets `max` places in all, which is rarely what was meant."""
        from router.evaluate.spread import compile_spreads

        for s in compile_spreads(self.policy, self.inventory):
            if s.values and all(v is None for v in s.values.values()):
                self.add(
                    "warning",
                    "spread-one-value",
                    f"spread `{s.name}`: no target has `{s.attribute}`, so all targets "
                    "count as one value and a group gets "
                    + (
                        f"at most {s.most} placed in all"
                        if s.most is not None
                        else "no limit from it"
                    ),
                    s.spread.across.span,
                )


def _service_lits(s: Space) -> list[Any]:
    return [s.ints["service"]]


def _job_lits(s: Space) -> list[Any]:
    return [s.ints["service"].Not()]


def _is_service(w: Any) -> bool:
    from router.evaluate.views import workload_view

    return bool(workload_view(w)["service"])


def _is_job(w: Any) -> bool:
    return not _is_service(w)


def _required_kind(e: Any) -> str | None:
    """The kind a condition requires (`kind == "x" and ...`), or None if it does not."""
    if isinstance(e, ast.Binary) and e.op == "and":
        return _required_kind(e.left) or _required_kind(e.right)
    if isinstance(e, ast.Binary) and e.op == "==":
        for a, b in ((e.left, e.right), (e.right, e.left)):
            if (isinstance(a, ast.Name) and a.scope == "workload" and a.field == "kind"
                    and isinstance(b, ast.Literal) and isinstance(b.value, str)):  # fmt: skip
                return b.value
    return None


def _all_exprs(p: ast.Policy) -> list[Any]:
    out: list[Any] = [let.value for let in p.lets] + [d.when for d in p.denies]
    for r in p.rules:
        out.append(r.when)
        for rt in r.routes:
            out += [rt.where, *(x.expr for x in rt.prefer)]
            for o in rt.options:
                out += [o.value, *o.args.values()]
    for q in p.quotas:
        out += [q.for_, q.on, *(lim.amount for lim in q.limits)]
    out += [x for c in p.checks for x in (c.for_, c.expect)]
    out += [x for sp in p.spreads for x in (sp.for_, sp.by, sp.max)]
    return out


def analyze(
    policy: ast.Policy,
    inventory: Inventory,
    raw: ast.Policy | None = None,
    workloads: list[Any] | None = None,
) -> list[Finding]:
    """Every finding about a checked `policy` with `inventory`, in file and line order.

    `raw` is the same policy parsed but not checked: the checker folds constants used in
    option values and limits into literals, so only the raw tree shows every use of a `let`.
    `workloads` (those of the repository) are the known values of workload fields: a string
    compared with a field that none of them has is a warning (literals.py).
    """
    from router.assure.literals import policy_unit_findings, value_findings

    a = _Analysis(policy, inventory)
    a.rules()
    a.denies()
    a.unrouted()
    a.routes()
    a.unused_constants(raw)
    a.quotas()
    a.spreads()
    a.findings += value_findings(policy, inventory, workloads)
    a.findings += policy_unit_findings(raw or policy)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(a.findings, key=lambda f: (f.path, f.line, f.column, order[f.severity]))


def _partition_access(s: Space, t: object, opts: dict[str, ast.Option]) -> list[Any]:
    """Necessary conditions of shape._partition_access: the QOS (the route's or the
    partition's) and, when the route sets one, the account must be listed, and the team must
    be one of AllowGroups. A route without `account` may meet a workload that states one."""
    if not isinstance(t, Partition):
        return []

    def stated(name: str, default: object) -> tuple[bool, object]:
        """(known, value) of an option: unknown when it is not a literal."""
        o = opts.get(name)
        if o is None:
            return True, default
        return isinstance(o.value, ast.Literal), getattr(o.value, "value", None)

    known, account = stated("account", None)
    refused = t.allow_accounts is not None and account not in t.allow_accounts
    denied = t.allow_accounts is None and account in t.deny_accounts
    if known and account is not None and (refused or denied):
        return [s.const(False)]
    known, qos = stated("qos", t.qos)
    if t.allow_qos is not None and known and qos not in t.allow_qos:
        return [s.const(False)]
    if t.allow_qos is None and known and qos in t.deny_qos:
        return [s.const(False)]
    flag = opts.get("exclusive")  # a bare flag has no value
    exclusive = flag is not None and (
        flag.value is None or (isinstance(flag.value, ast.Literal) and flag.value.value is True)
    )
    if (t.oversubscribe or "").startswith("force") and exclusive:
        return [s.const(False)]  # OverSubscribe=FORCE does not honour exclusive
    if t.allow_groups is None:
        return []
    var, teams = s.strings["team"]
    return [s.any_of([reify(s, var - i, "==") for i, v in enumerate(teams) if v in t.allow_groups])]
