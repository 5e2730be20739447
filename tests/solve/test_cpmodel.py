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
print(again is cp_model and cpmodel.load() is cp_model, "pandas" in sys.modules)
import pandas
print(hasattr(pandas, "DataFrame") and pandas.Series([1, 2]).sum() == 3)
# cp_model's pandas methods, given real pandas objects, see real pandas in its globals.
xs = m.new_int_var_series("xs", pandas.Index(["a", "b"]), 0, pandas.Series([4, 5], ["a", "b"]))
print(isinstance(xs, pandas.Series), [str(v) for v in xs], [list(v.proto.domain) for v in xs])
print(cp_model.pd is pandas)
"""


def test_cp_model_without_pandas_solves_and_pandas_is_itself_after() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split("\n")[:6] == [
        "False",
        "True 1 3",
        "True False",  # solving read nothing of pandas
        "True",
        "True ['xs[a]', 'xs[b]'] [[0, 4], [0, 5]]",
        "True",
    ], out.stderr


CHECK = """
import sys
from click.testing import CliRunner
from router.cli.main import cli
r = CliRunner().invoke(cli, ["check", sys.argv[1]])
print(r.exit_code, "ortools.sat.python.cp_model" in sys.modules, "pandas" in sys.modules)
"""


def test_router_check_imports_cp_model_without_pandas_too() -> None:
    # router check's encoder (router/assure/encode.py) proves with CP-SAT: the same cheap import.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    example = str(ROOT / "examples" / "ml-platform")
    out = subprocess.run(
        [sys.executable, "-c", CHECK, example], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split("\n")[0] == "0 True False", out.stderr
