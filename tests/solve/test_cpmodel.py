"""router.solve.cpmodel imports CP-SAT without pandas, and leaves pandas importable as itself.
Run in a fresh interpreter: in this one, another test may have imported either already."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
from router.solve import cpmodel
cp_model = cpmodel.load()
print("pandas" in sys.modules)
m = cp_model.CpModel()
x = m.new_int_var(0, 10, "x")
y = m.new_int_var(0, 10, "y")
m.add(x + 2 * y <= 7)
m.maximize(x + 3 * y)
solver = cp_model.CpSolver()
print(solver.solve(m) == cp_model.OPTIMAL, solver.value(x), solver.value(y))
from ortools.sat.python import cp_model as again
print(again is cp_model and cpmodel.load() is cp_model)
import pandas
print(hasattr(pandas, "DataFrame") and pandas.Series([1, 2]).sum() == 3)
"""


def test_cp_model_without_pandas_solves_and_pandas_is_itself_after() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split("\n")[:4] == ["False", "True 1 3", "True", "True"], out.stderr
