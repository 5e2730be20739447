"""Slurm: one sbatch script per placement (script.py), its launch line (launch.py) and the
quoting that keeps user text in its place (shell.py)."""

from router.emit.slurm.script import SlurmEmitter, render

__all__ = ["SlurmEmitter", "render"]
