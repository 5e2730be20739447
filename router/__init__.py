"""router: declarative policy-as-code workload routing for Slurm and Kubernetes.

    >>> import router
    >>> platform = router.load("examples/ml-platform")
    >>> plan = router.plan(platform)

The API is in router.api (docs/api.md); errors a user can cause are router.RouterError.
"""

# The subpackages `plan` and `explain` are imported before the functions of the same names
# are bound below, so that these names stay the functions (a subpackage imported for the
# first time later would rebind its name here).
from router import explain as _explain_package  # noqa: F401
from router import plan as _plan_package  # noqa: F401
from router.api import Plan, Platform, check, explain, load, plan, test
from router.errors import RouterError
from router.version import __version__

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
