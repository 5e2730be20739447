"""Which pool a Kubernetes node is in: the provider's pool label, else a fallback.

Each node is grouped by the first provider pool label it carries (`POOL_LABELS`): an EKS
cluster with managed node groups and Karpenter has both kinds of node, and each kind's label
selects only its own nodes, so the pools never overlap. `--pool-label` names one label for all.

A cluster whose nodes carry none of them (k3s, RKE2, kubeadm, OpenShift without machine-set
labels) falls back to node roles: a node with a role label other than the control plane's
(`node-role.kubernetes.io/worker`, `.../infra`) is in that role's pool, selected by that label;
the rest are grouped by `node.kubernetes.io/instance-type` (k3s and RKE2 set it to k3s / rke2,
clouds to the machine type) or, without it, `kubernetes.io/os`. Nodes without any of these
are left out, and an error names every label that was tried when no node has one.
"""

from __future__ import annotations

from router.errors import LoadError
from router.importers.kubernetes.nodes import Node

POOL_LABELS: tuple[tuple[str, str], ...] = (
    ("router.dev/pool", "router"),
    ("karpenter.sh/nodepool", "Karpenter"),
    ("karpenter.sh/provisioner-name", "Karpenter before v1beta1"),
    ("eks.amazonaws.com/nodegroup", "EKS managed node group"),
    ("alpha.eksctl.io/nodegroup-name", "eksctl node group"),
    ("cloud.google.com/gke-nodepool", "GKE"),
    ("kubernetes.azure.com/agentpool", "AKS"),
    ("agentpool", "AKS"),
    ("doks.digitalocean.com/node-pool", "DigitalOcean"),
    ("machine.openshift.io/cluster-api-machineset", "OpenShift machine set"),
    ("cluster.x-k8s.io/deployment-name", "Cluster API machine deployment"),
)
ROLE = "node-role.kubernetes.io/"
CONTROL_ROLES = frozenset({"control-plane", "master", "etcd"})
FALLBACK_LABELS = ("node.kubernetes.io/instance-type", "kubernetes.io/os")


def tried() -> str:
    return ", ".join([k for k, _ in POOL_LABELS] + [ROLE + "<role>", *FALLBACK_LABELS])


def pool_keys(nodes: list[Node], pool_label: str | None) -> tuple[dict[str, tuple[str, str]], str]:
    """node name → (label, value) of its pool, and a sentence saying how pools were found.
    Nodes missing from the result are left out by the caller (they have no pool label)."""
    if pool_label:
        keys = {n.name: (pool_label, n.labels[pool_label]) for n in nodes if pool_label in n.labels}
        if not keys:
            raise LoadError(
                f"no node has the label {pool_label}",
                hint=f"labels router knows for pools: {tried()}",
            )
        return keys, f"by the label {pool_label} (--pool-label)"
    keys = {}
    used: dict[str, str] = {}
    for n in nodes:
        for label, provider in POOL_LABELS:
            if label in n.labels:
                keys[n.name] = (label, n.labels[label])
                used[label] = provider
                break
    if keys:
        how = ", ".join(f"{label} ({provider})" for label, provider in sorted(used.items()))
        return keys, f"by the provider's pool label: {how}"
    for n in nodes:
        roles = sorted(
            k
            for k in n.labels
            if k.startswith(ROLE) and k[len(ROLE) :] not in CONTROL_ROLES and k[len(ROLE) :]
        )
        if roles:
            keys[n.name] = (roles[0], n.labels[roles[0]])
            continue
        for label in FALLBACK_LABELS:
            if n.labels.get(label):
                keys[n.name] = (label, n.labels[label])
                break
    if not keys:
        raise LoadError(
            f"no node carries a pool label (tried {tried()})",
            hint="name the label that groups nodes into pools with --pool-label KEY",
        )
    return keys, (
        "by node role, else node.kubernetes.io/instance-type or kubernetes.io/os (no node has "
        "a provider pool label)"
    )
