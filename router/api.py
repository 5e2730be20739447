"""The Python API: load a platform, plan it, and read, write, render or diff the plan; check,
test and explain it. The command line, the benchmark and the pytest plugin are built on these
functions, so this module is the one place where the stages are put together:

    Platform (parse, check, load) -> plan (evaluate, model, solve: router.plan.build) -> Plan
    Plan.document() (plan.json) -> Plan.write() (emit, atomically) / render() / diff()

`docs/api.md` shows it in use (and the tests run that page). Nothing here imports the solver
until a plan is made, so `import router` stays quick.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from router.config import Project, load_project
from router.errors import PlanError, did_you_mean
from router.language import ast
from router.models import Inventory, Running, TargetRef, Workload

if TYPE_CHECKING:
    from router.assure.analysis import Finding
    from router.assure.cases import Case
    from router.assure.report_test import TestReport
    from router.evaluate.evaluate import Decision, Evaluator
    from router.fork import Started
    from router.models.placement import Placement
    from router.plan import build
    from router.plan.document import Later
    from router.plan.previous import Previous
    from router.solve.cpsat import SolveOptions

__all__ = ["Plan", "Platform", "check", "explain", "load", "plan", "test"]

# How an in-memory platform's inputs are named in rule sources, errors and plan.json.
MEMORY_POLICY = "policy.route"
MEMORY_INVENTORY = "inventory.yaml"
MEMORY_WORKLOADS = "workloads.yaml"
MEMORY_RUNNING = "running.yaml"
# Plan.write forks (router.fork) from this many placements: below, a fork costs more than
# the rendering it would share.
PARALLEL_FROM = 200
# At most this many children write out/'s emitted files: each is a fork of the whole
# planning process (3 GB at XL), and past a few the files are written as fast as the disk
# takes them.
MAX_WRITERS = 4
# What one placement costs to emit, by backend, relative to a Slurm job's one sbatch script
# (bench L seed 0: 230 µs per Kubernetes placement, whose manifests are several documents,
# against 38 µs per Slurm job): emit_chunks balances the writers by it.
EMIT_COST = {"kubernetes": 6, "slurm": 1}


class Platform:
    """A policy, an inventory and the workloads: what `router plan` reads from a folder.

    Made by `router.load(folder)` (each part is read when first used, so a platform whose
    workloads are broken can still be checked) or `Platform.from_objects(...)`.
    """

    def __init__(
        self,
        project: Project,
        *,
        policy_texts: list[tuple[str, str]] | None = None,
        inventory: Inventory | None = None,
        workloads: list[Workload] | None = None,
        running: Running | None = None,
        contents: dict[str, bytes] | None = None,
    ) -> None:
        self.project = project
        self._policy_texts = policy_texts  # None: read the project's .route files
        self._given_inventory = inventory
        self._given_workloads = workloads
        self._given_running = running
        self._contents = contents or {}
        self._evaluators: dict[bool, Evaluator] = {}
        self.in_memory = policy_texts is not None

    # -- making one ---------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        folder: str | Path = ".",
        *,
        policy: str | Path | None = None,
        inventory: str | Path | None = None,
        workloads: str | Path | None = None,
        out: str | Path | None = None,
        running: str | Path | None = None,
    ) -> Platform:
        """The platform in `folder` (its router.yaml names the parts; the keywords override
        them as `router plan -p/-i/-w/-o/-r` do)."""
        return cls(
            load_project(
                folder,
                policy=policy,
                inventory=inventory,
                workloads=workloads,
                out=out,
                running=running,
            )
        )

    @classmethod
    def from_objects(
        cls,
        *,
        policy: str | Mapping[str, str],
        inventory: Mapping[str, Any] | Inventory,
        workloads: Iterable[Mapping[str, Any] | Workload] = (),
        running: Mapping[str, Any] | Running | None = None,
        out: str | Path = "out",
    ) -> Platform:
        """A platform from memory: `policy` is the text of a .route file (or {file name:
        text}), `inventory` a dict shaped as inventory.yaml, `workloads` dicts shaped as
        workloads/*.yaml, `running` a dict shaped as a running-work file (`running: [...]`).
        Rules are named `policy.route:LINE` in the plan. Invalid input raises the same
        errors as the files do (router.errors.RouterError)."""
        from router.models.objects import (
            inventory_from_data,
            running_from_data,
            workloads_from_data,
        )

        texts = [(MEMORY_POLICY, policy)] if isinstance(policy, str) else sorted(policy.items())
        inv = inventory_from_data(inventory, MEMORY_INVENTORY)
        items = list(workloads)
        wls = workloads_from_data(items, MEMORY_WORKLOADS)
        # plan.json's `inputs` hashes what was given: the texts, and the data as sorted JSON.
        contents = {name: text.encode() for name, text in texts}
        contents[MEMORY_INVENTORY] = _canonical(inv.model_dump(mode="json", exclude_unset=True))
        contents[MEMORY_WORKLOADS] = _canonical(_dumps(wls))
        run = running_from_data(running, MEMORY_RUNNING) if running is not None else None
        if run is not None:
            contents[MEMORY_RUNNING] = _canonical(run.model_dump(mode="json", exclude_unset=True))
        root = Path(".")
        project = Project(
            root=root,
            policy=root / MEMORY_POLICY,
            inventory=root / MEMORY_INVENTORY,
            workloads=root / MEMORY_WORKLOADS,
            out=Path(out),
        )
        return cls(
            project,
            policy_texts=texts,
            inventory=inv,
            workloads=wls,
            running=run,
            contents=contents,
        )

    # -- its parts ----------------------------------------------------------------------
    @cached_property
    def policy(self) -> ast.Policy:
        """The parsed and checked policy."""
        from router.language import check_policy

        return check_policy(self.parsed_policy())

    def parsed_policy(self) -> ast.Policy:
        """The policy parsed but not checked (a fresh tree: `router check` reads constants
        as written, before the checker folds them)."""
        from router.language import parse_files, parse_sources, policy_files

        if self._policy_texts is not None:
            return parse_sources(self._policy_texts)
        return parse_files(policy_files(self.project.policy))

    @cached_property
    def inventory(self) -> Inventory:
        from router.models import load_inventory

        log_dir = self.project.slurm.log_dir  # router.yaml's; a cluster's own wins
        if self._given_inventory is not None:
            return self._given_inventory.with_log_dir(log_dir)
        return load_inventory(self.project.inventory).with_log_dir(log_dir)

    @cached_property
    def workloads(self) -> list[Workload]:
        from router.models import load_workloads

        if self._given_workloads is not None:
            return self._given_workloads
        return load_workloads(self.project.workloads)

    @cached_property
    def running(self) -> Running | None:
        """What already runs on the nodes (router.yaml's `running:`), if anything."""
        from router.models import load_running

        if self._given_running is not None or self.in_memory:
            return self._given_running
        p = self.project.running
        return load_running(p) if p else None

    @property
    def targets(self) -> list[TargetRef]:
        return self.inventory.targets()

    def workload(self, name: str) -> Workload:
        """The workload called `name`; PlanError (with a did-you-mean) if there is none."""
        for w in self.workloads:
            if w.name == name:
                return w
        raise PlanError(
            f"no workload named {name!r}", hint=did_you_mean(name, [w.name for w in self.workloads])
        )

    def inputs(self) -> build.Inputs:
        """Everything the plan reads, loaded (errors are raised here)."""
        from router.models.loader import check_running
        from router.plan.build import Inputs, _files

        policy, inventory, workloads = self.policy, self.inventory, self.workloads
        running = self.running
        files: list[Path] = []
        given = self._given_running is not None or self.in_memory
        check_running(inventory, running, None if given else self.project.running)
        if not self.in_memory:
            p = self.project
            files = [
                *_files(p.policy, (".route",)),
                p.inventory,
                *_files(p.workloads, (".yaml", ".yml")),
                *([p.running] if p.running else []),
            ]
        return Inputs(
            policy, inventory, workloads, files, running=running, contents=dict(self._contents)
        )

    def evaluator(self, share_candidates: bool = False) -> Evaluator:
        """The policy compiled for this inventory (made once; decisions are cached)."""
        from router.evaluate.evaluate import Evaluator

        if share_candidates not in self._evaluators:
            self._evaluators[share_candidates] = Evaluator(
                self.policy, self.inventory, share_candidates=share_candidates
            )
        return self._evaluators[share_candidates]

    def route(self, workload: Mapping[str, Any] | Workload) -> Decision:
        """The rule-level decision for one workload (a dict as in workloads/*.yaml, or a
        model), without planning: denied, unrouted, or routed with ranked candidates."""
        from router.models.objects import workloads_from_data

        w = (
            workload
            if isinstance(workload, Workload)
            else workloads_from_data([workload], "workload")[0]
        )
        return self.evaluator().decide(w)

    def __repr__(self) -> str:
        # Short on purpose: it is printed in test failures and Hypothesis examples.
        where = "in memory" if self.in_memory else str(self.project.root)
        return f"<Platform {where}>"


def _dumps(workloads: list[Workload]) -> list[dict[str, Any]]:
    """Each workload as JSON data (its fields as given). Workloads of one class share their
    field values (router/models/classes.py), so one dump serves them all with the name
    changed: the same objects in every other field give the same dump."""
    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for w in workloads:
        fields = w.__dict__
        key = (frozenset(w.model_fields_set), *(id(v) for k, v in fields.items() if k != "name"))
        dump = seen.get(key)
        if dump is None:
            dump = seen[key] = w.model_dump(mode="json", exclude_unset=True)
        out.append({**dump, "name": w.name})
    return out


def _canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def load(
    folder: str | Path = ".",
    *,
    policy: str | Path | None = None,
    inventory: str | Path | None = None,
    workloads: str | Path | None = None,
    out: str | Path | None = None,
    running: str | Path | None = None,
) -> Platform:
    """`router.load("examples/ml-platform")`: the platform in a folder (see Platform.load)."""
    return Platform.load(
        folder, policy=policy, inventory=inventory, workloads=workloads, out=out, running=running
    )


# -- planning -------------------------------------------------------------------------------
@dataclass(repr=False)
class Plan:
    """Where every workload of a platform goes: placements, and the workloads denied,
    unrouted or unplaced with their reasons. `document()` is plan.json."""

    platform: Platform
    built: build.Plan
    previous: Previous | None = None  # what it was planned against, if anything
    # plan.json's Later sections being made in a child while write() makes the rest (_later).
    _pending: Started[Later] | None = field(default=None, init=False)

    @property
    def placements(self) -> list[Placement]:
        return self.built.placements

    @property
    def assignment(self) -> dict[str, str]:
        """Workload name -> target id (`cluster/target`) of every placement."""
        return {p.workload.name: p.target.id for p in self.built.placements}

    def placement(self, workload: str) -> Placement | None:
        return next((p for p in self.built.placements if p.workload.name == workload), None)

    @property
    def denied(self) -> list[Decision]:
        return self.built.denied

    @property
    def unrouted(self) -> list[Decision]:
        return self.built.unrouted

    @property
    def unplaced(self) -> list[build.Unplaced]:
        return self.built.unplaced

    @property
    def ok(self) -> bool:
        """Every workload is placed or denied (what `router plan` exits 0 for)."""
        return not (self.built.left_out or self.built.unrouted)

    @cached_property
    def _document(self) -> dict[str, Any]:
        from router.plan.document import plan_document, with_diff

        if self._pending is not None and self.previous is None:
            return self._beside[0]
        doc = plan_document(self.built, lambda: self._later)
        return with_diff(doc, self._diff_with(self.previous, doc))

    @cached_property
    def _beside(self) -> tuple[dict[str, Any], str]:
        """The document and its text while a child makes the Later sections (write): without
        a diff, which reads them, the rest is made and dumped before they are waited for."""
        from router.plan.document import document_beside

        return document_beside(self.built, lambda: self._later)

    @cached_property
    def _later(self) -> Later:
        """plan.json's unplaced, scale_out (and preempted) entries: from the child write()
        started, if it did, else made here."""
        from router.plan.document import plan_later

        pending, self._pending = self._pending, None
        return pending.result() if pending is not None else plan_later(self.built)

    @cached_property
    def _text(self) -> str:
        # Dumped (and checked against the plan.json model) once: `router plan` writes it and
        # may print it too, and document() reads it back.
        from router.plan.document import dumps

        doc = self._document
        if "_beside" in self.__dict__:
            return self._beside[1]
        return dumps(doc, self._later.text)

    def document(self) -> dict[str, Any]:
        """plan.json as a dict (with a `diff` section when planned against a previous plan).
        A copy: changing it changes nothing here."""
        from router.gcpause import paused_gc

        with paused_gc():  # 100k small dicts, none in a cycle: no collection needed
            return json.loads(self._text)  # type: ignore[no-any-return]

    def json(self) -> str:
        """plan.json's bytes, as text: the same inputs always give the same text."""
        return self._text

    def diff(
        self, previous: Plan | str | Path | Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """What changed against `previous` (a Plan, a plan.json path, `git:REF`, or a plan
        document); without an argument, against the plan this one was planned with. None if
        there is nothing to compare with. The shape is plan.json's `diff` object."""
        if previous is None:
            return self._document.get("diff")
        before = _previous(previous, self.platform, None)
        return self._diff_with(before, self._document)

    @staticmethod
    def _diff_with(before: Previous | None, doc: dict[str, Any]) -> dict[str, Any] | None:
        from router.plan.diff import diff_documents

        return diff_documents(before.doc, doc, before.against) if before else None

    def render(self, format: str = "text") -> str:
        """The plan as `router plan --format FORMAT` prints it: text, markdown, json, or
        summary (the one line `--quiet` prints)."""
        from router.plan import render

        renderers = {
            "text": render.render_text,
            "markdown": render.render_markdown,
            "json": lambda doc: self.json(),
            "summary": render.summary_line,
        }
        if format not in renderers:
            raise PlanError(
                f"unknown format {format!r}",
                hint=did_you_mean(format, renderers) or f"one of {', '.join(renderers)}",
            )
        return renderers[format](self._document)

    def files(self) -> dict[str, str]:
        """Every file `write` puts in out/: {relative path: text}, plan.json included."""
        from router.emit import emit_all

        files = emit_all(self.built.placements, self.platform.project.kubernetes)
        files["plan.json"] = self.json()
        return files

    def write(self, out: str | Path | None = None) -> list[str]:
        """Write out/ (default: the platform's) atomically, as `router plan` does: a failure
        leaves the previous out/ as it was. The inputs are never overwritten. Returns the
        paths written (relative to out/, sorted); `files()` has their texts. plan.json and
        each backend's files are made side by side (router.fork) in a large plan."""
        from router.emit import emit_all
        from router.fork import can_fork, start
        from router.output import write_parts
        from router.plan.document import plan_later

        placements = self.built.placements
        kubernetes = self.platform.project.kubernetes
        parallel = len(placements) >= PARALLEL_FROM

        def emit(chunk: list[Placement]) -> Callable[[], dict[str, str]]:
            return lambda: emit_all(chunk, kubernetes)

        chunks = emit_chunks(placements, _cores() if parallel else 1)
        parts = [lambda: {"plan.json": self.json()}, *(emit(c) for c in chunks)]
        p = self.platform.project
        protect = [] if self.platform.in_memory else [p.root, p.policy, p.inventory, p.workloads]
        made = "_document" in self.__dict__ or "_text" in self.__dict__
        if parallel and not made and can_fork():
            # plan.json's reasons and scale_out (and their texts) are made in a child, started
            # first, while this process makes the rest of plan.json beside the emitters'
            # children: they were half of plan.json's time, the longest part of writing.
            self._pending = start(lambda: plan_later(self.built, text=True))
        try:
            return write_parts(
                Path(out) if out is not None else p.out,
                parts,
                protect=protect,
                parallel=parallel,
                marker="plan.json",
            )
        finally:
            if self._pending is not None:  # not read: the write failed before plan.json
                self._pending.cancel()
                self._pending = None

    def __repr__(self) -> str:
        from router.plan.render import summary_line

        return f"<{summary_line(self._document)}>"


def emit_chunks(placements: list[Placement], count: int) -> list[list[Placement]]:
    """The placements in at most `count` parts of whole clusters (each backend's cluster
    emits its files alone: emit_all), in (backend, cluster) order and about the same cost
    each (EMIT_COST per placement). Each part is one child writing out/ (Plan.write): split
    by backend, one child held 7,179 of bench L's 8,938 files, and creating them was the
    longest part of writing into an empty out/; split by count, the part with the
    Kubernetes clusters took 0.46 s against 0.15 s. The files are the same however the
    parts fall."""
    by_cluster: dict[tuple[str, str], list[Placement]] = {}
    for x in placements:
        by_cluster.setdefault((x.backend, x.cluster), []).append(x)
    cost = {key: EMIT_COST.get(key[0], 1) * len(xs) for key, xs in by_cluster.items()}
    total = sum(cost.values())
    chunks: list[list[Placement]] = []
    done = 0
    for key in sorted(by_cluster):
        # A cluster goes to the part its first placement falls in, counting in that order.
        if not chunks or len(chunks) < min(count, done * count // total + 1):
            chunks.append([])
        chunks[-1].extend(by_cluster[key])
        done += cost[key]
    return chunks


def _cores() -> int:
    """The CPUs this process may run on, at most MAX_WRITERS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(MAX_WRITERS, cores))


def _previous(
    spec: Plan | str | Path | Mapping[str, Any] | None,
    platform: Platform,
    options: SolveOptions | None,
) -> Previous | None:
    if spec is None:  # most plans: router.plan.previous is not even imported
        return None
    from router.plan.previous import GIT_PREFIX, Previous, load_previous

    if isinstance(spec, Plan):
        return Previous("plan", spec._document)
    if isinstance(spec, Mapping):
        return Previous("plan", dict(spec))
    if str(spec).startswith(GIT_PREFIX) and platform.in_memory:
        raise PlanError("--previous git:REF needs a platform loaded from a folder in git")
    return load_previous(str(spec), platform.project, options, planner=_plan_document)


def _plan_document(project: Project, options: SolveOptions) -> dict[str, Any]:
    """The plan document of another project (the platform at a git revision)."""
    return plan(Platform(project), options=options).document()


def plan(
    platform: Platform,
    previous: Plan | str | Path | Mapping[str, Any] | None = None,
    *,
    workers: int | None = None,
    options: SolveOptions | None = None,
    share_candidates: bool = False,
) -> Plan:
    """Place every workload of `platform` at once. `previous` (a Plan, a plan.json path or
    `git:REF`) keeps workloads where they were where it can, and the plan's document gets a
    `diff`. `workers` only changes how fast it is: the plan is the same."""
    from router.plan.build import build_plan
    from router.solve import cpmodel
    from router.solve.cpsat import SolveOptions

    cpmodel.load()  # here, before the solve's threads: without pandas (see cpmodel)
    opts = (
        SolveOptions()
        if options is None
        else SolveOptions(
            options.workers, options.deterministic_limit, dict(options.previous or {})
        )
    )
    if workers:
        opts.workers = workers
    before = _previous(previous, platform, opts)
    if before is not None:
        # The solver's stability level keeps workloads where the previous plan put them.
        opts.previous = dict(before.assignment)
    built = build_plan(
        platform.project,
        opts,
        inputs=platform.inputs(),
        evaluator=platform.evaluator(share_candidates),
    )
    return Plan(platform, built, before)


# -- check, test, explain -------------------------------------------------------------------
def check(platform: Platform) -> list[Finding]:
    """`router check`'s findings (unreachable rules, routes that fit nothing, ...), in file
    and line order. Inputs that do not load raise their errors."""
    from router.assure.analysis import analyze

    inputs = platform.inputs()  # the workloads must load too, as `router check` says
    findings = analyze(
        platform.policy, platform.inventory, platform.parsed_policy(), inputs.workloads
    )
    findings += _dependency_findings(inputs)
    files = []
    if not platform.in_memory:
        from router.models.loader import workload_files

        files = workload_files(platform.project.workloads)
    findings += _mig_findings(inputs, files)
    if not platform.in_memory:
        from router.assure.literals import yaml_unit_findings

        inventory = platform.project.inventory
        findings += yaml_unit_findings([(inventory, os.fspath(inventory)), *files])
    return findings


def _mig_findings(inputs: build.Inputs, files: list[tuple[Path, str]]) -> list[Finding]:
    """MIG work whose processes cannot each use a slice (router.assure.mig), as warnings at
    the workloads' lines in `files`; only GPU workloads are decided, and only when some route
    asks for MIG slices."""
    from router.assure.mig import mig_process_findings
    from router.evaluate.evaluate import Evaluator
    from router.models.loader import WorkloadSpans

    routes = (route for rule in inputs.policy.rules for route in rule.routes)
    if not any(o.name == "mig" for route in routes for o in route.options):
        return []
    ev = Evaluator(inputs.policy, inputs.inventory)
    # Two slices per node at least: fewer leave nothing to share out.
    decisions = (ev.decide(w) for w in inputs.workloads if w.gpus > 1)
    return mig_process_findings(decisions, WorkloadSpans(files))


def _dependency_findings(inputs: build.Inputs) -> list[Finding]:
    """`after:` edges a plan could not keep (router.plan.dependencies), as errors."""
    from router.assure.analysis import Finding
    from router.evaluate.evaluate import Evaluator
    from router.plan.dependencies import refusals

    if not any(w.after for w in inputs.workloads):
        return []
    ev = Evaluator(inputs.policy, inputs.inventory)
    out = []
    for r in refusals([ev.decide(w) for w in inputs.workloads]):
        span, source = r.span, r.workload.source
        out.append(Finding(
            "error", "unsupported-dependency", r.message,
            span.path if span else (source[0] if source else ""),
            span.line if span else (source[1] if source else 1),
            span.column if span else 1, hint=r.hint,
            end_line=span.end_line if span else None, end_column=span.end_column if span else None,
            source=span.source if span else None,
        ))  # fmt: skip
    return out


def test(
    platform: Platform,
    cases: str | Path | list[Case] | None = None,
    *,
    checks: bool = True,
    coverage_threshold: float | None = None,
) -> TestReport:
    """`router test`: prove the policy's `check` blocks and run its test cases (a file or
    folder of them, or Case objects; default: tests/ beside the policy). Only the policy and
    the inventory are read. `report.ok` says whether everything passed."""
    from router.assure.cases import default_cases_path, load_cases, run_cases
    from router.assure.coverage import coverage
    from router.assure.prove import prove_check
    from router.assure.report_test import TestReport
    from router.evaluate.quota import compile_quotas

    pol, inv = platform.policy, platform.inventory
    ev = platform.evaluator()
    if cases is None:
        found = (
            [] if platform.in_memory else load_cases(default_cases_path(platform.project.policy))
        )
    elif isinstance(cases, list):
        found = cases
    else:
        found = load_cases(Path(cases))
    # Each case is planned alone, so a `per` workload key has one part: that workload's own,
    # which limits it as the quota without that key does.
    results = run_cases(ev, compile_quotas(pol, inv, workload_keys=False), found)
    proved = [prove_check(ev, c, inv) for c in pol.checks] if checks else []
    cov = coverage(pol, results) if found else None
    if coverage_threshold is not None and cov is None:
        cov = coverage(pol, [])
    return TestReport(proved, results, cov, coverage_threshold)


def explain(
    platform: Platform, workload: str, previous: Plan | str | Path | Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Why `workload` went where it went, or why it went nowhere: the document `router
    explain --format json` prints (router.explain.render_explanation renders it as text)."""
    from router.explain import explain as explain_one

    w = platform.workload(workload)
    decision = platform.route(w)
    project = platform.project
    if not decision.candidates:  # denied, unrouted, or no target fits: no plan needed
        return explain_one(
            workload, decision, platform.policy, platform.inventory, project.relative
        )
    from router.explain.blocking import PlanState
    from router.plan.preempted import holds_its_place

    # A routed workload's place depends on everyone else's: plan them all.
    made = plan(platform, previous)
    state = made.built.state or PlanState(
        made.built.problem, made.built.solve.assignment, made.built.solve.nodes
    )
    doc = explain_one(
        workload,
        decision,
        platform.policy,
        platform.inventory,
        project.relative,
        state,
        made.built.solve.status,
    )
    if made.previous is not None and doc["status"] == "unplaced":
        # The plan's own reasons, which also say who preempted it, or which planned work it
        # could not preempt (plan.json's `unplaced` says the same).
        doc["reasons"] = next(
            u.reasons for u in made.unplaced if u.decision.workload.name == workload
        )
        before = made.previous.assignment
        disp = doc.get("displace")
        if disp and workload not in before:
            by_name = {x.name: x for x in platform.workloads}
            kept = [n for n in disp["workloads"] if n in before and holds_its_place(by_name[n], w)]
            if kept:
                disp["text"] += (
                    f"; but {', '.join(kept)} "
                    f"{'is' if len(kept) == 1 else 'are'} planned work of equal or "
                    "higher priority, which only higher priority preempts"
                )
    return doc
