"""What a policy does with one workload, in a form tests assert on and failures print short.

`Routing` is what the pytest plugin's `route` fixture returns. Its repr names the workload,
the outcome, the rule and the candidate targets (never the whole platform), so a Hypothesis
falsifying example or a failed assertion stays a few lines long.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from router.language import ast

if TYPE_CHECKING:
    from router.api import Platform
    from router.evaluate.evaluate import Decision
    from router.models import Workload

Status = Literal["denied", "unrouted", "routed", "unplaced"]


@dataclass(frozen=True)
class Routing:
    """The outcome for one workload, before capacity is shared with the others:

    - "denied": a `deny` rule rejected it (`rule`, `message`);
    - "unrouted": no rule claims it;
    - "routed": `rule` claims it and `targets` can hold it (best first);
    - "unplaced": `rule` claims it but no target can hold it; `reasons` say why, as
      `router plan` and `router explain` would (e.g. "hpc-east/gpu-h100: 32 nodes < 64
      needed"). A test that expects a route then fails with those reasons in its message.
    """

    workload: str
    status: Status
    rule: str | None = None
    targets: tuple[str, ...] = ()
    message: str = ""
    reasons: tuple[str, ...] = ()
    decision: Decision | None = field(default=None, repr=False, compare=False)

    @property
    def target(self) -> str | None:
        """The best candidate target's id (`cluster/target`), if any."""
        return self.targets[0] if self.targets else None

    @property
    def backends(self) -> frozenset[str]:
        assert self.decision is not None
        return frozenset(c.target.backend for c in self.decision.candidates)

    @property
    def backend(self) -> str | None:
        """The best candidate's backend ("slurm", "kubernetes"), if any."""
        assert self.decision is not None
        cands = self.decision.candidates
        return cands[0].target.backend if cands else None

    @property
    def options(self) -> Mapping[str, Any]:
        """The options (`with ...`) of the best candidate's route."""
        assert self.decision is not None
        cands = self.decision.candidates
        return cands[0].options if cands else {}


def routing(platform: Platform, workload: Mapping[str, Any] | Workload) -> Routing:
    """Route one workload on `platform`. A dict without `name` or `image` gets placeholders,
    so a test states only the fields it is about."""
    from router.explain.conditions import WhereValues
    from router.explain.reasons import summarise

    if isinstance(workload, Mapping):
        workload = {"name": "test", "image": "registry.example/test:1", **workload}
    d = platform.route(workload)
    name = d.workload.name
    rule = d.rule.name if d.rule is not None else None
    if d.status == "denied":
        return Routing(name, "denied", rule, message=d.message, decision=d)
    if d.status == "unrouted":
        return Routing(name, "unrouted", decision=d)
    assert isinstance(d.rule, ast.Rule)
    if not d.candidates:
        values = WhereValues(platform.policy.constants, platform.inventory.targets())
        why = summarise(d, None, platform.project.relative, values=values).reasons
        return Routing(name, "unplaced", rule, reasons=tuple(why), decision=d)
    ordered = sorted(d.candidates, key=lambda c: (c.rank, c.pref, c.target.id))
    return Routing(name, "routed", rule, tuple(c.target.id for c in ordered), decision=d)
