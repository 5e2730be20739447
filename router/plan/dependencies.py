"""Which `after:` dependencies a plan can keep, decided before planning (for `router check`).

Slurm keeps a dependency only between jobs of one slurmctld: `--dependency=afterok:<id>` names
a job id of the same cluster. So a dependency is supported when both workloads can only be
placed on Slurm partitions of one cluster. A parent that may go to Kubernetes (or to another
Slurm cluster) is refused here with the targets that allow it; `router plan` still records
such edges in plan.json (`after[].supported: false`) and `router apply` refuses to submit the
dependent job rather than starting it early.
"""

from __future__ import annotations

from dataclasses import dataclass

from router.errors import Span
from router.evaluate.evaluate import Decision
from router.models import Workload


@dataclass(frozen=True)
class Refusal:
    workload: Workload
    index: int  # into workload.after
    message: str
    hint: str

    @property
    def span(self) -> Span | None:
        spans = self.workload.after_spans
        return spans[self.index] if self.index < len(spans) else None


def _where(d: Decision) -> set[tuple[str, str]]:
    return {(c.target.backend, c.target.cluster) for c in d.candidates}


def refusals(decisions: list[Decision]) -> list[Refusal]:
    by_name = {d.workload.name: d for d in decisions}
    out = []
    for d in decisions:
        w = d.workload
        mine = _where(d)
        for i, name in enumerate(w.after):
            parent = by_name.get(name)
            if parent is None or d.status != "routed" or parent.status != "routed":
                continue  # unknown names fail at load; denied/unrouted ones are reported anyway
            theirs = _where(parent)
            both = mine | theirs
            k8s = sorted(c.target.id for c in parent.candidates if c.target.backend != "slurm")
            if k8s:
                out.append(Refusal(
                    w, i,
                    f"{w.name} starts after {name}, which may run on Kubernetes ({', '.join(k8s)});"
                    " dependencies from Slurm to Kubernetes are not supported yet",
                    f"route {name} to Slurm (`route slurm`) or drop it from {w.name}'s after",
                ))  # fmt: skip
            elif len({cluster for _, cluster in both}) > 1:
                clusters = ", ".join(sorted({cluster for _, cluster in both}))
                out.append(Refusal(
                    w, i,
                    f"{w.name} starts after {name}, but they may be placed on different Slurm"
                    f" clusters ({clusters}); a Slurm dependency names a job of its own cluster",
                    f"route {w.name} and {name} to one cluster (where cluster == ...)",
                ))  # fmt: skip
    return out
