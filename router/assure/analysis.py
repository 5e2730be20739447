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

from dataclasses import dataclass
from typing import Any, Literal

from router.assure.encode import (
    Space,
    encode_condition,
    encode_workload_space,
    minimal_witness,
    reify,
    satisfiable,
    witness_document,
)
from router.errors import Span
from router.evaluate.views import target_view
from router.language import ast
from router.language.checker import name_span
from router.language.fmt import format_expr
from router.language.names import OPTIONS
from router.models import Inventory, Partition, TargetRef
from router.models.inventory import untolerated

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
_JOB_ONLY = {"operator"}  # read only when a job is emitted
_SERVICE_ONLY = {"hpa", "pdb", "serving"}  # read only when a service is emitted


@dataclass
class Finding:
    severity: Severity
    code: str  # unreachable-rule, unreachable-deny, unrouted, route-never-fits, ...
    message: str
    path: str
    line: int
    column: int = 1
    witness: dict[str, Any] | None = None
    hint: str | None = None
    end_line: int | None = None
    end_column: int | None = None

    def location(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "severity": self.severity, "code": self.code, "message": self.message,
            "file": self.path, "line": self.line, "column": self.column,
        }  # fmt: skip
        if self.hint:
            out["hint"] = self.hint
        if self.witness is not None:
            out["witness"] = self.witness
        return out


def finding_at(severity: Severity, code: str, message: str, span: Span, **kw: Any) -> Finding:
    end: dict[str, Any] = {"end_line": span.end_line or None, "end_column": span.end_column or None}
    return Finding(severity, code, message, span.path, span.line, span.column, **end, **kw)


def _where(st: Any) -> str:
    return f"`{st.name}` ({st.span.location()})"


class _Analysis:
    def __init__(self, policy: ast.Policy, inventory: Inventory) -> None:
        self.policy, self.inventory = policy, inventory
        self.space: Space = encode_workload_space(policy, inventory)
        s = self.space
        self.targets = inventory.targets()
        self.deny_lits = [encode_condition(s, d.when) for d in policy.denies]
        self.when_lits = [encode_condition(s, r.when) for r in policy.rules]
        self.not_denied = [d.Not() for d in self.deny_lits]
        self.reach = [
            [w, *(x.Not() for x in self.when_lits[:i]), *self.not_denied]
            for i, w in enumerate(self.when_lits)
        ]
        self.reachable = [satisfiable(s, r) for r in self.reach]
        self.findings: list[Finding] = []
        self._evaluator: Any = None

    def sat(self, lits: list[Any]) -> bool:
        return satisfiable(self.space, lits)

    def witness(self, lits: list[Any]) -> dict[str, Any] | None:
        w = minimal_witness(self.space, lits)
        return witness_document(self.space, w) if w is not None else None

    def decide(self, doc: dict[str, Any]) -> Any:
        """How the evaluator routes a witness (a cross-check of the encoding, and the story)."""
        from router.evaluate.evaluate import Evaluator
        from router.models import Workload

        if self._evaluator is None:
            self._evaluator = Evaluator(self.policy, self.inventory)
        return self._evaluator.decide(Workload.model_validate(doc))

    def add(self, *args: Any, **kw: Any) -> None:
        self.findings.append(finding_at(*args, **kw))

    # -- rules and denies --------------------------------------------------------------------
    def rules(self) -> None:
        rules = self.policy.rules
        for i, rule in enumerate(rules):
            if self.reachable[i]:
                continue
            when = self.when_lits[i]
            if not self.sat([when]):
                self.add("error", "unreachable-rule",
                         f"rule `{rule.name}` can never match: its `when` is never true",
                         name_span(rule))  # fmt: skip
                continue
            doc = self.witness([when])
            if not self.sat([when, *self.not_denied]):
                by = [d for d, lit in zip(self.policy.denies, self.deny_lits, strict=True)
                      if self.sat([when, lit])]  # fmt: skip
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
            earlier = list(zip(rules[:i], self.when_lits[:i], strict=True))
            alone = [r for r, lit in earlier if not self.sat([when, lit.Not(), *self.not_denied])]
            if alone:
                shadow = f"the earlier rule {_where(alone[0])}"
            else:
                by_rules = [r for r, lit in earlier if self.sat([when, lit, *self.not_denied])]
                shadow = "the earlier rules " + ", ".join(_where(r) for r in by_rules)
            doc = self.witness([when, *self.not_denied])
            hint = None
            if doc is not None:
                decision = self.decide(doc)
                got = decision.rule.name if decision.rule is not None else decision.status
                hint = f"the witness matches `{rule.name}` but is claimed by `{got}`"
            msg = f"rule `{rule.name}` can never match: every workload it matches is claimed by"
            self.add("error", "unreachable-rule", f"{msg} {shadow}", name_span(rule),
                     witness=doc, hint=hint)  # fmt: skip

    def denies(self) -> None:
        for k, deny in enumerate(self.policy.denies):
            lits = [self.deny_lits[k], *self.not_denied[:k]]
            if self.sat(lits):
                continue
            why = (
                "its `when` is never true"
                if not self.sat(lits[:1])
                else ("every workload it matches is denied by an earlier deny rule")
            )
            self.add("warning", "unreachable-deny", f"deny `{deny.name}` can never match: {why}",
                     name_span(deny))  # fmt: skip

    def unrouted(self) -> None:
        rules = self.policy.rules
        lits = [*self.not_denied, *(w.Not() for w in self.when_lits)]
        if not self.sat(lits):
            return
        doc = self.witness(lits)
        span = name_span(rules[-1]) if rules else self.policy.files[0].span
        self.add("info", "unrouted", "some workloads match no rule and are left unrouted",
                 span, witness=doc,
                 hint="add a last rule without `when` to route every workload")  # fmt: skip

    # -- routes ------------------------------------------------------------------------------
    def fits(self, route: ast.Route, ref: TargetRef, where_only: bool = False) -> Any:
        """A literal implied by "this target satisfies `where` and can hold the workload"."""
        s = self.space
        where = encode_condition(s, route.where, target=target_view(ref))
        if where_only:
            return where
        t, ints = ref.target, s.ints
        opts = {o.name: o for o in route.options}
        mig = ref.backend == "kubernetes" and "mig" in opts
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

    def routes(self) -> None:
        for i, rule in enumerate(self.policy.rules):
            if not self.reachable[i]:
                continue
            reach = self.reach[i]
            dead: list[tuple[ast.Route, str]] = []
            for route in rule.routes:
                refs = [r for r in self.targets if route.backend in ("any", r.backend)]
                if not refs:
                    dead.append((route, f"the inventory has no {route.backend} target"))
                    continue
                self.ignored_options(rule, route, refs, reach)
                if self.sat([*reach, self.space.any_of([self.fits(route, r) for r in refs])]):
                    continue
                wheres = [r for r in refs if self.sat([*reach, self.fits(route, r, True)])]
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
                doc = self.witness(reach)
                hint = "the witness reaches this rule; no target of the route takes it"
                self.add(
                    sev,
                    "route-never-fits",
                    msg,
                    route.backend_span or route.span,
                    witness=doc,
                    hint=hint,
                )

    def ignored_options(self, rule: ast.Rule, route: ast.Route, refs: list[TargetRef],
                        reach: list[Any]) -> None:  # fmt: skip
        svc = self.space.ints["service"]
        for opt in route.options:
            spec = OPTIONS.get(opt.name)
            if spec is None:
                continue
            if route.backend == "any":
                other = [r for r in refs if r.backend not in spec.backends]
                hit = [r for r in other if self.sat([*reach, self.fits(route, r, True)])]
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
            if opt.name in _SERVICE_ONLY and not self.sat([*reach, svc]):
                msg = (
                    f"`{opt.name}` applies to services only; rule `{rule.name}` claims only jobs"
                    ' (not kind "inference", no replicas), so it is ignored'
                )
                self.add("warning", "ignored-option", msg, opt.span)
            if opt.name in _JOB_ONLY and not self.sat([*reach, svc.Not()]):
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

        routed = self.space.any_of(self.when_lits)
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
        if q.for_ is not None:
            member = encode_condition(self.space, q.for_)
            if not self.sat([member, routed, *self.not_denied]):
                msg = (
                    f"quota `{q.name}` never binds: its `for` matches no workload that a"
                    " rule routes"
                )
                self.add("warning", "quota-never-binds", msg, q.for_.span)

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
    policy: ast.Policy, inventory: Inventory, raw: ast.Policy | None = None
) -> list[Finding]:
    """Every finding about a checked `policy` with `inventory`, in file and line order.

    `raw` is the same policy parsed but not checked: the checker folds constants used in
    option values and limits into literals, so only the raw tree shows every use of a `let`.
    """
    a = _Analysis(policy, inventory)
    a.rules()
    a.denies()
    a.unrouted()
    a.routes()
    a.unused_constants(raw)
    a.quotas()
    a.spreads()
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
    if known and account is not None and refused:
        return [s.const(False)]
    known, qos = stated("qos", t.qos)
    if t.allow_qos is not None and known and qos not in t.allow_qos:
        return [s.const(False)]
    if t.allow_groups is None:
        return []
    var, teams = s.strings["team"]
    return [s.any_of([reify(s, var - i, "==") for i, v in enumerate(teams) if v in t.allow_groups])]
