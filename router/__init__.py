"""router: declarative policy-as-code workload routing for Slurm and Kubernetes.

    >>> import router
    >>> platform = router.load("examples/ml-platform")
    >>> plan = router.plan(platform)

The API is in router.api (docs/api.md); errors a user can cause are router.RouterError.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from router.errors import RouterError
from router.version import __version__

if TYPE_CHECKING:
    from router.api import Plan, Platform, check, explain, load, plan, test

__all__ = [
    "Plan",
    "Platform",
    "RouterError",
    "__version__",
    "check",
    "explain",
    "load",
    "plan",
    "test",
]

_API = frozenset({"Plan", "Platform", "check", "explain", "load", "plan", "test"})


def __getattr__(name: str) -> Any:
    """The API, imported when first used: `import router` (and so every `router` command,
    `router plan --help` too) does not pay for pydantic, lark and the models up front."""
    if name in _API:
        from router import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'router' has no attribute {name!r}")


class _Package(types.ModuleType):
    """Importing the subpackage router.plan or router.explain binds its name here; the API
    functions of the same names must stay what `router.plan` and `router.explain` are."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("plan", "explain") and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
