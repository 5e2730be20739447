"""Submit a plan's sbatch scripts with `sbatch --parsable` and record the job ids.

Idempotent: every job router submits carries `--comment=router:script=<sha256>,plan=<sha256>`
(the script's and plan.json's sha256). Before submitting, one `squeue -h --states=all
--name=<workloads>` per cluster finds the jobs Slurm still knows (pending, running, or finished
less than MinJobAge ago) and the newest router job of each workload decides:

* same script sha256 → unchanged, nothing submitted;
* another script → submitted again, reported "changed: was job N, submitted M"; the old job is
  cancelled (scancel, if not yet finished) only with `replace=True`;
* no job → submitted. A cancelled job counts as gone (someone removed it; the plan still
  wants it), and so does one that finished and left slurmctld's memory (MinJobAge), as a
  GitOps tool recreates a deleted object; a job that completed or failed but is still known
  is not run again.

The state lives in Slurm, not in out/: `router plan` replaces out/ (and its apply.json)
atomically, and CI runners start from a fresh checkout. out/apply.json is the record of the
last apply: per workload its cluster, job id, script, script sha256 and the sha256 of the plan
the job was submitted for. A job that the tag does not name but apply.json does is matched by
its id.

Where jobs run: sbatch runs in `cwd` (the folder `router apply` was started in), as if the
user had typed `sbatch out/slurm/<cluster>/<workload>.sbatch` there, so `%x-%j.out` lands in
that folder unless the workload's `workdir` gives `--chdir`. Never in out/: the next `router
plan` swaps out/ away, and a job's working folder would vanish under it.

Dependencies: a placement's `after` (plan.json) becomes `--dependency=afterok:<ids>` on its
sbatch line (not in the script, whose sha256 stays the plan's), so jobs are submitted parents
first. A parent already known to Slurm as COMPLETED needs no dependency; a parent that failed
to submit, is not placed, or is not a Slurm job of the same cluster (`supported: false`) fails
the dependent one, which is not submitted: it would start too early or never.

Which Slurm: the environment's (SLURM_CONF as set), or per cluster `slurm_conf[cluster]`.
SBATCH_* and SLURM_* variables other than SLURM_CONF are not passed on: sbatch lets them
override the script's directives, and the plan, not the submitting shell, decides a job's
partition, account and sizes.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from router.errors import PlanError
from router.models.dependencies import order
from router.models.plan import AfterEntry, PlacementEntry, PlanDocument

FORMAT_VERSION = "1"
TAG = "router:"
TIMEOUT = 120  # seconds for one Slurm command
TERMINAL = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "SPECIAL_EXIT",
        "TIMEOUT",
    }
)


@dataclass
class Outcome:
    """What apply did (or, dry, would do) for one Slurm placement."""

    workload: str
    cluster: str
    target: str
    script: str  # path under out/
    script_sha256: str
    action: str  # "submit", "replace" (changed script), "unchanged" or "failed"
    job_id: int | None = None
    plan_sha256: str | None = None  # of the plan the job was submitted for
    previous_job: int | None = None
    cancelled: bool = False
    error: str | None = None  # why it failed (sbatch's stderr), or why scancel did
    after_jobs: list[int] = field(default_factory=list)  # --dependency=afterok:<these>


@dataclass
class ApplyResult:
    plan_sha256: str
    outcomes: list[Outcome]
    kubernetes: list[str] = field(default_factory=list)  # workloads left to GitOps tools
    dry_run: bool = False

    def count(self, *actions: str) -> int:
        return sum(o.action in actions for o in self.outcomes)

    @property
    def failed(self) -> bool:
        return any(o.action == "failed" or o.error for o in self.outcomes)

    def document(self) -> dict[str, Any]:
        """apply.json."""
        jobs, failed = {}, {}
        for o in self.outcomes:
            base = {
                "cluster": o.cluster,
                "script": o.script,
                "script_sha256": o.script_sha256,
                "target": o.target,
            }
            if o.action == "failed":
                failed[o.workload] = {**base, "error": o.error}
                continue
            entry: dict[str, Any] = {
                **base,
                "action": o.action,
                "job_id": o.job_id,
                "plan_sha256": o.plan_sha256,
            }
            if o.previous_job is not None:
                entry |= {"previous_job_id": o.previous_job, "previous_cancelled": o.cancelled}
            if o.after_jobs:
                entry["after_job_ids"] = o.after_jobs
            jobs[o.workload] = entry
        return {
            "failed": failed,
            "format_version": FORMAT_VERSION,
            "jobs": jobs,
            "kubernetes_not_applied": sorted(self.kubernetes),
            "plan_sha256": self.plan_sha256,
        }


@dataclass(frozen=True)
class Job:
    id: int
    name: str
    state: str
    script_sha256: str | None
    plan_sha256: str | None


# ---- the plan -------------------------------------------------------------------------------


def read_plan(out: Path) -> tuple[PlanDocument, str]:
    """plan.json of out/, read through its model, and its sha256; PlanError when there is
    none or it is not what router writes (run `router plan`)."""
    path = Path(out) / "plan.json"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise PlanError("no plan to apply: run `router plan` first", path=str(path)) from None
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PlanError(
            f"{path} is not JSON ({e}); run `router plan` again", path=str(path)
        ) from None
    if not isinstance(doc, dict) or doc.get("format_version") != FORMAT_VERSION:
        raise PlanError(
            f"{path} is not a plan of format_version {FORMAT_VERSION}; run `router plan` again",
            path=str(path),
        )
    try:
        plan = PlanDocument.model_validate(doc, strict=True)
    except ValidationError as e:
        error = e.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise PlanError(
            f"{path} is not a plan router writes ({where}: {error['msg']}); run `router plan`"
            " again",
            path=str(path),
        ) from None
    return plan, hashlib.sha256(data).hexdigest()


def _script_of(placement: PlacementEntry) -> str:
    scripts = [a for a in placement.artifacts if a.endswith(".sbatch")]
    if len(scripts) != 1:
        raise PlanError(
            f"plan.json: placement of {placement.workload} has "
            f"{len(scripts)} sbatch scripts, expected one"
        )
    rel = PurePosixPath(scripts[0])
    if rel.is_absolute() or ".." in rel.parts:
        raise PlanError(f"plan.json: artifact {scripts[0]!r} is not a path under out/")
    return rel.as_posix()


def _previous(out: Path) -> dict[int, dict[str, Any]]:
    """Jobs of the last apply.json by id (a damaged or missing file is no record)."""
    try:
        doc = json.loads((out / "apply.json").read_text(encoding="utf-8"))
        return {int(j["job_id"]): j for j in doc["jobs"].values() if j.get("job_id")}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


# ---- Slurm ----------------------------------------------------------------------------------


def slurm_env(slurm_conf: str | None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SBATCH_", "SLURM_")) or k == "SLURM_CONF"
    }
    if slurm_conf:
        env["SLURM_CONF"] = slurm_conf
    return env


def _run(args: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[int, str, str]:
    try:
        proc = subprocess.run(
            args, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT
        )
    except FileNotFoundError:
        return 127, "", f"{args[0]}: not installed here"
    except subprocess.TimeoutExpired:
        return 124, "", f"{args[0]}: no answer within {TIMEOUT} s"
    return proc.returncode, proc.stdout, proc.stderr.strip()


def parse_tag(comment: str) -> tuple[str | None, str | None]:
    """(script sha256, plan sha256) from a job comment router wrote, else (None, None)."""
    if not comment.startswith(TAG):
        return None, None
    fields = dict(p.split("=", 1) for p in comment[len(TAG) :].split(",") if "=" in p)
    return fields.get("script"), fields.get("plan")


def find_jobs(names: Iterable[str], env: dict[str, str]) -> list[Job]:
    """Jobs slurmctld knows with these names (any state), one per job id (arrays once)."""
    wanted = sorted(set(names))
    code, out, err = _run(
        ["squeue", "-h", "--states=all", f"--name={','.join(wanted)}", "-o", "%A|%j|%T|%k"], env
    )
    if code != 0:
        raise RuntimeError(f"squeue failed: {err or out}")
    jobs: dict[int, Job] = {}
    for line in out.splitlines():
        parts = line.split("|", 3)
        if len(parts) < 4 or not parts[0].strip().isdigit():
            continue
        script, plan = parse_tag(parts[3].strip())
        job = Job(int(parts[0]), parts[1].strip(), parts[2].strip(), script, plan)
        jobs.setdefault(job.id, job)
    return sorted(jobs.values(), key=lambda j: j.id)


def submit(
    script: Path,
    comment: str,
    env: dict[str, str],
    cwd: Path,
    hold: bool,
    after: list[int] | None = None,
) -> tuple[int | None, str]:
    """(job id, "") or (None, sbatch's stderr)."""
    dependency = [f"--dependency=afterok:{':'.join(map(str, after))}"] if after else []
    args = [
        "sbatch",
        "--parsable",
        f"--comment={comment}",
        *(["--hold"] if hold else []),
        *dependency,
        str(script),
    ]
    code, out, err = _run(args, env, cwd)
    first = out.strip().splitlines()[-1].split(";")[0] if out.strip() else ""
    if code != 0 or not first.isdigit():
        return None, err or out.strip() or f"sbatch exited {code}"
    return int(first), ""


# ---- apply ----------------------------------------------------------------------------------


def apply_plan(
    out: Path,
    *,
    dry_run: bool = False,
    hold: bool = False,
    replace: bool = False,
    slurm_conf: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> ApplyResult:
    """Submit every Slurm placement of out/plan.json not already submitted; write apply.json."""
    out = Path(out)
    doc, plan_sha = read_plan(out)
    placements = sorted(doc.placements, key=lambda p: p.workload)
    slurm = [p for p in placements if p.backend == "slurm"]
    result = ApplyResult(
        plan_sha,
        [],
        dry_run=dry_run,
        kubernetes=[p.workload for p in placements if p.backend == "kubernetes"],
    )
    previous = _previous(out)
    clusters = sorted({p.cluster for p in slurm})
    for cluster in clusters:
        mine = [p for p in slurm if p.cluster == cluster]
        env = slurm_env((slurm_conf or {}).get(cluster))
        result.outcomes += _apply_cluster(
            out, mine, plan_sha, previous, env, cwd or Path.cwd(), dry_run, hold, replace
        )
    if not dry_run:
        write_json_atomic(out / "apply.json", result.document())
    return result


def _apply_cluster(
    out: Path,
    placements: list[PlacementEntry],
    plan_sha: str,
    previous: dict[int, dict[str, Any]],
    env: dict[str, str],
    cwd: Path,
    dry_run: bool,
    hold: bool,
    replace: bool,
) -> list[Outcome]:
    outcomes = []
    for p in placements:
        rel = _script_of(p)
        try:
            sha = hashlib.sha256((out / rel).read_bytes()).hexdigest()
        except OSError as e:
            sha, error = "", f"cannot read {rel}: {e.strerror}"
        else:
            error = ""
        outcomes.append(
            Outcome(
                p.workload,
                p.cluster,
                p.target,
                rel,
                sha,
                "failed" if error else "submit",
                error=error or None,
            )
        )
    todo = [o for o in outcomes if o.action != "failed"]
    try:
        jobs = find_jobs([o.workload for o in todo], env) if todo else []
    except RuntimeError as e:  # without knowing what runs, submitting could double a job
        for o in todo:
            o.action, o.error = "failed", str(e)
        return outcomes
    by_name = {o.workload: o for o in outcomes}
    after = {p.workload: list(p.after or []) for p in placements}
    states = {j.id: j.state for j in jobs}
    for name in order(list(by_name), {k: [e.workload for e in v] for k, v in after.items()}):
        o = by_name[name]
        if o.action == "failed":
            continue
        _decide(o, jobs, previous)
        if o.action == "unchanged":
            continue
        error = _dependencies(o, after[name], by_name, states)
        if error:
            o.action, o.error = "failed", error
            continue
        if dry_run:
            continue
        comment = f"{TAG}script={o.script_sha256},plan={plan_sha}"
        job_id, error = submit(out / o.script, comment, env, cwd, hold, o.after_jobs)
        if job_id is None:
            o.action, o.error = "failed", error
            continue
        o.job_id, o.plan_sha256 = job_id, plan_sha
        if replace and o.previous_job is not None:
            _cancel(o, jobs, env)
    return outcomes


def _dependencies(
    o: Outcome, after: list[AfterEntry], by_name: dict[str, Outcome], states: dict[int, str]
) -> str:
    """Fill o.after_jobs from its parents' outcomes; the reason it cannot be submitted, or ""."""
    for entry in after:
        name = entry.workload
        parent = by_name.get(name)
        if not entry.supported or parent is None:
            where = f"on {entry.backend} cluster {entry.cluster}" if entry.backend else "not placed"
            return (
                f"not submitted: it starts after {name}, which is {where}; only a Slurm job"
                " of the same cluster can be waited for (see `router check`)"
            )
        if parent.action == "failed":
            return f"not submitted: it starts after {name}, which was not submitted"
        if parent.job_id is None:  # dry run: the parent would be submitted first
            continue
        state = states.get(parent.job_id, "") if parent.action == "unchanged" else ""
        if state == "COMPLETED":
            continue  # done already: nothing to wait for
        if state in TERMINAL:  # afterok on it would never be satisfied
            return f"not submitted: it starts after {name}, whose job {parent.job_id} ended {state}"
        o.after_jobs.append(parent.job_id)
    return ""


def _decide(o: Outcome, jobs: list[Job], previous: dict[int, dict[str, Any]]) -> None:
    """unchanged / replace / submit, from the newest router job of the workload."""
    known = []
    for job in jobs:
        if job.name != o.workload or job.state == "CANCELLED":
            continue
        script, plan = job.script_sha256, job.plan_sha256
        record = previous.get(job.id)
        if script is None and record and record.get("script") == o.script:
            script, plan = record.get("script_sha256"), record.get("plan_sha256")
        if script:
            known.append((job.id, script, plan))
    if not known:
        return
    job_id, script, plan = max(known)
    if script == o.script_sha256:
        o.action, o.job_id, o.plan_sha256 = "unchanged", job_id, plan
    else:
        o.action, o.previous_job = "replace", job_id


def _cancel(o: Outcome, jobs: list[Job], env: dict[str, str]) -> None:
    old = next(j for j in jobs if j.id == o.previous_job)
    if old.state in TERMINAL:
        return
    code, out, err = _run(["scancel", str(old.id)], env)
    if code == 0:
        o.cancelled = True
    else:
        o.error = f"scancel {old.id} failed: {err or out}"


def write_json_atomic(path: Path, doc: dict[str, Any]) -> None:
    from router.output import write_file_atomic

    write_file_atomic(path, json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
