"""What an emitter cannot write without a command is refused where the target is chosen
(evaluate/shape.py): torchrun on Slurm, pyxis, an MPIJob. The workload is then unplaced with
that reason (exit 3) instead of `router plan` failing while it writes (fuzzer, stop 18)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from router.cli.main import cli
from router.evaluate.shape import shape
from router.models import NodePool, TargetRef, Workload
from router.models.placement import Resources
from tests.emit.test_slurm_emit import CPU, H100

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ml-platform"
POOL = NodePool(
    name="gpu", nodes=4, gpus_per_node=8, gpu_type="h100", cpus_per_node=96, memory_per_node=1 << 20
)
IMAGE = "nvcr.io/nvidia/pytorch:24.05-py3"


def _slurm(part: object) -> TargetRef:
    return TargetRef("hpc", "slurm", part, "hpc/p")  # type: ignore[arg-type]


def _k8s() -> TargetRef:
    return TargetRef("k8s", "kubernetes", POOL, "k8s/gpu")


def _job(**fields: object) -> Workload:
    base: dict[str, object] = {"name": "j", "kind": "training", "image": IMAGE, "gpus": 8}
    return Workload.model_validate(base | fields)


def test_torchrun_without_a_command_fits_kubernetes_but_not_slurm() -> None:
    w = _job(launcher="torchrun")
    assert "torchrun on Slurm needs a command" in str(shape(w, _slurm(H100), {}))
    assert isinstance(shape(w, _k8s(), {}), Resources)  # PyTorchJob runs the image's entrypoint
    assert isinstance(
        shape(_job(launcher="torchrun", command=["train.py"]), _slurm(H100), {}), Resources
    )
    # the rule's launcher option counts as the workload's own
    assert isinstance(shape(_job(), _slurm(H100), {"launcher": "torchrun"}), str)


def test_pyxis_and_mpijob_without_a_command_are_refused() -> None:
    w = _job(gpus=0, cpus=8)
    assert "pyxis needs a command" in str(shape(w, _slurm(CPU), {"container": "pyxis"}))
    assert isinstance(shape(w, _slurm(CPU), {"container": "apptainer"}), Resources)
    assert "an MPIJob needs a command" in str(shape(w, _k8s(), {"launcher": "mpi"}))
    assert isinstance(shape(w, _k8s(), {}), Resources)


def test_plan_leaves_it_unplaced_with_the_reason(tmp_path: Path) -> None:
    project = tmp_path / "p"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("out"))
    llm = project / "workloads" / "llm.yaml"
    text = llm.read_text()
    head, rest = text.split("- name: llm-pretrain-8b", 1)
    block, tail = rest.split("\n- name:", 1)
    assert "launcher: torchrun" in block and "command:" in block
    llm.write_text(
        head + "- name: llm-pretrain-8b" + re.sub(r"\n  command:.*", "", block) + "\n- name:" + tail
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["plan", str(project), "-o", str(out), "-q"])
    assert result.exit_code == 3, result.output
    doc = json.loads((out / "plan.json").read_text())
    (entry,) = [u for u in doc["unplaced"] if u["workload"] == "llm-pretrain-8b"]
    assert "torchrun on Slurm needs a command" in json.dumps(entry)
