"""Encode the bounded workload space and policy conditions as a CP-SAT model.

Shared with prove.py (`router test`) and analysis.py (`router check`): one encoder, one meaning.

    space = encode_workload_space(policy, inventory)   # CP-SAT model + one variable per field
    b = encode_condition(space, rule.when)              # BoolVar: the condition holds
    fit = encode_condition(space, route.where, target=target_view(ref))  # target attrs fixed
    w = minimal_witness(space, [b, ...])                # smallest workload, or None (UNSAT)
    doc = witness_document(space, w)                     # a workload dict to paste into YAML

Fields: numbers (gpus, nodes, gpus_per_node, cpus, memory MiB, duration s, priority,
min_replicas, max_replicas) are bounded integers; booleans (preemptible, service) 0/1; strings
(kind, team, gpu_type, name, image, labels.KEY) an index into a domain made of every string the
policy (and the inventory, for `gpu_type`) compares them with, plus one "other" value (and None
for an optional field: image, an absent label). The view's derived fields are tied together
as views.py computes them (`gpus_per_node` is ceil(gpus / nodes), or given; `service` is
kind "inference" or replicas given).

Soundness: a construct the encoder cannot express (arithmetic of two fields, ordering strings,
a field compared with a field of another type) becomes a free boolean: it over-approximates
both the condition and its negation, so UNSAT ("no workload can ...") stays a proof; its span
is recorded in `Space.approximate`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import lcm
from typing import TYPE_CHECKING, Any

from router.evaluate.expr import _compare as _py_compare
from router.evaluate.expr import _contains
from router.language import ast
from router.language.names import WORKLOAD_FIELDS
from router.models import Inventory
from router.models.workload import WORKLOAD_DEFAULTS
from router.solve import cpmodel

if TYPE_CHECKING:
    from ortools.sat.python import cp_model
else:
    cp_model = cpmodel.load()  # without pandas (router/solve/cpmodel.py), as `router plan`

# (low, high, default) per numeric field; defaults are the Workload model's.
_D = WORKLOAD_DEFAULTS
NUMBERS: dict[str, tuple[int, int, int]] = {
    "gpus": (0, 4096, _D["gpus"]),
    "nodes": (1, 1024, _D["nodes"]),
    "gpus_per_node": (0, 4096, 0),  # unset: derived from the target
    "cpus": (1, 65536, _D["cpus"]),
    "memory": (1, 64 * 1024 * 1024, _D["memory"]),
    "duration": (1, 366 * 86400, _D["duration"]),
    "priority": (0, 1000, _D["priority"]),
    "min_replicas": (1, 1000, _D["min_replicas"]),
    "max_replicas": (1, 1000, _D["max_replicas"]),
    "preemptible": (0, 1, int(_D["preemptible"])),
    "service": (0, 1, 0),
}
STRINGS = ("kind", "team", "gpu_type", "name", "image")
# Witness order: fewest GPUs, then nodes, then the shape, then the closest to the defaults.
ORDER = ("gpus", "nodes", "gpus_per_node", "kind", "team", "gpu_type", "service",
         "min_replicas", "max_replicas", "cpus", "memory", "duration", "priority",
         "preemptible", "name", "image")  # fmt: skip
OTHER = "<other>"  # stands for any string the policy does not mention

Num = tuple[dict[str, Fraction], Fraction]  # a linear form over numeric fields


@dataclass
class Space:
    """The CP-SAT model of every workload, and how to read a solution back."""

    policy: ast.Policy
    model: cp_model.CpModel
    ints: dict[str, cp_model.IntVar]
    strings: dict[str, tuple[cp_model.IntVar, list[str | None]]]  # "kind", "labels.app"
    replicas_given: cp_model.IntVar
    nodes_given: cp_model.IntVar
    approximate: list[ast.Expr] = field(default_factory=list)
    _true: cp_model.IntVar | None = None

    def true(self) -> cp_model.IntVar:
        if self._true is None:
            self._true = self.model.new_bool_var("true")
            self.model.add(self._true == 1)
        return self._true

    def const(self, value: bool) -> Any:
        return self.true() if value else self.true().Not()

    def all_of(self, lits: list[Any]) -> Any:
        """A literal equal to the conjunction of `lits` (None entries left out; none: true)."""
        lits = [x for x in lits if x is not None]
        if not lits:
            return self.true()
        if len(lits) == 1:
            return lits[0]
        b = self.model.new_bool_var("and")
        self.model.add_bool_and(lits).only_enforce_if(b)
        self.model.add_bool_or([x.Not() for x in lits]).only_enforce_if(b.Not())
        return b

    def any_of(self, lits: list[Any]) -> Any:
        """A literal equal to the disjunction of `lits` (none: false)."""
        lits = [x for x in lits if x is not None]
        if not lits:
            return self.const(False)
        if len(lits) == 1:
            return lits[0]
        b = self.model.new_bool_var("or")
        self.model.add_bool_or(lits).only_enforce_if(b)
        self.model.add_bool_and([x.Not() for x in lits]).only_enforce_if(b.Not())
        return b


def policy_exprs(policy: ast.Policy) -> list[ast.Expr | None]:
    """Every expression of the policy (workload and target conditions)."""
    exprs: list[ast.Expr | None] = [d.when for d in policy.denies]
    for r in policy.rules:
        exprs.append(r.when)
        for rt in r.routes:
            exprs += [rt.where, *(p.expr for p in rt.prefer)]
    exprs += [q.for_ for q in policy.quotas] + [q.on for q in policy.quotas]
    exprs += [c.for_ for c in policy.checks]
    return exprs


def _key(n: ast.Name) -> str | None:
    if n.scope != "workload" or n.field is None:
        return None
    if n.field == "labels":
        return f"labels.{n.key}" if n.key is not None else None
    return n.field if n.field in STRINGS else None


def _strings_of(e: ast.Expr, constants: dict[str, Any]) -> list[Any]:
    if isinstance(e, ast.Literal):
        return [e.value]
    if isinstance(e, ast.Name) and e.scope == "const":
        v = constants.get(e.field or "")
        return list(v) if isinstance(v, list) else [v]
    if isinstance(e, ast.ListExpr):
        return [s for i in e.items for s in _strings_of(i, constants)]
    return []


Domains = dict[str, list[str | None]]


def workload_domains(policy: ast.Policy, inventory: Inventory | None = None) -> Domains:
    """The string values each string field can tell apart (what `encode_workload_space`
    builds its variables from); computed once, it makes new spaces cheap."""
    return _domains(policy, inventory)


def _domains(policy: ast.Policy, inventory: Inventory | None) -> Domains:
    found: dict[str, list[str | None]] = {
        "kind": [],
        "team": [_D["team"]],
        "gpu_type": [_D["gpu_type"]],
    }
    found |= {"name": [], "image": []}
    for e in (x for top in policy_exprs(policy) for x in ast.walk(top)):
        if (isinstance(e, ast.Binary) and e.op == "in" and isinstance(e.right, ast.Name)
                and e.right.scope == "workload" and e.right.field == "labels"
                and not e.right.key):  # fmt: skip
            for s in _strings_of(e.left, policy.constants):  # `"app" in labels`
                if isinstance(s, str):
                    found.setdefault(f"labels.{s}", [None])
        if not isinstance(e, ast.Binary) or e.op in ("and", "or"):
            continue
        for side, other in ((e.left, e.right), (e.right, e.left)):
            key = _key(side) if isinstance(side, ast.Name) else None
            if key is None:
                continue
            values = found.setdefault(key, [None])
            for s in _strings_of(other, policy.constants):
                if isinstance(s, str) and s not in values:
                    values.append(s)
    if inventory is not None:
        for ref in inventory.targets():
            gt = ref.target.gpu_type
            if gt and gt not in found["gpu_type"]:
                found["gpu_type"].append(gt)
            # A partition's AllowGroups names teams: the space must hold them to place there.
            for group in getattr(ref.target, "allow_groups", None) or ():
                if group not in found["team"]:
                    found["team"].append(group)
    if "inference" not in found["kind"]:  # it makes a service: always told apart
        found["kind"].append("inference")
    for values in found.values():
        values.append(OTHER)
    found["image"].append(None)  # last: a witness has an image unless the policy needs none
    return found


def encode_workload_space(
    policy: ast.Policy, inventory: Inventory | None = None, domains: Domains | None = None
) -> Space:
    """A CP-SAT model whose solutions are exactly the workload views the policy can tell apart.
    `domains` (from `workload_domains`) saves finding them again."""
    m = cp_model.CpModel()
    ints = {f: m.new_int_var(lo, hi, f) for f, (lo, hi, _) in NUMBERS.items()}
    strings = {}
    found = _domains(policy, inventory) if domains is None else domains
    for key, values in found.items():
        strings[key] = (m.new_int_var(0, len(values) - 1, key), values)
    space = Space(policy, m, ints, strings, m.new_bool_var("replicas_given"),
                  m.new_bool_var("nodes_given"))  # fmt: skip
    g, n, gpn = ints["gpus"], ints["nodes"], ints["gpus_per_node"]
    # gpus_per_node as views.py derives it: ceil(gpus / nodes), or a divisor given alone.
    prod = m.new_int_var(0, 4096 * 1024, "nodes_x_gpn")
    m.add_multiplication_equality(prod, [n, gpn])
    ceil_case = space.nodes_given  # nodes given: gpus_per_node is ceil(gpus / nodes)
    m.add(prod >= g).only_enforce_if(ceil_case)
    m.add(prod - n < g).only_enforce_if(ceil_case)
    # Otherwise nodes reads as 1 and gpus_per_node, if given, divides gpus.
    m.add(n == 1).only_enforce_if(ceil_case.Not())
    mult = m.new_int_var(0, 4096, "gpn_multiple")
    m.add_multiplication_equality(g, [gpn, mult])
    m.add(gpn >= 1).only_enforce_if(ceil_case.Not())
    m.add(gpn <= g)
    # A service is kind "inference" or has replicas; only a service has more than one.
    kind_var, kinds = strings["kind"]
    inference = m.new_bool_var("is_inference")
    m.add(kind_var == kinds.index("inference")).only_enforce_if(inference)
    m.add(kind_var != kinds.index("inference")).only_enforce_if(inference.Not())
    m.add_bool_or([inference, space.replicas_given]).only_enforce_if(ints["service"])
    m.add_bool_and([inference.Not(), space.replicas_given.Not()]).only_enforce_if(
        ints["service"].Not()
    )
    m.add(ints["min_replicas"] <= ints["max_replicas"])
    for r in ("min_replicas", "max_replicas"):
        m.add(ints[r] == 1).only_enforce_if(space.replicas_given.Not())
    return space


# -- conditions ------------------------------------------------------------------------------
# CP-SAT's linear expressions are 64-bit: a form whose terms could pass this is left free.
_MAX_TERM = 2**53


def _lin(space: Space, form: Num) -> tuple[Any, int] | None:
    """An integer linear expression and its scale (the form times `scale`); None if a term
    could overflow CP-SAT's integers (`gpus * 10^15 * 10^15`)."""
    coeffs, const = form
    scale = lcm(*(c.denominator for c in [*coeffs.values(), const]))
    if abs(const * scale) > _MAX_TERM:
        return None
    expr: Any = int(const * scale)
    for f, c in coeffs.items():
        lo, hi = NUMBERS[f][:2]
        if abs(c * scale) * max(abs(lo), abs(hi)) > _MAX_TERM:
            return None
        expr = expr + int(c * scale) * space.ints[f]
    return expr, scale


def _value(space: Space, e: ast.Expr, target: dict[str, Any] | None) -> tuple[str, Any] | None:
    """("num", Num) | ("str", key) | ("bool", field) | ("const", value) | ("labels", None)."""
    if isinstance(e, ast.Literal):
        v = e.value
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return "num", ({}, Fraction(str(v)))
        return "const", v
    if isinstance(e, ast.ListExpr):
        items = [_value(space, i, target) for i in e.items]
        if all(i is not None and i[0] == "const" for i in items):
            return "const", [i[1] for i in items if i]
        if all(i is not None and i[0] == "num" and not i[1][0] for i in items):
            return "const", [_num_const(i[1]) for i in items if i]
        return None
    if isinstance(e, ast.Name):
        return _name(space, e, target)
    if isinstance(e, ast.Unary):
        if e.op == "not":
            return None
        inner = _value(space, e.operand, target)
        if inner and inner[0] == "num":
            return "num", ({f: -c for f, c in inner[1][0].items()}, -inner[1][1])
        return None
    if isinstance(e, ast.Binary) and e.op in "+-*/":
        return _arith(space, e, target)
    return None


def _num_const(form: Num) -> int | float:
    c = form[1]
    return int(c) if c.denominator == 1 else float(c)


def _as_const(form: Num) -> tuple[str, Any]:
    """A constant numeric form as a ("const", number) value (typed as `_value` returns)."""
    return "const", _num_const(form)


def _name(space: Space, n: ast.Name, target: dict[str, Any] | None) -> tuple[str, Any] | None:
    if n.scope == "const":
        v = space.policy.constants.get(n.field or n.parts[0])
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return "num", ({}, Fraction(str(v)))
        return "const", v
    if n.scope == "target":
        if target is None:
            return None
        v = target["labels"].get(n.key) if n.key is not None else target.get(n.field or "")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return "num", ({}, Fraction(str(v)))
        return "const", v
    if n.scope != "workload" or n.field is None:
        return None
    if n.field == "labels":
        if n.key is None:
            return "labels", None
        key = f"labels.{n.key}"
        return ("str", key) if key in space.strings else ("const", None)
    if n.field in STRINGS:
        return "str", n.field
    kind = WORKLOAD_FIELDS.get(n.field)
    if kind == "bool":
        return "bool", n.field
    if n.field in space.ints:
        return "num", ({n.field: Fraction(1)}, Fraction(0))
    return None


def _arith(space: Space, e: ast.Binary, target: dict[str, Any] | None) -> tuple[str, Any] | None:
    a, b = _value(space, e.left, target), _value(space, e.right, target)
    if a is None or b is None or a[0] != "num" or b[0] != "num":
        return None
    (ca, ka), (cb, kb) = a[1], b[1]
    if e.op in "+-":
        sign = 1 if e.op == "+" else -1
        coeffs = dict(ca)
        for f, c in cb.items():
            coeffs[f] = coeffs.get(f, Fraction(0)) + sign * c
        return "num", (coeffs, ka + sign * kb)
    if e.op == "*" and (not ca or not cb):
        k, (coeffs, c0) = (ka, (cb, kb)) if not ca else (kb, (ca, ka))
        return "num", ({f: c * k for f, c in coeffs.items()}, c0 * k)
    if e.op == "/" and not cb and kb != 0:
        return "num", ({f: c / kb for f, c in ca.items()}, ka / kb)
    return None


def encode_condition(
    space: Space, expr: ast.Expr | None, target: dict[str, Any] | None = None
) -> Any:
    """A literal that holds exactly when `expr` holds for the workload (and `target`, a target
    view whose attributes are then constants). None means no condition: always true."""
    if expr is None:
        return space.true()
    if isinstance(expr, ast.Unary) and expr.op == "not":
        return encode_condition(space, expr.operand, target).Not()
    if isinstance(expr, ast.Binary) and expr.op in ("and", "or"):
        parts = [encode_condition(space, s, target) for s in (expr.left, expr.right)]
        return space.all_of(parts) if expr.op == "and" else space.any_of(parts)
    if isinstance(expr, ast.Binary) and expr.op in ("in", "not in"):
        b = _membership(space, expr, target)
        return b if expr.op == "in" else b.Not()
    if isinstance(expr, ast.Binary) and expr.op in ("==", "!=", "<", "<=", ">", ">="):
        return _comparison(space, expr, target)
    v = _value(space, expr, target)
    if v is not None and v[0] == "bool":
        return _eq(space, space.ints[v[1]], 1)
    if v is not None and v[0] == "const":
        return space.const(bool(v[1]))
    return _free(space, expr)


def _free(space: Space, expr: ast.Expr) -> Any:
    space.approximate.append(expr)
    return space.model.new_bool_var("approx")


def _reify(space: Space, lin: Any, op: str) -> Any:
    """A literal for `lin op 0`."""
    m, b = space.model, space.model.new_bool_var(op)
    neg = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}[op]
    for lit, o in ((b, op), (b.Not(), neg)):
        c = {"==": lin == 0, "!=": lin != 0, "<": lin < 0, "<=": lin <= 0, ">": lin > 0,
             ">=": lin >= 0}[o]  # fmt: skip
        m.add(c).only_enforce_if(lit)
    return b


def _eq(space: Space, var: Any, value: int) -> Any:
    return _reify(space, var - value, "==")


def _str_eq(space: Space, key: str, value: Any) -> Any:
    var, values = space.strings[key]
    if not isinstance(value, str) or value not in values or value == OTHER:
        return space.const(False)
    return _eq(space, var, values.index(value))


def _comparison(space: Space, e: ast.Binary, target: dict[str, Any] | None) -> Any:
    a, b = _value(space, e.left, target), _value(space, e.right, target)
    op = e.op
    if a is None or b is None:
        return _free(space, e)
    if a[0] == "num" and b[0] == "num":
        (ca, ka), (cb, kb) = a[1], b[1]
        coeffs = dict(ca)
        for f, c in cb.items():
            coeffs[f] = coeffs.get(f, Fraction(0)) - c
        coeffs = {f: c for f, c in coeffs.items() if c}
        if not coeffs:
            return space.const(_py_compare(op, ka, kb))
        found = _lin(space, (coeffs, ka - kb))
        return _free(space, e) if found is None else _reify(space, found[0], op)
    if a[0] == "num" and not a[1][0]:
        a = _as_const(a[1])
    if b[0] == "num" and not b[1][0]:
        b = _as_const(b[1])
    if a[0] == "const" and b[0] == "const":
        return space.const(_py_compare(op, a[1], b[1]))
    if b[0] in ("str", "bool") and a[0] == "const":
        a, b = b, a
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
    if a[0] == "str" and b[0] == "const" and op in ("==", "!="):
        lit = _str_eq(space, a[1], b[1])
        if b[1] is None:  # `== None` is never true; `!= None` always
            return space.const(op == "!=")
        return lit if op == "==" else lit.Not()
    if a[0] == "bool" and b[0] == "const" and op in ("==", "!=") and isinstance(b[1], bool):
        lit = _eq(space, space.ints[a[1]], int(b[1]))
        return lit if op == "==" else lit.Not()
    if a[0] == b[0] == "str" and a[1] == b[1] and op in ("==", "!=", "<=", ">=", "<", ">"):
        return space.const(op in ("==", "<=", ">="))
    return _free(space, e)


def _membership(space: Space, e: ast.Binary, target: dict[str, Any] | None) -> Any:
    """A literal for `left in right` (the caller negates for `not in`)."""
    a, b = _value(space, e.left, target), _value(space, e.right, target)
    if a is None or b is None:
        return _free(space, e)
    if a[0] == "num" and not a[1][0]:
        a = _as_const(a[1])
    if b[0] == "labels" and a[0] == "const":
        key = f"labels.{a[1]}"
        if key not in space.strings:
            return _free(space, e)
        var, values = space.strings[key]
        return _eq(space, var, values.index(None)).Not()  # the label is present
    if b[0] != "const":
        return _free(space, e)
    coll = b[1]
    if a[0] == "const":
        return space.const(_contains(a[1], coll))
    if a[0] == "str" and isinstance(coll, (list, str)):
        var, values = space.strings[a[1]]
        hits = [i for i, v in enumerate(values) if v != OTHER and _contains(v, coll)]
        return _any_of(space, var, hits)
    if a[0] == "num" and isinstance(coll, list):
        nums = [x for x in coll if isinstance(x, (int, float)) and not isinstance(x, bool)]
        lits = [_comparison_const(space, a[1], x) for x in nums]
        return space.any_of(lits)
    if a[0] == "bool" and isinstance(coll, list):
        bools = {x for x in coll if isinstance(x, bool)}
        return space.any_of([_eq(space, space.ints[a[1]], int(x)) for x in bools])
    return _free(space, e)


def _comparison_const(space: Space, form: Num, value: int | float) -> Any:
    found = _lin(space, (form[0], form[1] - Fraction(str(value))))
    return space.model.new_bool_var("approx") if found is None else _reify(space, found[0], "==")


def _any_of(space: Space, var: Any, indexes: list[int]) -> Any:
    return space.any_of([_eq(space, var, i) for i in indexes])


# -- witnesses -------------------------------------------------------------------------------
def _solve(model: cp_model.CpModel) -> cp_model.CpSolver | None:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1  # deterministic and fast on these small models
    solver.parameters.max_time_in_seconds = 10.0
    status = solver.Solve(model)
    return solver if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None


def satisfiable(space: Space, constraints: list[Any]) -> bool:
    """Is there a workload satisfying every literal of `constraints`?"""
    model = space.model.clone()
    model.add_bool_and(constraints)
    return _solve(model) is not None


def any_witness(space: Space, constraints: list[Any]) -> dict[str, Any] | None:
    """Some workload satisfying every literal of `constraints` (one solve, on the space's own
    model: use a space made for the question), as `minimal_witness` returns; None if none."""
    space.model.add_bool_and(constraints)
    solver = _solve(space.model)
    return None if solver is None else _read(space, solver)


def minimal_witness(space: Space, constraints: list[Any]) -> dict[str, Any] | None:
    """The lexicographically smallest workload satisfying `constraints` (fewest GPUs, then
    nodes, ..., then closest to the defaults), as field -> value; None if there is none."""
    model = space.model.clone()
    model.add_bool_and(constraints)
    if _solve(model) is None:
        return None
    readers: list[tuple[str, Any]] = []
    for key in ORDER:
        if key in space.strings:
            readers.append((key, space.strings[key][0]))
        elif key in NUMBERS:
            lo, hi, default = NUMBERS[key]
            var = space.ints[key]
            if key in ("gpus", "nodes"):
                readers.append((key, var))
            elif key == "gpus_per_node":  # all GPUs on each node unless it must be otherwise
                readers.append((key, space.ints["gpus"] - var))
            else:  # the distance from the default, so untouched fields read as defaults
                dist = model.new_int_var(0, hi - lo, f"{key}_dist")
                model.add_abs_equality(dist, var - default)
                readers.append((key, dist))
    readers += [("replicas_given", space.replicas_given), ("nodes_given", space.nodes_given)]
    readers += [(k, v) for k, (v, _) in sorted(space.strings.items()) if k.startswith("labels.")]
    solver: cp_model.CpSolver | None = None
    for _, var in readers:
        model.minimize(var)
        solver = _solve(model)
        if solver is None:  # a time-out: keep what we have fixed so far
            break
        model.add(var == int(solver.Value(var)))
    model.clear_objective()  # type: ignore[no-untyped-call]  # unannotated in ortools
    solver = _solve(model)
    assert solver is not None
    return _read(space, solver)


def _read(space: Space, solver: cp_model.CpSolver) -> dict[str, Any]:
    out: dict[str, Any] = {f: int(solver.Value(v)) for f, v in space.ints.items()}
    for key, (var, values) in space.strings.items():
        out[key] = values[int(solver.Value(var))]
    out["replicas_given"] = bool(solver.Value(space.replicas_given))
    out["nodes_given"] = bool(solver.Value(space.nodes_given))
    return out


def _other(space: Space, key: str, base: str) -> str:
    taken = set(space.strings.get(key, (None, []))[1])
    name, i = base, 1
    while name in taken:
        name, i = f"{base}-{i}", i + 1
    return name


def witness_document(space: Space, w: dict[str, Any], name: str = "witness") -> dict[str, Any]:
    """A workload YAML document (as a dict) whose view is the witness `w`."""
    from router.quantity import format_duration, format_memory

    def text(key: str, base: str) -> str | None:
        v = w.get(key)
        return _other(space, key, base) if v == OTHER else v

    doc: dict[str, Any] = {"name": name if w["name"] == OTHER else w["name"]}
    doc["kind"] = text("kind", "other")
    if w["team"] != _D["team"]:
        doc["team"] = text("team", "other-team")
    labels = {k[7:]: text(k, "other") for k in sorted(w) if k.startswith("labels.") and w[k]}
    if labels:
        doc["labels"] = labels
    image = text("image", "registry.example/app:1")
    if image is not None:
        doc["image"] = image
    doc["gpus"] = w["gpus"]
    if w["gpu_type"] != _D["gpu_type"]:
        doc["gpu_type"] = text("gpu_type", "other-gpu")
    if w["nodes_given"] and w["nodes"] != 1:
        doc["nodes"] = w["nodes"]
    elif not w["nodes_given"] and w["gpus_per_node"] != w["gpus"]:
        doc["gpus_per_node"] = w["gpus_per_node"]
    for f in ("cpus", "priority"):
        if w[f] != NUMBERS[f][2]:
            doc[f] = w[f]
    if w["memory"] != NUMBERS["memory"][2]:
        doc["memory"] = format_memory(w["memory"])
    if w["duration"] != NUMBERS["duration"][2]:
        doc["duration"] = format_duration(w["duration"])
    if w["preemptible"]:
        doc["preemptible"] = True
    if w["replicas_given"]:
        doc["replicas"] = {"min": w["min_replicas"], "max": w["max_replicas"]}
    return doc


reify = _reify  # public: a literal for `linear expression op 0`
