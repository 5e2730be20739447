"""`router check` warnings for MIG work whose processes cannot each use a slice of their own.

CUDA enumerates one MIG device per process (NVIDIA MIG user guide, "CUDA Device Enumeration"),
the first of those it is given. So a node's slices are used only when each process gets its own:

* Slurm, torchrun and mpi: the emitter gives each worker or rank one slice
  (router/emit/slurm/launch.py); fewer processes than slices per node leave the rest idle.
  The plain launcher starts one process per node: it uses one slice of the node's N.
* Kubernetes: nothing narrows a pod's slices per process, so a pod of N > 1 slices uses one
  if it runs one process, and all its torchrun or MPI processes share the first.

One warning per route and kind of problem, at the route's `mig` option, naming the workloads.
"""

from __future__ import annotations

from collections.abc import Iterable

from router.evaluate.evaluate import Candidate, Decision
from router.language import ast

from .findings import Finding, finding_at

SHOWN = 3  # workloads named in one warning


def _processes(d: Decision, c: Candidate) -> tuple[str, int]:
    """(launcher, processes per node) as the emitters start them."""
    w = d.workload
    launcher = str(w.launcher or c.options.get("launcher") or "plain")
    if launcher == "torchrun":
        return launcher, w.procs_per_node or c.resources.gpus_per_node or 1
    if launcher == "mpi":
        return launcher, w.ranks_per_node or 1
    return launcher, 1


def _problem(d: Decision, c: Candidate) -> str | None:
    slices = c.resources.gpus_per_node
    if not c.resources.mig or slices < 2:
        return None
    launcher, procs = _processes(d, c)
    if c.target.backend == "slurm":
        if procs >= slices:
            return None
        if launcher == "plain":
            return (
                f"launcher plain starts one process per node, which uses one of its {slices}"
                " MIG slices"
            )
        return f"{procs} {launcher} process(es) per node use {procs} of its {slices} MIG slices"
    if procs > 1:
        return (
            f"a pod's {procs} {launcher} processes all use the first of its {slices} MIG slices"
            " (nothing gives each process its own on Kubernetes)"
        )
    return f"one process per pod uses one of its {slices} MIG slices"


def _mig_option(rule: ast.Rule, rank: int) -> ast.Option | None:
    for route in rule.routes:
        if route.rank == rank:
            return next((o for o in route.options if o.name == "mig"), None)
    return None


def mig_process_findings(decisions: Iterable[Decision]) -> list[Finding]:
    groups: dict[tuple[int, str], tuple[ast.Option, list[str]]] = {}
    for d in decisions:
        if d.status != "routed" or not isinstance(d.rule, ast.Rule) or not d.workload.gpus:
            continue
        seen: set[str] = set()
        for c in d.candidates:
            problem = _problem(d, c)
            opt = _mig_option(d.rule, c.rank) if problem else None
            if problem is None or opt is None or problem in seen:
                continue
            seen.add(problem)
            groups.setdefault((id(opt), problem), (opt, []))[1].append(d.workload.name)
    out = []
    for (_, problem), (opt, names) in groups.items():
        more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
        which = ", ".join(names[:SHOWN]) + more
        hint = (
            "ask one slice per process: launcher torchrun or mpi with a process per slice"
            " (on Slurm), or one slice per pod"
        )
        msg = f"{which}: {problem}"
        out.append(finding_at("warning", "mig-processes", msg, opt.span, hint=hint))
    return out
