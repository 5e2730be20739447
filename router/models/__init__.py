"""The data users write: workloads and the inventory of clusters, and their loaders."""

from router.models.inventory import Cluster, Inventory, NodePool, Partition, Taint, TargetRef
from router.models.loader import load_inventory, load_workloads
from router.models.placement import Placement, Resources
from router.models.workload import Replicas, Workload

__all__ = [
    "Cluster",
    "Inventory",
    "NodePool",
    "Partition",
    "Placement",
    "Replicas",
    "Resources",
    "Taint",
    "TargetRef",
    "Workload",
    "load_inventory",
    "load_workloads",
]
