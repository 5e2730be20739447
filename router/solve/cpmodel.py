"""ortools' CP-SAT module, imported without pandas.

`ortools.sat.python.cp_model` imports pandas at its top for methods taking a `pd.Series` or
`pd.Index` (router calls none of them), and pandas is most of the import's cost: 0.25 of
0.4 CPU seconds, a fifth of what `router plan` spends before its solve on 10,000 workloads.
load() imports cp_model once with a stand-in `pandas` whose names are empty classes (so the
module's annotations and isinstance checks hold, never true), then takes the stand-in out
again: a later `import pandas` anywhere gets the real one. If pandas is already imported,
or the stand-in is not enough for this ortools, cp_model is imported as usual.
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
            return importlib.import_module(_MODULE)
        except Exception:  # an ortools that needs more of pandas: the real one
            sys.modules.pop(_MODULE, None)
            del sys.modules["pandas"]
            return importlib.import_module(_MODULE)
        finally:
            if sys.modules.get("pandas") is stand_in:
                del sys.modules["pandas"]
