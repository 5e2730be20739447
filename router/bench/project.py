"""`router bench --project`: the platform written out as a project folder (router.yaml, a
.route file, inventory.yaml, workloads/all.yaml) and planned by `router plan` in a child
process, timed end to end as a user runs it: start-up, loading YAML, planning, writing out/."""

from __future__ import annotations

import hashlib
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from router.bench.generator import Platform

ROUTER_YAML = "policy: policies\ninventory: inventory.yaml\nworkloads: workloads\nout: out\n"


def write_project(platform: Platform, folder: Path) -> None:
    """Write `platform` as a project folder that `router plan folder` reads."""
    (folder / "policies").mkdir(parents=True, exist_ok=True)
    (folder / "workloads").mkdir(exist_ok=True)
    (folder / "policies" / "platform.route").write_text(platform.policy)
    (folder / "inventory.yaml").write_text(yaml.safe_dump(platform.inventory, sort_keys=False))
    text = yaml.safe_dump(platform.workloads, sort_keys=False)
    (folder / "workloads" / "all.yaml").write_text(text)
    (folder / "router.yaml").write_text(ROUTER_YAML)


def run_project(platform: Platform, workers: int, keep: Path | None = None) -> dict[str, Any]:
    """Plan the written platform twice with `router plan -q` (into an empty out/, then over
    it, as a pipeline re-plans) and report each run's wall, CPU and system (kernel) seconds
    and peak RSS."""
    with tempfile.TemporaryDirectory(prefix="router-bench-") as tmp:
        folder = keep if keep is not None else Path(tmp)
        write_project(platform, folder)
        runs = [_plan(folder, workers) for _ in range(2)]
    first, again = runs
    return {
        "size": platform.size,
        "seed": platform.seed,
        "workloads": len(platform.workloads),
        "plan_seconds": first["seconds"],
        "plan_cpu_seconds": first["cpu_seconds"],
        "replan_seconds": again["seconds"],
        "replan_cpu_seconds": again["cpu_seconds"],
        # The kernel's share of the CPU seconds: mostly creating out/'s files (router/output.py)
        "plan_system_seconds": first["system_seconds"],
        "replan_system_seconds": again["system_seconds"],
        "plan_peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        # How fast the machine was just before each run (_reference): compare runs by it
        "plan_reference_seconds": first["reference_seconds"],
        "replan_reference_seconds": again["reference_seconds"],
        "exit_code": first["exit_code"],
        "summary": first["summary"],
        "same_bytes": first["digest"] == again["digest"],
    }


# A fixed pure-Python loop, run in a fresh interpreter: its wall time says how fast this
# machine ran at that moment. A shared VM's speed can swing by half within minutes (on the
# 2-core CI machine, L seed 0's plan took 4.2 s in one minute and 6.2 s a few later, with
# this loop 50% slower), so figures from different runs are read beside it.
REFERENCE_LOOP = "sum(i * i for i in range(3_000_000))"


def _reference() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-S", "-c", REFERENCE_LOOP], check=True)
    return round(time.perf_counter() - started, 3)


def _plan(folder: Path, workers: int) -> dict[str, Any]:
    reference = _reference()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    cmd = [sys.executable, "-m", "router", "plan", str(folder), "-q", "--workers", str(workers)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 3):
        raise RuntimeError(f"router plan exited {done.returncode}: {done.stderr.strip()}")
    digest = _digest(folder / "out")
    return {
        "seconds": round(seconds, 3),
        "reference_seconds": reference,
        "cpu_seconds": round(
            after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 3
        ),
        "system_seconds": round(after.ru_stime - before.ru_stime, 3),
        # ru_maxrss of children is the largest child so far, in KiB on Linux
        "peak_rss_mb": round(after.ru_maxrss / 1024, 1),
        "exit_code": done.returncode,
        "summary": done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "",
        "digest": digest,
    }


def _digest(out: Path) -> str:
    """One hash of every file's path and bytes under `out`, in path order."""
    h = hashlib.sha256()
    for f in sorted(p for p in out.rglob("*") if p.is_file()):
        h.update(f.relative_to(out).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()
