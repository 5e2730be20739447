"""The one small interface every backend's emitter implements.

An emitter turns placements into files under out/: it returns {relative path: text} and never
writes itself, so the plan can write everything atomically in one place.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from router.models.placement import Placement


class Emitter(Protocol):
    backend: ClassVar[str]

    def paths(self, placement: Placement) -> list[str]:
        """The artifact paths (relative to out/) `emit` will write for this placement."""
        ...

    def emit(self, placement: Placement) -> dict[str, str]:
        """The files of one placement: {relative path under out/: content}."""
        ...

    def finish(self, cluster: str, placements: list[Placement]) -> dict[str, str]:
        """Files per cluster written after all placements (e.g. kustomization.yaml)."""
        ...
