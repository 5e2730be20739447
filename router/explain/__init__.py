"""Why a workload went where it went, or why it went nowhere (`router explain`)."""

from router.explain.explain import explain
from router.explain.render import render_explanation

__all__ = ["explain", "render_explanation"]
