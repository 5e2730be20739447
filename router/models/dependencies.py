"""`after:` between workloads: every name must be a workload, and the graph must have no cycle.

Errors point at the `after:` entry (file, line, column) that names the unknown workload or
closes the cycle, with the whole cycle spelt out. `order()` gives the workloads parents first,
which is how `router apply` submits them.
"""

from __future__ import annotations

from router.errors import LoadError, Span, did_you_mean
from router.models.workload import Workload


def dependency_errors(workloads: list[Workload]) -> list[LoadError]:
    if not any(w.after for w in workloads):
        return []  # the common case, at 50,000 workloads a tenth of loading them
    by_name = {w.name: w for w in workloads}
    errors: list[LoadError] = []
    for w in workloads:
        for i, parent in enumerate(w.after):
            if parent not in by_name:
                errors.append(LoadError(
                    f'after[{i}]: no workload is named "{parent}"', _span(w, i),
                    hint=did_you_mean(parent, by_name), path=_path(w), line=_line(w),
                ))  # fmt: skip
    if errors:
        return errors
    cycle = find_cycle(workloads)
    if cycle:
        w = by_name[cycle[0]]
        i = w.after.index(cycle[1])
        text = " -> ".join([*cycle, cycle[0]] if len(cycle) > 1 else [*cycle, *cycle])
        errors.append(LoadError(
            f"after[{i}]: a dependency cycle: {text} (each starts after the next); no job of"
            " it could ever start", _span(w, i), path=_path(w), line=_line(w),
            hint="remove one of these `after` entries",
        ))  # fmt: skip
    return errors


def find_cycle(workloads: list[Workload]) -> list[str] | None:
    """One cycle as [a, b, ...] where a starts after b, b after the next, the last after a."""
    after = {w.name: w.after for w in workloads}
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for parent in after.get(name, []):
            if state.get(parent) == 1:
                return path[path.index(parent) :]
            if parent not in state:
                found = visit(parent)
                if found:
                    return found
        path.pop()
        state[name] = 2
        return None

    for w in workloads:  # file order: the first cycle a reader would find
        if w.name not in state:
            found = visit(w.name)
            if found:
                return found
    return None


def order(names: list[str], after: dict[str, list[str]]) -> list[str]:
    """`names` with every workload after the ones it starts after (stable: sorted otherwise);
    parents outside `names` are ignored."""
    wanted, done, out = set(names), set(), []

    def visit(name: str) -> None:
        if name in done:
            return
        done.add(name)
        for parent in sorted(after.get(name, [])):
            if parent in wanted:
                visit(parent)
        out.append(name)

    for name in sorted(names):
        visit(name)
    return out


def _span(w: Workload, i: int) -> Span | None:
    spans = w.after_spans
    return spans[i] if i < len(spans) else None


def _path(w: Workload) -> str | None:
    return w.source[0] if w.source else None


def _line(w: Workload) -> int | None:
    return w.source[1] if w.source else None
