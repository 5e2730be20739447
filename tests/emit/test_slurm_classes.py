"""Slurm scripts rendered once per workload class (SlurmEmitter): every member's script is
the one `render` writes for it alone, whatever its name, and a class whose script does not
take a name as it is (a comment cut short, a stand-in already in it) is rendered member by
member."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

import router
from router.emit import emit_all
from router.emit.slurm import SlurmEmitter
from router.emit.slurm.script import _STAND_IN, render
from router.errors import PlanError
from tests.helpers import job, make_project

POLICY = 'rule r: route slurm where name == "h100"\n'
NAMES = ["a", "b-2", "0x", "c" * 63, "with-a-long-name-of-forty-characters-xyz"]


def small(name: str, **fields: Any) -> dict[str, Any]:
    return job(name, gpus=1, cpus=1, memory="1GiB", duration="1h", **fields)


def planned(tmp_path: Path, workloads: list[dict[str, Any]]) -> router.Plan:
    root = make_project(tmp_path / "p", workloads, policy=POLICY)
    made = router.plan(router.load(root), share_candidates=True)
    assert len(made.placements) == len(workloads)
    return made


def scripts(made: router.Plan) -> tuple[dict[str, str], SlurmEmitter]:
    emitter = SlurmEmitter()
    out: dict[str, str] = {}
    for p in made.placements:
        out.update(emitter.emit(p))
    return out, emitter


def alone(made: router.Plan) -> dict[str, str]:
    return {f"slurm/{p.cluster}/{p.workload.name}.sbatch": render(p) for p in made.placements}


def test_one_render_per_class_gives_each_members_own_script(tmp_path: Path) -> None:
    # The name in the command too: only the name's own places change between members.
    made = planned(tmp_path, [small(n, command=["python", "t.py", "--run", "a"]) for n in NAMES])
    got, emitter = scripts(made)
    assert got == alone(made)
    ((_, template),) = emitter._templates.values()  # one class, one template
    assert template is not None and _STAND_IN in template
    assert got["slurm/hpc/a.sbatch"].count("--run a") == 1
    files = emit_all(made.placements)
    assert {k: v for k, v in files.items() if k.startswith("slurm/")} == got


@pytest.mark.parametrize(
    ("fields", "one_template"),
    [
        ({"team": "t" * 63, "kind": "k" * 60}, False),  # the comment is cut at 200 characters
        ({"command": ["echo", _STAND_IN]}, False),  # the stand-in is in the script already
        ({"command": ["echo", "zq1-" + "n" * 55 + "-8y"]}, True),  # the long one: harmless
    ],
)
def test_a_class_the_template_cannot_stand_for_is_rendered_member_by_member(
    tmp_path: Path, fields: dict[str, Any], one_template: bool
) -> None:
    made = planned(tmp_path, [small(n, **copy.deepcopy(fields)) for n in NAMES])
    got, emitter = scripts(made)
    assert got == alone(made)
    ((_, template),) = emitter._templates.values()
    assert (template is not None) == one_template


def test_an_unsafe_value_names_the_real_workload(tmp_path: Path) -> None:
    made = planned(tmp_path, [small(n, env={"UID": "1"}) for n in ("first", "second")])
    with pytest.raises(PlanError, match="workload first: env name 'UID' cannot be set"):
        scripts(made)
