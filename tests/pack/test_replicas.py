"""One replicas rule: the workload's replicas bound the HPA, hpa(min, max) clamps them, and
the table, plan.json, quotas and manifests all carry the same numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from router.cli.main import cli
from router.evaluate.shape import replica_range
from router.models import Workload
from tests.helpers import make_project


def svc(replicas: Any = None, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": "chat",
        "kind": "inference",
        "gpus": 1,
        "gpu_type": "l4",
        "cpus": 4,
        "memory": "16GiB",
        "image": "ghcr.io/acme/chat:1.0",
        "team": "web",
    }
    if replicas is not None:
        out["replicas"] = replicas
    return out | fields


@pytest.mark.parametrize(
    ("replicas", "hpa", "want"),
    [
        ({"min": 3, "max": 12}, {"min": 2, "max": 20}, (3, 12)),  # the case
        ({"min": 3, "max": 12}, {"min": 5, "max": 8}, (5, 8)),  # platform limits clamp
        ({"min": 3, "max": 12}, {}, (3, 12)),  # bare `with hpa`
        ({"min": 0, "max": 4}, {}, (1, 4)),  # an HPA runs at least one replica
        (None, {"min": 2, "max": 20}, (2, 20)),  # no replicas: hpa's are the defaults
        (None, {"min": 2}, (2, 2)),
        (None, {}, (1, 1)),
    ],
)
def test_replica_range(replicas: Any, hpa: dict[str, int], want: tuple[int, int]) -> None:
    assert replica_range(Workload.model_validate(svc(replicas)), {"hpa": hpa}) == want


def test_without_hpa_the_workload_decides() -> None:
    w = Workload.model_validate(svc({"min": 0, "max": 4}))
    assert replica_range(w, {"queue": "q"}) == (0, 4)


def test_an_empty_range_is_a_reason() -> None:
    w = Workload.model_validate(svc({"min": 3, "max": 12}))
    reason = replica_range(w, {"hpa": {"min": 15, "max": 20}})
    assert reason == (
        "replicas 3-12 and the rule's hpa(min = 15, max = 20) leave no replica "
        "count: min 15 > max 12 (hpa clamps the workload's replicas, never "
        "widens them)"
    )


POLICY = """
policy replicas
rule serve: when kind == "inference" route kubernetes with hpa(min = 2, max = 20, cpu = 70%)
quota web_gpus:
  for team == "web"
  limit gpus <= 3
"""

INVENTORY = {
    "clusters": [
        {
            "name": "k8s",
            "backend": "kubernetes",
            "node_pools": [
                {
                    "name": "l4",
                    "nodes": 4,
                    "gpus_per_node": 4,
                    "gpu_type": "l4",
                    "cpus_per_node": 48,
                    "memory_per_node": "192GiB",
                }
            ],
        }
    ]
}


def plan(
    tmp_path: Path, workloads: list[dict[str, Any]], policy: str = POLICY
) -> tuple[int, str, dict[str, Any], Path]:
    root = make_project(tmp_path / "p", workloads, policy, INVENTORY)
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["plan", str(root), "--out", str(out), "--format", "text"])
    doc = json.loads((out / "plan.json").read_text())
    return r.exit_code, r.output, doc, out


def test_table_plan_quota_and_manifests_agree(tmp_path: Path) -> None:
    code, text, doc, out = plan(tmp_path, [svc({"min": 3, "max": 12})])
    assert code == 0, text
    (p,) = doc["placements"]
    assert p["resources"]["replicas"] == {"min": 3, "max": 12}
    assert "3-12× 1 l4" in text
    assert p["resources"]["gpus"] == 3  # capacity and quotas count the min: 3 of 3 allowed
    docs = list(yaml.safe_load_all((out / "kubernetes" / "k8s" / "chat.yaml").read_text()))
    (hpa,) = [d for d in docs if d["kind"] == "HorizontalPodAutoscaler"]
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (3, 12)


def test_hpa_min_above_quota_keeps_it_out(tmp_path: Path) -> None:
    # hpa(min = 2) raises replicas {min: 1, ...} to 2; the quota (3 GPUs) counts 2 per service.
    code, text, doc, _ = plan(
        tmp_path, [svc({"min": 1, "max": 4}, name="a"), svc({"min": 1, "max": 4}, name="b")]
    )
    assert code == 3, text
    assert [p["resources"]["replicas"]["min"] for p in doc["placements"]] == [2]
    (u,) = doc["unplaced"]
    assert any("quota web_gpus" in r for r in u["reasons"]), u


def test_empty_range_is_unplaced_with_the_reason(tmp_path: Path) -> None:
    policy = POLICY.replace("hpa(min = 2, max = 20", "hpa(min = 15, max = 20")
    code, text, doc, _ = plan(tmp_path, [svc({"min": 3, "max": 12})], policy)
    assert code == 3
    (u,) = doc["unplaced"]
    assert any("leave no replica count: min 15 > max 12" in r for r in u["reasons"]), u
    assert "leave no replica count" in text


def test_scale_out_to_max_is_reported_not_blocking(tmp_path: Path) -> None:
    # 4 nodes x 4 L4: min 2 replicas fit, max 40 one-GPU replicas need 10 nodes, 6 more.
    code, text, doc, _ = plan(
        tmp_path,
        [svc({"min": 2, "max": 40})],
        POLICY.replace("limit gpus <= 3", "limit gpus <= 64"),
    )
    assert code == 0, text
    assert doc["placements"][0]["resources"]["replicas"] == {"min": 2, "max": 20}  # hpa max 20
    # hpa(max = 20) bounds the workload's 40: 20 one-GPU replicas on 4-GPU nodes, 5 nodes.
    assert doc["scale_out"] == [
        {
            "more_nodes": 1,
            "more_nodes_least": 1,
            "replicas_max": 20,
            "replicas_min": 2,
            "services": 1,
            "target_id": "k8s/l4",
        }
    ]
    assert (
        "scale-out to max: k8s/l4 needs 1 more node (has 4, 1 service at 20 replicas, planned at 2)"
        in text
    )
    r = CliRunner().invoke(
        cli, ["plan", str(tmp_path / "p"), "--out", str(tmp_path / "o2"), "--format", "markdown"]
    )
    assert "- scale-out to max: k8s/l4 needs 1 more node" in r.output


def test_scale_out_says_the_nodes_it_counts_with_an_autoscaler_ceiling(tmp_path: Path) -> None:
    # max_nodes 6 on the 4-node pool: capacity counts 6; 20 replicas need 5 nodes, none more,
    # and 40 (hpa max 40) need 10: 4 beyond the ceiling, said as "has 6", not as beyond the 4.
    inventory = json.loads(json.dumps(INVENTORY))
    inventory["clusters"][0]["node_pools"][0]["max_nodes"] = 6
    policy = POLICY.replace("limit gpus <= 3", "limit gpus <= 64").replace("max = 20", "max = 40")
    root = make_project(tmp_path / "p", [svc({"min": 2, "max": 40})], policy, inventory)
    r = CliRunner().invoke(cli, ["plan", str(root), "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert "k8s/l4 needs 4 more nodes (has 6, 1 service at 40 replicas, planned at 2)" in r.output


def test_no_scale_out_field_without_scaling_services(tmp_path: Path) -> None:
    code, text, doc, _ = plan(tmp_path, [svc({"min": 3, "max": 3})])
    assert code == 0, text
    assert "scale_out" not in doc and "scale-out" not in text
