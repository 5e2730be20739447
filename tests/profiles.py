"""The Hypothesis settings the property tests share: `@settings(BOUNDED, max_examples=N)`.

Every run draws the same examples (derandomize: CI failures reproduce, and the suite's time
is bounded), keeps none between runs (no example database), and has no deadline, since these
machines are shared and slow now and then; big or slow examples are not an error either.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

BOUNDED = settings(
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
