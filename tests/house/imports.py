"""The import graph of router, drawn from the code (ast), not from what runs."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "router"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every router module `path` imports, at any depth (function-level imports too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    modules = {module_name(p) for p in ROOT.rglob("*.py")}
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            # `from router.plan import diff` imports the module router.plan.diff
            subs = {f"{base}.{a.name}" for a in node.names}
            found.update(subs if subs <= modules else {base})
    return {m for m in found if m in modules and m != me}


def graph() -> dict[str, set[str]]:
    """module -> the router modules it imports."""
    return {module_name(p): imports(p) for p in sorted(ROOT.rglob("*.py"))}


def unit(module: str) -> str:
    """The part of router a module belongs to: its subpackage, or itself at the top."""
    parts = module.split(".")
    return ".".join(parts[:2])


def package_graph() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module, targets in graph().items():
        mine = out.setdefault(unit(module), set())
        mine.update(unit(t) for t in targets if unit(t) != unit(module))
    return out


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return found
