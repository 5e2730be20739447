"""Kubernetes → inventory: `kubectl get nodes -o json` → one cluster of node pools.

Pure: the caller runs kubectl (or reads a saved copy). nodes.py decides which nodes are usable
and what each has; providers.py which pool each is in (GKE, EKS managed node groups and
Karpenter, AKS, DigitalOcean, OpenShift, Cluster API, then node-role / instance-type fallbacks
for k3s, RKE2 and kubeadm); pools.py turns each pool into targets with exact node selectors.
Every node left out is one line ("gpu-7: not Ready (KubeletNotReady), left out").
Not in a node list, so not imported: the autoscaler's ceiling (max_nodes), costs, namespaces.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from router.errors import LoadError
from router.importers import ImportedCluster, ImportedTarget, render_inventory
from router.importers.gpu import gpu_type_of
from router.importers.kubernetes.nodes import Node, parse_node
from router.importers.kubernetes.pools import DNS_LABEL, LABEL_VALUE, pool_name, pools_of
from router.importers.kubernetes.providers import POOL_LABELS, pool_keys
from router.importers.kubernetes.quantity import parse_quantity

__all__ = [
    "POOL_LABELS",
    "gpu_type_of",
    "import_cluster",
    "import_nodes",
    "parse_quantity",
    "pool_name",
]


def _items(data: Any) -> list[Any]:
    if isinstance(data, dict) and data.get("kind") == "Node":
        return [data]
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise LoadError(
            "expected the output of `kubectl get nodes -o json` (a mapping with an "
            '"items" list of Node objects)'
        )
    return list(data["items"])


def import_cluster(
    data: Any, pool_label: str | None = None, cluster: str = "kubernetes"
) -> ImportedCluster:
    """The inventory cluster for `kubectl get nodes -o json` output, with notes."""
    if not DNS_LABEL.fullmatch(cluster):
        raise LoadError(
            f"cluster name {cluster!r} is not a DNS-1123 label",
            hint="name the cluster with --cluster NAME (e.g. gke-prod)",
        )
    nodes = [parse_node(raw) for raw in _items(data)]
    if not nodes:
        raise LoadError("the node list is empty")
    exclusions = [
        f"{n.name}: {n.problem}, left out" for n in sorted(nodes, key=lambda n: n.name) if n.problem
    ]
    usable = [n for n in nodes if not n.problem]
    keys, how = pool_keys(usable or nodes, pool_label)
    groups: dict[tuple[str, str], list[Node]] = defaultdict(list)
    notes: list[str] = []
    for n in sorted(usable, key=lambda n: n.name):
        key = keys.get(n.name)
        if key is None:
            exclusions.append(
                f"{n.name}: no pool label (other nodes have one; none selects "
                "this node apart from them), left out"
            )
        elif not LABEL_VALUE.fullmatch(key[1]):
            exclusions.append(
                f"{n.name}: pool label {key[0]}={key[1]!r} is not a valid label value, left out"
            )
        else:
            groups[key].append(n)
    targets: list[ImportedTarget] = []
    taken: set[str] = set()
    for (label, value), members in sorted(groups.items()):
        targets += pools_of(label, value, members, taken)
    if not targets:
        raise LoadError(
            "no node pool could be imported: " + ("; ".join(exclusions[:5]) or "no usable nodes")
        )
    header = [
        f'Inventory of Kubernetes cluster "{cluster}", imported by `router inventory import '
        "kubernetes`",
        f"from `kubectl get nodes -o json`: {len(nodes)} nodes, {len(usable)} usable, "
        f"grouped into pools {how}.",
        "Usable nodes only: not Ready, cordoned, control-plane and lifecycle-tainted nodes are "
        "left out (listed below). A node list does not say the autoscaler's ceiling, costs or "
        "namespaces: add max_nodes, cost_per_gpu_hour and namespace here (a new import writes "
        "the file afresh).",
    ]
    return ImportedCluster(cluster, "kubernetes", targets, header, notes, [], exclusions)


def import_nodes(
    data: dict[str, Any], pool_label: str | None = None, cluster: str = "kubernetes"
) -> str:
    """Inventory YAML for `kubectl get nodes -o json` output (see the module docstring)."""
    return render_inventory(import_cluster(data, pool_label=pool_label, cluster=cluster))
