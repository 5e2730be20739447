"""`router check` on the values a policy compares with, and on how memory is spelt.

- A string compared with a workload field or a target attribute (`kind == "trainig"`,
  `cluster == "nf-k8z"`, `"ibb" in features`) that no workload, target or inventory has is a
  warning, with "did you mean" when a known value is close. Known values: those of the
  workloads given, the inventory's targets, and the built-in kinds and defaults. So is a
  string an `expect` compares `backend`, `cluster`, `target` or `rule` with that no target
  or rule has (`expect cluster != "k8s-prd"`).
- A memory size in decimal units (`64GB`, `1TB`) in the policy or a YAML file, and a bare
  number for memory in YAML (read as MiB), is a warning that says what it was read as; so is
  a bare number for a duration in YAML (`duration: 64`, `max_time: 90`: read as minutes).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from router.assure.findings import Finding, finding_at
from router.errors import RouterError, Span, did_you_mean
from router.evaluate.views import target_view, workload_view
from router.language import ast
from router.models import Inventory, Workload
from router.models.yamlsource import Builder, compose, locate, read_source, span
from router.quantity import MEMORY_UNITS, format_duration, parse_duration, parse_memory

KINDS = ("training", "inference", "batch", "notebook")  # the kinds router knows by name
_DECIMAL = ("KB", "MB", "GB", "TB")
_MEMORY_KEYS = ("memory", "memory_per_node")
_DURATION_KEYS = ("duration", "max_time", "default_time")  # workloads, partitions


def _known(
    policy: ast.Policy, inventory: Inventory, workloads: list[Workload] | None
) -> dict[tuple[str, str, str], set[str]]:
    """(scope, field, label key) -> every string value seen for it."""
    known: dict[tuple[str, str, str], set[str]] = {}

    def add(scope: str, field: str, key: str, value: Any) -> None:
        values = value if isinstance(value, list) else [value]
        known.setdefault((scope, field, key), set()).update(v for v in values if isinstance(v, str))

    add("workload", "kind", "", list(KINDS))
    add("workload", "team", "", "default")
    add("workload", "gpu_type", "", "any")
    for ref in inventory.targets():
        view = target_view(ref)
        for field, value in view.items():
            if field == "labels":
                for k, v in value.items():
                    add("target", "labels", k, v)
            else:
                add("target", field, "", value)
        add("workload", "gpu_type", "", view["gpu_type"])  # a workload names the inventory's
    for w in workloads or ():
        wv = workload_view(w)
        for field in ("kind", "team", "gpu_type", "name", "image"):
            add("workload", field, "", wv.get(field))
        for k, v in w.labels.items():
            add("workload", "labels", k, v)
    return known


def _strings(e: ast.Expr, constants: dict[str, Any]) -> list[tuple[str, Span]]:
    """The string values of a literal, a constant or a list of them, each with its span."""
    if isinstance(e, ast.Literal) and isinstance(e.value, str):
        return [(e.value, e.span)]
    if isinstance(e, ast.Name) and e.scope == "const":
        value = constants.get(e.field or "")
        items = value if isinstance(value, list) else [value]
        return [(v, e.span) for v in items if isinstance(v, str)]
    if isinstance(e, ast.ListExpr):
        return [x for item in e.items for x in _strings(item, constants)]
    return []


def _comparisons(e: ast.Expr | None) -> Iterable[tuple[ast.Name, ast.Expr]]:
    """(field, compared expression) of every ==, != , in and not in of `e`."""
    todo = [e]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Unary):
            todo.append(node.operand)
        elif isinstance(node, ast.Binary):
            todo += [node.left, node.right]
            if node.op in ("==", "!="):
                for a, b in ((node.left, node.right), (node.right, node.left)):
                    if isinstance(a, ast.Name):
                        yield a, b
            elif node.op in ("in", "not in"):
                if isinstance(node.left, ast.Name):  # kind in ["a", "b"]
                    yield node.left, node.right
                if isinstance(node.right, ast.Name) and node.right.key is None:
                    yield node.right, node.left  # "ib" in features


def _exprs(policy: ast.Policy) -> list[ast.Expr | None]:
    out: list[ast.Expr | None] = [d.when for d in policy.denies]
    for r in policy.rules:
        out.append(r.when)
        for rt in r.routes:
            out += [rt.where, *(p.expr for p in rt.prefer)]
    out += [x for q in policy.quotas for x in (q.for_, q.on)]
    out += [x for c in policy.checks for x in (c.for_,)]
    out += [x for s in policy.spreads for x in (s.for_,)]
    return out


def value_findings(
    policy: ast.Policy, inventory: Inventory, workloads: list[Workload] | None
) -> list[Finding]:
    """Strings compared with a field or attribute that no workload, target or inventory has.
    Without workloads, only target attributes and the built-in kinds are checked."""
    known = _known(policy, inventory, workloads)
    out: list[Finding] = []
    seen: set[tuple[str, int, int]] = set()
    for top in _exprs(policy):
        for name, other in _comparisons(top):
            if name.scope not in ("workload", "target") or name.field is None:
                continue
            if name.field == "labels" and name.key is None:
                continue  # `"app" in labels` names a key, not a value
            where = (name.scope, name.field, name.key or "")
            if name.scope == "workload" and workloads is None and name.field != "kind":
                continue
            values = known.get(where, set())
            for value, at in _strings(other, policy.constants):
                if value in values or (at.path, at.line, at.column) in seen:
                    continue
                seen.add((at.path, at.line, at.column))
                owner = "workload" if name.scope == "workload" else "target"
                field = f"labels.{name.key}" if name.key else name.field
                message = f'no {owner} has {field} "{value}"'
                if not values:
                    message += f" (no {owner} has any {field})"
                hint = did_you_mean(value, values)
                if hint is None and values:
                    shown = sorted(values)
                    hint = "known: " + ", ".join(f'"{v}"' for v in shown[:8])
                    hint += ", ..." if len(shown) > 8 else ""
                out.append(finding_at("warning", "unknown-value", message, at, hint=hint))
    return out + _outcome_findings(policy, inventory, seen)


def _outcome_findings(
    policy: ast.Policy, inventory: Inventory, seen: set[tuple[str, int, int]]
) -> list[Finding]:
    """Strings an `expect` compares a routing outcome with that no outcome can be: a
    misspelt `cluster != "k8s-prd"` makes the property hold for nothing it was meant for."""
    refs = inventory.targets()
    known = {
        "backend": ({"slurm", "kubernetes"}, "no backend is"),
        "cluster": ({r.cluster for r in refs}, "no target has cluster"),
        "target": ({r.id for r in refs}, "no target is"),  # as plan.json names it
        "rule": (
            {r.name for r in policy.rules} | {d.name for d in policy.denies},
            "no rule is named",
        ),
    }
    out: list[Finding] = []
    for check in policy.checks:
        for name, other in _comparisons(check.expect):
            if name.scope != "outcome" or name.field not in known:
                continue
            values, what = known[name.field]
            for value, at in _strings(other, policy.constants):
                if value in values or (at.path, at.line, at.column) in seen:
                    continue
                seen.add((at.path, at.line, at.column))
                hint = did_you_mean(value, values)
                if name.field == "target":
                    hint = hint or "a target is named CLUSTER/NAME, as in plan.json"
                out.append(finding_at("warning", "unknown-value", f'{what} "{value}"', at,
                                      hint=hint))  # fmt: skip
    return out


def _memory_note(text: str) -> str | None:
    """What a decimal memory size was read as, or None for a binary one."""
    unit = text.strip().lstrip("0123456789. ")
    if unit not in _DECIMAL:
        return None
    mib = parse_memory(text)
    binary = unit[0] + "iB"
    about = f" (about {mib / 1024:,.1f} GiB)" if mib >= 1024 else ""
    return (
        f"{text.strip()} is decimal ({unit} = 1000^{_DECIMAL.index(unit) + 1} bytes): read"
        f" as {mib:,} MiB{about}; write {binary} for binary units"
    )


def policy_unit_findings(policy: ast.Policy) -> list[Finding]:
    """Decimal memory units in the policy's quantities."""
    out: list[Finding] = []
    for pf in policy.files:
        todo: list[Any] = list(pf.statements)
        while todo:
            obj = todo.pop()
            if isinstance(obj, ast.Literal):
                note = _memory_note(obj.text) if obj.unit == "memory" and obj.text else None
                if note:
                    out.append(finding_at("warning", "decimal-unit", note, obj.span))
            elif isinstance(obj, (list, tuple)):
                todo += obj
            elif isinstance(obj, dict):
                todo += obj.values()
            elif hasattr(obj, "__dataclass_fields__") and not isinstance(obj, Span):
                todo += [getattr(obj, f) for f in obj.__dataclass_fields__ if f != "span"]
    return out


def yaml_unit_findings(files: Iterable[tuple[Path, str]]) -> list[Finding]:
    """Memory written with decimal units or as a bare number in YAML files (path, display)."""
    out: list[Finding] = []
    for path, display in files:
        try:
            source = read_source(path, display)
            docs = compose(source)
        except RouterError:  # the loader has reported the file already
            continue
        builder = Builder(source)
        todo: list[tuple[Any, Any, tuple[Any, ...]]] = []
        for doc in docs:
            todo.append((doc, builder.value(doc), ()))
        while todo:
            root, data, at = todo.pop()
            if isinstance(data, list):
                todo += [(root, item, (*at, i)) for i, item in enumerate(data)]
            elif isinstance(data, dict):
                for key, value in data.items():
                    if key in _MEMORY_KEYS or key in _DURATION_KEYS:
                        memory = key in _MEMORY_KEYS
                        note = _yaml_memory(value) if memory else _yaml_duration(value)
                        if note:
                            node = locate(root, (*at, key))[1]
                            code = "memory-unit" if memory else "duration-unit"
                            out.append(finding_at("warning", code, f"{key}: {note}",
                                                  span(source, node)))  # fmt: skip
                    elif isinstance(value, (dict, list)):
                        todo.append((root, value, (*at, key)))
    return sorted(out, key=lambda f: (f.path, f.line, f.column))


def _yaml_memory(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return f"a bare number is read as MiB: {value} MiB; write the unit, such as {value}GiB"
    if isinstance(value, str):
        stripped = value.strip()
        if stripped and stripped.replace(".", "", 1).isdigit():
            return (
                f'"{stripped}" without a unit is read as MiB; write the unit, such as {stripped}GiB'
            )
        try:
            return _memory_note(stripped)
        except ValueError:
            return None
    return None


def _yaml_duration(value: Any) -> str | None:
    """What a bare number for a duration was read as (minutes, as `sbatch --time`), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    try:
        read = format_duration(parse_duration(value))
    except ValueError:
        return None  # the loader reports what is out of range
    return (
        f"a bare number is read as minutes: {value} is {read}; write the unit, such as"
        f" {value}min or {value}h"
    )


assert set(_DECIMAL) <= set(MEMORY_UNITS)
