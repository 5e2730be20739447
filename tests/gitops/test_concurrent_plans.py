"""Plans side by side into one out/: every run succeeds and out/ is always one whole plan.

Before the swap was locked, two `router plan` runs into one out/ failed in 2 of 122 rounds
with "Directory not empty": one renamed its new folder into the place the other had just
emptied. The pause hook lines the runs up at the swap, where the race was.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

from router.output import TEST_PAUSE_ENV, write_out
from tests.gitops.conftest import copy_example

REPO = Path(__file__).resolve().parents[2]


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _write(out: str, n: int, rounds: int, start: object) -> None:
    start.wait()  # type: ignore[attr-defined]  # a multiprocessing Barrier
    for r in range(rounds):
        # Each writer's files differ, so a mixed or partial out/ would show.
        files = {f"w{n}/{i}.txt": f"{n} {r} {i}\n" for i in range(20)}
        files["who.txt"] = f"{n} {r}\n"
        write_out(Path(out), files)


def test_writers_racing_on_one_out_never_fail_or_mix(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ctx = multiprocessing.get_context("fork")
    writers, rounds = 6, 15
    start = ctx.Barrier(writers)
    procs = [ctx.Process(target=_write, args=(str(out), n, rounds, start))
             for n in range(writers)]  # fmt: skip
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * writers
    n, r = (out / "who.txt").read_text().split()
    assert sorted(_tree(out)) == sorted([f"w{n}/{i}.txt" for i in range(20)] + ["who.txt"])
    assert all((out / f"w{n}/{i}.txt").read_text() == f"{n} {r} {i}\n" for i in range(20))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no sibling left behind


def test_plans_side_by_side_into_one_out(tmp_path: Path) -> None:
    project = copy_example(tmp_path / "platform")
    env = {**os.environ, TEST_PAUSE_ENV: "0.5", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "router", "plan", str(project)]
    for _ in range(2):
        procs = [
            subprocess.Popen(
                cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
            )
            for _ in range(3)
        ]
        results = [(p.wait(120), p.stderr.read() if p.stderr else "") for p in procs]
        assert all(code in (0, 3) for code, _ in results), results
    alone = tmp_path / "alone"
    subprocess.run([*cmd, "-o", str(alone)], env={**env, TEST_PAUSE_ENV: ""}, check=False)
    assert _tree(project / "out") == _tree(alone)  # the same inputs: one plan's bytes
    assert sorted(p.name for p in project.iterdir() if p.name.startswith(".")) == []
