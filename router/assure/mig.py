"""`router check` warnings for MIG work whose processes cannot each use a slice of their own.

CUDA enumerates one MIG device per process (NVIDIA MIG user guide, "CUDA Device Enumeration"),
the first of those it is given. So a node's slices are used only when each process gets its own:

* Slurm, torchrun and mpi: the emitter gives each worker or rank one slice
  (router/emit/slurm/launch.py); fewer processes than slices per node leave the rest idle.
  The plain launcher starts one process per node: it uses one slice of the node's N.
* Kubernetes, torchrun and mpi: the same sh wrapper narrows each process of a pod to its own
  slice (router/emit/k8s/launch.py, router/emit/narrow.py), when router writes the command
  line: a shell-string command, or one that starts torchrun itself, is run as written, and its
  processes all share the first slice. One process per pod uses one of the pod's N.

One warning per workload and kind of problem, at the workload's field that says it (`gpus`,
or `command` for a command router cannot narrow), naming the route's `mig` option; at that
option when the workload was not read from a file.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from router.emit.k8s.launch import narrows
from router.errors import Span
from router.evaluate.evaluate import Candidate, Decision
from router.language import ast
from router.models.loader import WorkloadSpans

from .findings import Finding, finding_at

HINT = (
    "ask one slice per process (launcher torchrun or mpi with a process per slice), or one"
    " slice per pod"
)
COMMAND_HINT = (
    "give the command as a list (router then starts torchrun and narrows each worker), or"
    " one slice per pod"
)


class Problem(NamedTuple):
    message: str
    key: str  # the workload's field the warning points at
    hint: str


def _processes(d: Decision, c: Candidate) -> tuple[str, int]:
    """(launcher, processes per node) as the emitters start them."""
    w = d.workload
    launcher = str(w.launcher or c.options.get("launcher") or "plain")
    if launcher == "torchrun":
        return launcher, w.procs_per_node or c.resources.gpus_per_node or 1
    if launcher == "mpi":
        return launcher, w.ranks_per_node or 1
    return launcher, 1


def _problem(d: Decision, c: Candidate) -> Problem | None:
    slices = c.resources.gpus_per_node
    if not c.resources.mig or slices < 2:
        return None
    launcher, procs = _processes(d, c)
    slurm = c.target.backend == "slurm"
    where = "node" if slurm else "pod"
    if procs == 1 and launcher == "plain":
        start = "launcher plain starts" if slurm else "launcher plain runs"
        return Problem(
            f"{start} one process per {where}, which uses one of its {slices} MIG slices",
            "gpus",
            HINT,
        )
    if not slurm and procs > 1 and not narrows(launcher, d.workload.command):
        return Problem(
            f"a pod's {procs} {launcher} processes all use the first of its {slices} MIG"
            " slices (its command is run as written: a shell string, or one that starts"
            " torchrun itself, which router cannot narrow to a slice per process)",
            "command",
            COMMAND_HINT,
        )
    if procs < slices:
        return Problem(
            f"{procs} {launcher} process(es) per {where} use {procs} of its {slices} MIG slices",
            "gpus",
            HINT,
        )
    return None


def _mig_option(rule: ast.Rule, rank: int) -> ast.Option | None:
    for route in rule.routes:
        if route.rank == rank:
            return next((o for o in route.options if o.name == "mig"), None)
    return None


def mig_process_findings(
    decisions: Iterable[Decision], spans: WorkloadSpans | None = None
) -> list[Finding]:
    out: list[Finding] = []
    for d in decisions:
        if d.status != "routed" or not isinstance(d.rule, ast.Rule) or not d.workload.gpus:
            continue
        seen: set[str] = set()
        for c in d.candidates:
            problem = _problem(d, c)
            opt = _mig_option(d.rule, c.rank) if problem else None
            if problem is None or opt is None or problem.message in seen:
                continue
            seen.add(problem.message)
            at: Span = (spans.span(d.workload, problem.key) if spans else None) or opt.span
            route = f"rule {d.rule.name}, {opt.span.path}:{opt.span.line}:{opt.span.column}"
            message = f"{d.workload.name}: {problem.message} ({route})"
            out.append(finding_at("warning", "mig-processes", message, at, hint=problem.hint))
    return out
