"""Property tests of this platform's policy, as a platform team writes them: Hypothesis
draws workloads of a kind, the plugin's `route` fixture routes them (session-scoped, so no
health check needs suppressing), and a failure prints the workload, not the platform."""

from hypothesis import given, settings
from hypothesis import strategies as st

import router
from router.models import Workload
from router.testing import workloads
from router.testing.pytest_plugin import Route

BOUNDED = settings(max_examples=40, deadline=None)


@BOUNDED
@given(
    w=workloads(
        kind="training",
        gpus=st.integers(8, 64),
        gpu_type=st.sampled_from(["h100", "a100"]),
        duration=st.sampled_from(["1h", "12h", "24h"]),
    )
)
def test_big_training_goes_to_infiniband_slurm_exclusively(route: Route, w: Workload) -> None:
    r = route(w)
    assert r.rule == "large_training"
    assert r.status == "routed", r.reasons
    assert r.backends == {"slurm"}
    assert r.options["exclusive"] is True and r.options["qos"] == "high"


@BOUNDED
@given(gpus=st.integers(2, 8))
def test_notebooks_get_at_most_one_gpu(route: Route, gpus: int) -> None:
    r = route({"kind": "notebook", "gpus": gpus})
    assert (r.status, r.rule) == ("denied", "notebook_gpus")
    assert "at most one GPU" in r.message


@BOUNDED
@given(
    w=workloads(
        kind="inference", team=st.sampled_from(["research", "vision"]), gpus=st.integers(0, 1)
    )
)
def test_services_are_served_by_kubernetes_prod(route: Route, w: Workload) -> None:
    r = route(w)
    assert r.rule == "inference"
    if r.status == "routed":
        assert r.backends == {"kubernetes"}
        assert {t.split("/")[0] for t in r.targets} == {"k8s-prod"}
        assert r.options["hpa"] == {"cpu": 70, "max": 20, "min": 2}


def test_training_no_partition_can_hold_is_unplaced_with_the_reason(route: Route) -> None:
    r = route({"kind": "training", "gpus": 1024, "gpu_type": "h100"})
    assert (r.status, r.rule, r.targets) == ("unplaced", "large_training", ())
    assert any("nodes" in reason and "needed" in reason for reason in r.reasons), r.reasons


def test_the_fleet_plan_keeps_training_off_kubernetes_prod(router_plan: router.Plan) -> None:
    training = [p for p in router_plan.placements if p.workload.kind == "training"]
    assert training
    assert all(p.cluster != "k8s-prod" for p in training)
    big = [p for p in training if p.workload.gpus >= 8]
    assert big and all(p.backend == "slurm" and p.options.get("exclusive") for p in big)
