"""`router explain WORKLOAD`: the rules, candidates and constraints behind one decision."""

from __future__ import annotations

import json
import sys

import click

from router.cli.main import EXIT_INVALID, project_options, reports_errors


@click.command()
@click.argument("workload")
@project_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="What to print.",
)
@click.option(
    "--previous",
    metavar="PLAN.json|git:REF",
    help="Plan against a previous plan, as `router plan --previous` does "
    "(planned work is only preempted by higher priority).",
)
@reports_errors
def explain(
    workload: str,
    directory: str,
    policy: str | None,
    inventory: str | None,
    workloads: str | None,
    fmt: str,
    previous: str | None,
) -> None:
    """Explain where WORKLOAD of DIRECTORY was placed, or why it was not."""
    from router.config import load_project
    from router.errors import did_you_mean
    from router.evaluate.evaluate import Evaluator
    from router.explain import explain as explain_one
    from router.explain import render_explanation
    from router.plan.build import load_inputs

    project = load_project(directory, policy=policy, inventory=inventory, workloads=workloads)
    inputs = load_inputs(project)
    names = [w.name for w in inputs.workloads]
    if workload not in names:
        hint = did_you_mean(workload, names)
        click.echo(
            f"error: no workload named {workload!r}" + (f"; {hint}" if hint else ""), err=True
        )
        sys.exit(EXIT_INVALID)
    w = next(w for w in inputs.workloads if w.name == workload)
    decision = Evaluator(inputs.policy, inputs.inventory).decide(w)
    state, status = None, "OPTIMAL"
    if decision.candidates:
        # Only a routed workload needs the plan: its placement depends on everyone else's.
        from router.explain.blocking import PlanState
        from router.plan.build import build_plan
        from router.plan.previous import load_previous
        from router.solve.cpsat import SolveOptions

        options = SolveOptions()
        if previous:
            options.previous = dict(load_previous(previous, project, options).assignment)
        plan = build_plan(project, options, inputs=inputs)
        state, status = (
            PlanState(plan.problem, plan.solve.assignment, plan.solve.nodes),
            plan.solve.status,
        )
    doc = explain_one(
        workload, decision, inputs.policy, inputs.inventory, project.relative, state, status
    )
    if previous and decision.candidates and doc["status"] == "unplaced":
        from router.plan.preempted import holds_its_place

        # The plan's own reasons, which also say who preempted it, or which planned work it
        # could not preempt (plan.json's `unplaced` says the same).
        doc["reasons"] = next(
            u.reasons for u in plan.unplaced if u.decision.workload.name == workload
        )
        disp = doc.get("displace")
        if disp and workload not in options.previous:
            by_name = {x.name: x for x in inputs.workloads}
            kept = [
                n
                for n in disp["workloads"]
                if n in options.previous and holds_its_place(by_name[n], w)
            ]
            if kept:
                disp["text"] += (
                    f"; but {', '.join(kept)} "
                    f"{'is' if len(kept) == 1 else 'are'} planned work of equal or "
                    "higher priority, which only higher priority preempts"
                )
    if fmt == "json":
        click.echo(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False))
    else:
        click.echo(render_explanation(doc), nl=False)
