"""Slurm: one sbatch script per placement, the script a Slurm admin would write by hand.

Layout: `#!/bin/bash`, comment lines (who generated it, the workload, the rule and its source
line, cluster and partition), every `#SBATCH` directive, then the body. sbatch stops reading
directives at the first command line, so nothing but comments comes before the last one.

Decisions (the defaults a reader would otherwise have to guess):

* One task per node (`--ntasks-per-node=1`), started by `srun` once per node. `Resources` shapes
  a job as N nodes each running one task with all of that node's GPUs/CPUs/memory, so the
  command is a per-node launcher (torchrun, accelerate, an MPI rank with threads): a multi-node
  job runs it on every node, a single-node job once. srun gets `--cpus-per-task` again because
  Slurm 22.05 steps do not inherit it from the job (they would get one CPU).
* GPUs are `--gpus-per-node=<type>:<n>`, typed with the partition's GPU type, so Slurm cannot
  pick another model; `scontrol show job` reads it back as `TresPerNode=gres:gpu:<type>:<n>`.
  A partition with `gpu_type: any` (untyped GRES, `gpu:8`) gets `--gpus-per-node=<n>`, untyped:
  a typed request would match none of its GPUs.
* `--mem` is per node, in MiB ("M"). `--time` is the `time` option, else the workload duration.
* `--qos` / `--account` come from the options, else from the partition's own qos/account.
* Preemptible workloads get `--requeue` (being restarted is what preemptible promises they
  survive); the others get `--no-requeue`, so a job that never said it is restart-safe is not
  run twice behind its owner's back, whatever the site's JobRequeue default is.
* Output goes to `%x-%j.out` / `%x-%j.err` (job name = workload name) in the working directory,
  which is `--chdir=<workdir>` when the workload has one, else where `sbatch` was run.
* No `--export`: Slurm's default (ALL) keeps the submitter's PATH and loaded modules, which users
  expect; `--export=NONE` leaves only SLURM_* variables and also leaks into srun steps. What the
  workload declares is reproducible anyway: its env is exported explicitly, sorted.
* An image without a `container` option runs with Apptainer (it works on stock Slurm; pyxis
  needs enroot and a plugin). `apptainer exec [--nv] IMAGE CMD`, or `apptainer run` (the
  image's entrypoint) without a command; pyxis is `srun --container-image=IMAGE CMD` and needs a
  command (srun cannot start a step without one). A `container` option on a workload without an
  image is ignored: there is nothing to run in a container. Neither command nor image: PlanError.
* A service (replicas) becomes a job array, one single-node array task per minimum replica.

Safety: directive values must match a small safe character set or the plan fails (PlanError);
every body word is quoted, with `$'...'` escapes for control characters, so no user string can
put a newline, a directive or a command into the script. Comments are reduced to printable
ASCII. The output is deterministic: no timestamps, env sorted.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, ClassVar

from router.errors import PlanError
from router.models import Partition
from router.models.fields import SBATCH_CONSTRAINT, SBATCH_SAFE
from router.plan.model import Placement
from router.quantity import slurm_time

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_PATH_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Characters sbatch's #SBATCH parser and a shell both take literally: no space, quote, '#',
# '%' (a filename pattern), '$' or backslash; `router check` applies the same (models.fields).
_SAFE = SBATCH_SAFE
_CONSTRAINT = SBATCH_CONSTRAINT  # Slurm's feature expressions
_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Variables bash will not let a script assign: `export UID=...` would abort the job.
_READONLY = frozenset({"BASHOPTS", "BASH_VERSINFO", "EUID", "PPID", "SHELLOPTS", "UID"})
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}  # $'...' escapes a reader knows


class SlurmEmitter:
    backend: ClassVar[str] = "slurm"

    def paths(self, placement: Placement) -> list[str]:
        cluster, name = placement.cluster, placement.workload.name
        # The path lives under out/: neither part may hold '/' or be '.' or '..'.
        if not _PATH_PART.fullmatch(cluster) or cluster in (".", ".."):
            raise PlanError(f"cluster name {cluster!r} cannot be used as a folder name")
        if len(name) > 63 or not _DNS_LABEL.fullmatch(name):
            raise PlanError(f"workload name {name!r} is not a DNS-1123 label")
        return [f"slurm/{cluster}/{name}.sbatch"]

    def emit(self, placement: Placement) -> dict[str, str]:
        (path,) = self.paths(placement)
        return {path: render(placement)}

    def finish(self, cluster: str, placements: list[Placement]) -> dict[str, str]:
        return {}


def render(p: Placement) -> str:
    """The sbatch script of one placement."""
    part = p.target.target
    if not isinstance(part, Partition):
        raise PlanError(
            f"workload {p.workload.name}: target {p.target.id} is not a Slurm partition"
        )
    w = p.workload
    lines = [
        "#!/bin/bash",
        "# Generated by router: change the workload or the policy and re-plan, not this file.",
        _comment(f"workload: {w.name} (kind {w.kind}, team {w.team})"),
        _comment(f"rule: {p.rule} ({p.rule_source})"),
        _comment(f"cluster: {p.cluster}, partition: {part.name}"),
        *(f"#SBATCH {d}" for d in _directives(p, part)),
        "",
        "set -euo pipefail",
    ]
    for key, value in sorted(w.env.items()):
        if not _ENV_KEY.fullmatch(key) or key in _READONLY:
            raise PlanError(f"workload {w.name}: env name {key!r} cannot be set in a shell")
        lines.append(f"export {key}={_quote(value)}")
    lines.append(" ".join(_quote(word) for word in _launch(p)))
    return "\n".join(lines) + "\n"


def _directives(p: Placement, part: Partition) -> list[str]:
    w, r, o = p.workload, p.resources, p.options
    name = w.name

    def opt(flag: str, value: object, charset: re.Pattern[str] = _SAFE) -> str:
        text = str(value)
        if not charset.fullmatch(text):
            raise PlanError(
                f"workload {name}: {flag} value {text!r} has characters that are not safe in an"
                " #SBATCH line (allowed: letters, digits and . _ , : @ + = / -)"
            )
        return f"--{flag}={text}"

    service = r.replicas_max > 0
    nodes = 1 if service else r.nodes
    out = [opt("job-name", name), opt("partition", part.name), opt("nodes", nodes)]
    out.append("--ntasks-per-node=1")
    if r.gpus_per_node:
        gpu_type = r.gpu_type if r.gpu_type not in (None, "", "any") else part.gpu_type
        if part.untyped_gpus:  # a typed request matches none of an untyped partition's GPUs
            gpu_type = None
        gpus = f"{gpu_type}:{r.gpus_per_node}" if gpu_type else r.gpus_per_node
        out.append(opt("gpus-per-node", gpus))
    if r.cpus_per_node:
        out.append(opt("cpus-per-task", r.cpus_per_node))
    if r.memory_per_node:  # never --mem=0: Slurm reads it as all the node's memory
        out.append(opt("mem", f"{r.memory_per_node}M"))
    seconds = o.get("time") or r.time or w.duration
    if seconds:
        out.append(opt("time", slurm_time(int(seconds))))
    if r.exclusive or o.get("exclusive"):
        out.append("--exclusive")
    for key, default in (("qos", part.qos), ("account", part.account), ("reservation", None)):
        value = o.get(key) or default
        if value:
            out.append(opt(key, value))
    if o.get("constraint"):
        out.append(opt("constraint", o["constraint"], _CONSTRAINT))
    out.append("--requeue" if w.preemptible else "--no-requeue")
    if w.workdir:
        out.append(opt("chdir", w.workdir))
    if service:
        out.append(opt("array", f"0-{max(1, r.replicas_min) - 1}"))
    job = "%A_%a" if service else "%j"
    out += [f"--output=%x-{job}.out", f"--error=%x-{job}.err"]
    return out


def _launch(p: Placement) -> list[str]:
    """The srun command line, as argv words."""
    w, r, o = p.workload, p.resources, p.options
    nodes = 1 if r.replicas_max else r.nodes
    srun = ["srun", f"--nodes={nodes}", f"--ntasks={nodes}"]
    if r.cpus_per_node:
        srun.append(f"--cpus-per-task={r.cpus_per_node}")
    if o.get("mpi"):
        srun.append(f"--mpi={o['mpi']}")
    command = _command(w.command)
    if not w.image:
        if command is None:
            raise PlanError(f"workload {w.name} has neither a command nor an image to run")
        return [*srun, *command]
    container = o.get("container") or "apptainer"
    if container == "pyxis":
        if command is None:
            raise PlanError(
                f"workload {w.name}: pyxis needs a command (srun cannot run an image's entrypoint"
                ' without one); add a command or use container = "apptainer"'
            )
        return [*srun, f"--container-image={_pyxis_image(w.image)}", *command]
    if container != "apptainer":
        raise PlanError(f"workload {w.name}: unknown container runtime {container!r}")
    nv = ["--nv"] if r.gpus_per_node else []
    image = _apptainer_image(w.image)
    if command is None:
        return [*srun, "apptainer", "run", *nv, image]
    return [*srun, "apptainer", "exec", *nv, image, *command]


def _command(command: Any) -> list[str] | None:
    """A list is argv as is; a string is a shell command, run by bash -c."""
    if not command:
        return None
    if isinstance(command, str):
        return ["bash", "-c", command]
    return [str(arg) for arg in command]


def _pyxis_image(image: str) -> str:
    """pyxis/enroot spell a registry with '#': nvcr.io/nvidia/pytorch -> nvcr.io#nvidia/pytorch."""
    image = image.removeprefix("docker://")
    head, slash, rest = image.partition("/")
    # Docker's rule: a first component with '.' or ':' (or localhost) is a registry host.
    if slash and "#" not in image and ("." in head or ":" in head or head == "localhost"):
        return f"{head}#{rest}"
    return image


def _apptainer_image(image: str) -> str:
    """A local file (.sif, a path) or a URI stays; a registry reference becomes docker://."""
    if "://" in image or image.startswith(("/", "./", "../")) or image.endswith(".sif"):
        return image
    return f"docker://{image}"


def _quote(word: str) -> str:
    """A shell word for `word`, on one line: control characters become $'\\xHH' escapes."""
    if "\x00" in word:
        raise PlanError(f"a NUL character cannot be passed to a program: {word!r}")
    try:
        word.encode()
    except UnicodeEncodeError:
        raise PlanError(f"text that is not valid Unicode cannot be written: {word!r}") from None
    if all(ch.isprintable() for ch in word):
        return shlex.quote(word)
    parts: list[str] = []
    for ch in word:
        if ch in "\\'":
            parts.append("\\" + ch)
        elif ch.isprintable():
            parts.append(ch)
        elif ch in _NAMED:
            parts.append(_NAMED[ch])
        else:  # the UTF-8 bytes, so the result does not depend on the job's locale
            parts.extend(f"\\x{b:02x}" for b in ch.encode())
    return "$'" + "".join(parts) + "'"


def _comment(text: str) -> str:
    """A comment line from user data: printable ASCII only, so it stays one comment line."""
    return "# " + "".join(ch if " " <= ch <= "~" else "?" for ch in text)[:200]
