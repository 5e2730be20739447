"""ortools' CP-SAT module, imported without pandas.

`ortools.sat.python.cp_model` imports pandas at its top for methods taking a `pd.Series` or
`pd.Index` (router calls none of them), and pandas is most of the import's cost: 0.25 of
0.4 CPU seconds, a fifth of what `router plan` spends before its solve on 10,000 workloads.
load() imports cp_model once with a stand-in `pandas` whose names are empty classes (so the
module's annotations hold), then takes the stand-in out of sys.modules again (a later
`import pandas` anywhere gets the real one) and, in cp_model's globals, puts a deferred
`pandas` in its place: the first name read through it (`pd.Series` in an isinstance check,
once a caller passes pandas objects) imports the real pandas and puts that in cp_model's
globals. If pandas is already imported, or the stand-in is not enough for this ortools,
cp_model is imported as usual.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType
from typing import Any

_MODULE = "ortools.sat.python.cp_model"
_LOCK = threading.Lock()


class _StandIn(ModuleType):
    """`pandas` as far as cp_model's import needs it: every name an empty class."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        made = type(name, (), {"__module__": "pandas"})
        setattr(self, name, made)
        return made


class _Deferred(ModuleType):
    """`pandas` in a module's globals after the stand-in's work is done: the first name read
    imports the real pandas, which then takes this one's place there."""

    def __init__(self, holders: list[tuple[ModuleType, str]]) -> None:
        super().__init__("pandas")
        self._holders = holders

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_holders":
            raise AttributeError(name)
        real = importlib.import_module("pandas")
        for module, key in self._holders:
            if vars(module).get(key) is self:
                setattr(module, key, real)
        return getattr(real, name)


def _defer(stand_in: ModuleType) -> None:
    """Every global of an ortools module that holds the stand-in gets a _Deferred instead."""
    holders = [
        (module, key)
        for name, module in list(sys.modules.items())
        if name.startswith("ortools") and module is not None
        for key, value in list(vars(module).items())
        if value is stand_in
    ]
    deferred = _Deferred(holders)
    for module, key in holders:
        setattr(module, key, deferred)


def load() -> ModuleType:
    """cp_model, imported (without pandas when it can be) if it was not yet."""
    found = sys.modules.get(_MODULE)
    if found is not None:
        return found
    with _LOCK:
        if _MODULE in sys.modules or "pandas" in sys.modules:
            return importlib.import_module(_MODULE)
        stand_in = _StandIn("pandas")
        sys.modules["pandas"] = stand_in
        try:
            module = importlib.import_module(_MODULE)
            _defer(stand_in)
            return module
        except Exception:  # an ortools that needs more of pandas: the real one
            sys.modules.pop(_MODULE, None)
            del sys.modules["pandas"]
            return importlib.import_module(_MODULE)
        finally:
            if sys.modules.get("pandas") is stand_in:
                del sys.modules["pandas"]
