"""The data users write: workloads and the inventory of clusters, and their loaders."""

from router.models.capacity import NodeClass, NodeShape, node_classes
from router.models.inventory import (
    Cluster,
    Inventory,
    MigGroup,
    NodePool,
    NodeSet,
    NodeSetRef,
    NodeSpec,
    Partition,
    Taint,
    TargetRef,
)
from router.models.loader import load_inventory, load_running, load_workloads
from router.models.placement import Placement, Resources
from router.models.running import Running, RunningItem
from router.models.workload import Replicas, Workload

__all__ = [
    "Cluster",
    "Inventory",
    "MigGroup",
    "NodeClass",
    "NodePool",
    "NodeSet",
    "NodeSetRef",
    "NodeShape",
    "NodeSpec",
    "Partition",
    "Placement",
    "Replicas",
    "Resources",
    "Running",
    "RunningItem",
    "Taint",
    "TargetRef",
    "Workload",
    "load_inventory",
    "load_running",
    "load_workloads",
    "node_classes",
]
