"""Slurm: one sbatch script per placement, the script a Slurm admin would write by hand.

Layout: `#!/bin/bash`, comment lines (who generated it, the workload, the rule and its source
line, cluster and partition), every `#SBATCH` directive, then the body. sbatch stops reading
directives at the first command line, so nothing but comments comes before the last one.

Decisions (the defaults a reader would otherwise have to guess):

* Tasks: one per node (`--ntasks-per-node=1`) for the plain and torchrun launchers, started by
  `srun` once per node; `ranks_per_node` tasks of `threads_per_rank` CPUs for mpi (see
  launch.py). srun gets `--cpus-per-task` again because Slurm 22.05 steps do not inherit it
  from the job (they would get one CPU).
* GPUs are `--gpus-per-node=<type>:<n>`, typed with the partition's GPU type, so Slurm cannot
  pick another model; `scontrol show job` reads it back as `TresPerNode=gres:gpu:<type>:<n>`.
  A partition with `gpu_type: any` (untyped GRES, `gpu:8`) gets `--gpus-per-node=<n>`, untyped:
  a typed request would match none of its GPUs.
* MIG slices (the `mig` option) are `--gres=gpu:<slurm type>:<n>` per node, the profile's
  GRES type from the inventory (`gres_types`, else the profile); Slurm binds the slices and
  sets CUDA_VISIBLE_DEVICES, so the script never does.
* `--mem` is per node, in MiB ("M"). `--time` is the `time` option, else the workload duration.
* `--qos` comes from the `qos` option, else the cluster's `slurm.qos_by_priority` for the
  workload's priority, else the partition's qos; `--nice` from `slurm.nice_by_priority`.
  A priority number maps to the highest name (low 1, normal 2, high 4, critical 8) at or below
  it. `--account` is the option's, else the workload's, else the partition's.
* Preemptible workloads get `--requeue` (being restarted is what preemptible promises they
  survive); the others get `--no-requeue`, so a job that never said it is restart-safe is not
  run twice behind its owner's back, whatever the site's JobRequeue default is.
* Output goes to `%x-%j.out` / `%x-%j.err` (job name = workload name; `%x-%A_%a` for arrays) in
  the cluster's `slurm.log_dir` (absolute, and it must exist on the nodes), else in the working
  directory, which is `--chdir=<workdir>` when the workload has one, else where `sbatch` ran.
* Setup lines — the cluster's, the partition's, then the workload's — run after the env
  exports, each by `eval` of one quoted word: a line is shell as its author typed it, yet it
  cannot open a here-document or a quote that swallows the lines after it, and shellcheck
  reads the script without guessing at it.
* `checkpoint: {signal_lead}` adds `--signal=B:USR1@<seconds>`: Slurm signals the batch shell,
  which runs srun in the background and forwards the signal to the step (srun passes it to
  every task), then waits for the step's own exit status.
* `array: {count, parallel}` is `--array=0-<count-1>%<parallel>`. `after:` dependencies are
  not in the script: `router apply` adds `--dependency=afterok:<job ids>` when it submits.
* No `--export`: Slurm's default (ALL) keeps the submitter's PATH and loaded modules, which users
  expect; `--export=NONE` leaves only SLURM_* variables and also leaks into srun steps. What the
  workload declares is reproducible anyway: its env is exported explicitly, sorted.
* An image without a `container` option runs with Apptainer (it works on stock Slurm; pyxis
  needs enroot and a plugin); see launch.py for mounts, workdir and image pulls. A `container`
  option on a workload without an image is ignored: there is nothing to run in a container.
  Neither command nor image: PlanError.
* A service (replicas) becomes a job array, one single-node array task per minimum replica.

Safety: directive values must match a small safe character set or the plan fails (PlanError);
every body word is quoted (shell.py), so no user string can put a newline, a directive or a
command into the script. Comments are reduced to printable ASCII. The output is
deterministic: no timestamps, env sorted. Every script passes shellcheck (tests).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import ClassVar

from router.errors import PlanError
from router.models import Partition
from router.models.fields import PRIORITIES, SBATCH_CONSTRAINT
from router.models.placement import Placement
from router.quantity import slurm_time

from .launch import launch, nodes_of, task_shape
from .shell import Raw, comment, directive, quote, words

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_PATH_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_CONSTRAINT = SBATCH_CONSTRAINT  # Slurm's feature expressions; `router check` applies it too
_NODELIST = re.compile(r"[A-Za-z0-9_.,\[\]-]+")  # a Slurm hostlist: gpu[01-08],big1
_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Variables bash will not let a script assign: `export UID=...` would abort the job.
_READONLY = frozenset({"BASHOPTS", "BASH_VERSINFO", "EUID", "PPID", "SHELLOPTS", "UID"})


# Stand-ins for a workload's name when a class's script is rendered once (SlurmEmitter):
# valid DNS labels, the second as long as a name can be, with letters, digits and a dash.
_STAND_IN = "zq0-name-7x"
_STAND_IN_LONG = "zq1-" + "n" * 55 + "-8y"


def class_key(p: Placement) -> tuple[object, ...]:
    """What a script depends on besides the workload's name: the placement's other fields,
    by identity (workloads of one class share their field objects, router/models/classes.py,
    and decisions of one signature their candidates' options and resources)."""
    w = p.workload
    return (
        frozenset(w.model_fields_set),
        *(id(v) for k, v in w.__dict__.items() if k != "name"),
        id(p.target),
        id(p.options),
        id(p.resources),
        p.cluster,
        p.rule,
        p.rule_source,
    )


def _template(p: Placement) -> str | None:
    """The class's script with _STAND_IN for the name, if every member's is that text with
    its own name put in: the name is copied into the script as it is (a DNS label quotes as
    its neighbours do), which the two stand-ins prove for this class: the long one must give
    the short one's text with only the name changed (a comment cut at 200 characters, or a
    stand-in already in the script, fails it). None: render each member itself."""
    try:
        short = render(replace(p, workload=p.workload.model_copy(update={"name": _STAND_IN})))
        long = render(replace(p, workload=p.workload.model_copy(update={"name": _STAND_IN_LONG})))
    except PlanError:
        return None  # the member's own rendering says what is wrong, with its own name
    return short if short.replace(_STAND_IN, _STAND_IN_LONG) == long else None


class SlurmEmitter:
    """One emitter per plan (emit_all makes it): the script of a workload class is rendered
    once (_template) and each member's is that text with its name; 50,000 small batch jobs
    are a few hundred classes."""

    backend: ClassVar[str] = "slurm"

    def __init__(self) -> None:
        # class key -> (its first placement, which keeps the key's objects alive; the
        # template, made when a second member comes: most classes of a plan have one)
        self._templates: dict[tuple[object, ...], tuple[Placement, str | None]] = {}
        self._one: dict[tuple[object, ...], Placement] = {}

    def paths(self, placement: Placement) -> list[str]:
        cluster, name = placement.cluster, placement.workload.name
        # The path lives under out/: neither part may hold '/' or be '.' or '..'.
        if not _PATH_PART.fullmatch(cluster) or cluster in (".", ".."):
            raise PlanError(f"cluster name {cluster!r} cannot be used as a folder name")
        if len(name) > 63 or not _DNS_LABEL.fullmatch(name):
            raise PlanError(f"workload name {name!r} is not a DNS-1123 label")
        return [f"slurm/{cluster}/{name}.sbatch"]

    def emit(self, placement: Placement) -> dict[str, str]:
        (path,) = self.paths(placement)  # checks the name: a DNS label
        key = class_key(placement)
        found = self._templates.get(key)
        if found is None:
            if key not in self._one:  # the first of its class: rendered, no template yet
                self._one[key] = placement
                return {path: render(placement)}
            found = self._templates[key] = (self._one[key], _template(placement))
        text = found[1]
        if text is None:
            return {path: render(placement)}
        return {path: text.replace(_STAND_IN, placement.workload.name)}

    def finish(self, cluster: str, placements: list[Placement]) -> dict[str, str]:
        return {}


def _partition(p: Placement) -> Partition:
    part = p.target.target
    if not isinstance(part, Partition):
        raise PlanError(
            f"workload {p.workload.name}: target {p.target.id} is not a Slurm partition"
        )
    return part


def mounts_of(p: Placement) -> list[str]:
    """The cluster's, the partition's and the workload's mounts, each once, in that order."""
    settings = p.target.slurm
    found = [*(settings.mounts if settings else []), *_partition(p).mounts, *p.workload.mounts]
    return list(dict.fromkeys(found))


def setup_of(p: Placement) -> list[tuple[str, list[str]]]:
    settings = p.target.slurm
    return [
        (f"cluster {p.cluster}", list(settings.setup) if settings else []),
        (f"partition {_partition(p).name}", list(_partition(p).setup)),
        ("workload", list(p.workload.setup)),
    ]


def render(p: Placement) -> str:
    """The sbatch script of one placement."""
    part = _partition(p)
    w = p.workload
    run = launch(p, mounts_of(p))
    lines = [
        "#!/bin/bash",
        "# Generated by router: change the workload or the policy and re-plan, not this file.",
        comment(f"workload: {w.name} (kind {w.kind}, team {w.team})"),
        comment(f"rule: {p.rule} ({p.rule_source})"),
        comment(
            f"cluster: {p.cluster}, partition: {part.slurm_name}"
            + (f" (target {part.name})" if part.slurm_name != part.name else "")
        ),
        *(f"#SBATCH {d}" for d in _directives(p, part)),
        "",
        "set -euo pipefail",
    ]
    for key, value in sorted(w.env.items()):
        if not _ENV_KEY.fullmatch(key) or key in _READONLY:
            raise PlanError(f"workload {w.name}: env name {key!r} cannot be set in a shell")
        lines += [*_literal_dollar([value]), f"export {key}={quote(value)}"]
    for where, setup in setup_of(p):
        if setup:
            lines.append(f"# setup ({where}), each line run as written")
            lines += [f"eval {quote(line)}" for line in setup]
    lines += run.before
    lines += _literal_dollar(run.argv)
    if w.checkpoint:
        signal = w.checkpoint.signal
        lines += [
            f"{words(run.argv)} &",
            "step=$!",
            f"# Slurm sends {signal} to this shell {w.checkpoint.signal_lead} s before the time"
            " limit: pass it on to the step.",
            f"trap 'kill -{signal} \"$step\" 2>/dev/null || true' {signal}",
            "while :; do",
            "    status=0",
            '    wait "$step" || status=$?',
            "    # A trapped signal ends the wait, not the step: wait again until it exits.",
            '    kill -0 "$step" 2>/dev/null || break',
            "done",
            'exit "$status"',
        ]
    else:
        lines.append(words(run.argv))
    return "\n".join(lines) + "\n"


def _literal_dollar(values: list[str]) -> list[str]:
    """shellcheck's SC2016 ("expressions don't expand in single quotes") is the point here:
    a `$` in a quoted word is for the program (bash -c on the node), not for this shell."""
    if any(not isinstance(v, Raw) and ("$" in v or "`" in v) for v in values):
        return ["# shellcheck disable=SC2016  # a $ in quotes is for the program, not here"]
    return []


def priority_name(priority: int) -> str | None:
    """The highest priority name at or below the number (3 -> normal), None below low."""
    names = [name for name, value in PRIORITIES.items() if value <= priority]
    return max(names, key=PRIORITIES.__getitem__) if names else None


def _directives(p: Placement, part: Partition) -> list[str]:
    w, r, o = p.workload, p.resources, p.options
    name = w.name
    settings = p.target.slurm

    def opt(flag: str, value: object, charset: re.Pattern[str] | None = None) -> str:
        return directive(name, flag, value, *([charset] if charset else []))

    service = r.replicas_max > 0
    _, per_node, cpus = task_shape(p)
    # A target may be one node type of a real partition: Slurm's name, its constraint/nodes.
    out = [opt("job-name", name), opt("partition", part.slurm_name), opt("nodes", nodes_of(p))]
    out.append(opt("ntasks-per-node", per_node))
    if r.gpus_per_node and r.mig:
        # MIG slices are GRES of their own type; Slurm sets CUDA_VISIBLE_DEVICES to them.
        out.append(opt("gres", f"gpu:{part.mig_gres_type(r.mig)}:{r.gpus_per_node}"))
    elif r.gpus_per_node:
        gpu_type = r.gpu_type if r.gpu_type not in (None, "", "any") else part.gpu_type
        if part.gres_type and gpu_type == part.gpu_type:  # the exact GRES type Slurm knows
            gpu_type = part.gres_type
        if part.untyped_gpus:  # a typed request matches none of an untyped partition's GPUs
            gpu_type = None
        gpus = f"{gpu_type}:{r.gpus_per_node}" if gpu_type else r.gpus_per_node
        out.append(opt("gpus-per-node", gpus))
    if cpus:
        out.append(opt("cpus-per-task", cpus))
    if r.memory_per_node:  # never --mem=0: Slurm reads it as all the node's memory
        out.append(opt("mem", f"{r.memory_per_node}M"))
    seconds = o.get("time") or r.time or w.duration
    if seconds:
        out.append(opt("time", slurm_time(int(seconds))))
    if r.exclusive or o.get("exclusive"):
        out.append("--exclusive")
    level = priority_name(w.priority)
    qos_table = {str(k): v for k, v in settings.qos_by_priority.items()} if settings else {}
    nice_table = {str(k): v for k, v in settings.nice_by_priority.items()} if settings else {}
    by_priority = qos_table.get(level) if level else None
    for key, default in (
        ("qos", by_priority or part.qos),
        ("account", w.account or part.account),
        ("reservation", None),
    ):
        value = o.get(key) or default
        if value:
            out.append(opt(key, value))
    nice = nice_table.get(level) if level else None
    if nice:
        out.append(opt("nice", nice))
    constraints = [c for c in (part.constraint, o.get("constraint")) if c]
    if constraints:
        both = "&".join(f"({c})" if "|" in c else c for c in constraints)
        out.append(opt("constraint", both, _CONSTRAINT))
    if part.nodelist:
        out.append(opt("nodelist", part.nodelist, _NODELIST))
    out.append("--requeue" if w.preemptible else "--no-requeue")
    if w.workdir:
        out.append(opt("chdir", w.workdir))
    if w.checkpoint:
        out.append(opt("signal", f"B:{w.checkpoint.signal}@{w.checkpoint.signal_lead}"))
    if service:
        out.append(opt("array", f"0-{max(1, r.replicas_min) - 1}"))
    elif w.array:
        count, parallel = w.array.count, w.array.in_flight
        limit = f"%{parallel}" if parallel < count else ""
        out.append(f"--array=0-{count - 1}{limit}")
    job = "%A_%a" if service or w.array else "%j"
    logs = f"{settings.log_dir.rstrip('/')}/" if settings and settings.log_dir else ""
    out += [f"--output={logs}%x-{job}.out", f"--error={logs}%x-{job}.err"]
    return out
