"""Test helpers for routing policies: Hypothesis strategies and a pytest plugin.

    from router.testing import workloads, inventories, policies, platforms

The pytest plugin (registered as the `router` pytest11 entry point) gives a platform repo's
own tests the fixtures `route(workload) -> Routing`, `router_plan` and `router_platform(path)`
(see router.testing.pytest_plugin and docs/testing.md).
"""

from router.testing.outcome import Routing, routing
from router.testing.strategies import (
    grammar_texts,
    inventories,
    inventory_dicts,
    platforms,
    policies,
    previous_plans,
    workload_dicts,
    workloads,
)

__all__ = [
    "Routing",
    "grammar_texts",
    "inventories",
    "inventory_dicts",
    "platforms",
    "policies",
    "previous_plans",
    "routing",
    "workload_dicts",
    "workloads",
]
