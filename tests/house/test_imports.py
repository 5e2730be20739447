"""The house, walked: router's import graph drawn from the code (every import statement,
function-level ones too), with no cycle between its parts."""

from __future__ import annotations

from tests.house.imports import cycles, graph, package_graph


def test_no_cycles_between_router_subpackages() -> None:
    g = package_graph()
    assert "router.plan" in g and "router.models" in g  # the graph was drawn
    assert cycles(g) == []


def test_no_cycles_between_modules_either() -> None:
    """Not even inside a subpackage (solve/ had aggregate -> preempt -> greedy -> lp ->
    aggregate through a function-level import)."""
    assert cycles(graph()) == []


def test_shared_types_flow_one_way() -> None:
    """models/ (the data users write and placements) imports no later stage; emitters read
    placements from models/, not from plan/."""
    g = package_graph()
    later = {
        "router.evaluate",
        "router.solve",
        "router.plan",
        "router.emit",
        "router.explain",
        "router.cli",
        "router.api",
    }
    assert g["router.models"] & later == set()
    assert "router.plan" not in g["router.emit"]
    assert "router.plan" not in g["router.evaluate"]


def test_cycles_finds_a_cycle() -> None:
    """The checker itself: a cycle drawn by hand is found, and a chain is not one."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}}) == []


def test_graph_reads_function_level_imports() -> None:
    assert "router.solve.cpsat" in graph()["router.plan.build"]  # inside build_plan


def _reach(g: dict[str, set[str]], module: str) -> set[str]:
    """Every router module `module` imports, directly or through others."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for m in g.get(todo.pop(), set()) - seen:
            seen.add(m)
            todo.append(m)
    return seen


def test_the_referees_share_nothing_with_the_solver() -> None:
    """The packing checker and the referee of what is left out judge the solver's plan: no
    import of router/solve, not even through another module."""
    g = graph()
    referees = [
        "router.plan.admits",
        "router.plan.packcheck",
        "router.plan.packing",
        "router.plan.patterns",
        "router.plan.packdata",
    ]
    assert all(m in g for m in referees)
    assert "router.evaluate.quota" in _reach(g, "router.plan.admits")  # the closure was drawn
    for m in referees:
        assert {r for r in _reach(g, m) if r.startswith("router.solve")} == set(), m
