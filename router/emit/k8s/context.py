"""What every object of one placement shares: names, namespace, labels and resolved options.

Labels. Every object carries the common labels (workload, managed-by, team, rule, router
version) on its own metadata, so `kubectl get -l app.kubernetes.io/managed-by=router` or a
GitOps tool's prune finds exactly what a plan wrote, and each file is complete on its own (no
kustomize `labels:` transformer needed; see kubernetes.py). Pod templates carry fewer: the
workload, managed-by and team labels plus the workload's own labels. The rule and the router
version stay off pod templates on purpose: a label change in a Deployment's template rolls
every pod, and neither a new router release nor a renamed rule should restart a service.
Selectors use only the workload and managed-by labels, which never change for a workload, since
a Deployment's selector is immutable.

Namespace: the rule's `namespace` option, else the node pool's, else the team name. By
default router emits no Namespace objects: namespaces, with their quotas, RBAC and Kueue
LocalQueues, are the platform's. With router.yaml's `kubernetes: {create_namespaces: true}`
each cluster's folder creates the ones its workloads use, marked so that GitOps prune never
deletes one when a plan drops its last workload (router/emit/kubernetes.py).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from router.emit.k8s.names import DNS_LABEL, LABEL_VALUE, dns_label, label_value
from router.errors import PlanError
from router.models import NodePool, Workload
from router.models.placement import Placement, Resources

NAME = "app.kubernetes.io/name"
MANAGED_BY = "app.kubernetes.io/managed-by"
TEAM = "router.dev/team"
RULE = "router.dev/rule"
VERSION = "router.dev/version"
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"

DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@cache
def router_version() -> str:
    """router.__version__ when the package defines it, else the installed distribution's."""
    version = getattr(importlib.import_module("router"), "__version__", None)
    if isinstance(version, str):
        return version
    try:
        return importlib.metadata.version("router")
    except importlib.metadata.PackageNotFoundError:
        return "0.1.0"


@dataclass(frozen=True)
class Ctx:
    """One placement, seen from Kubernetes."""

    placement: Placement
    workload: Workload
    pool: NodePool
    namespace: str
    labels: dict[str, str]
    pod_labels: dict[str, str]
    selector: dict[str, str]

    @property
    def name(self) -> str:
        return self.workload.name

    @property
    def resources(self) -> Resources:
        return self.placement.resources

    @property
    def options(self) -> dict[str, Any]:
        return self.placement.options

    def meta(
        self,
        name: str,
        extra: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Object metadata: name, namespace and the common labels (plus `extra`)."""
        out: dict[str, Any] = {
            "name": name,
            "namespace": self.namespace,
            "labels": {**self.labels, **(extra or {})},
        }
        if annotations:
            out["annotations"] = dict(annotations)
        return out

    def call_args(self, key: str) -> dict[str, Any]:
        """The arguments of a call option such as hpa(...) or pdb(...); {} when written bare."""
        value = self.options.get(key)
        return dict(value) if isinstance(value, dict) else {}

    def error(self, message: str) -> PlanError:
        """An error located at the rule that chose these options."""
        path, _, line = self.placement.rule_source.rpartition(":")
        if path and line.isdigit():
            return PlanError(message, path=path, line=int(line))
        return PlanError(message, path=self.placement.rule_source or None)

    def name_option(self, key: str) -> str | None:
        """A string option that Kubernetes uses as a name, checked so the manifest is valid."""
        value = self.options.get(key)
        if value is None:
            return None
        text = str(value)
        if key == "namespace":
            ok = len(text) <= 63 and DNS_LABEL.fullmatch(text) is not None
            what = "a DNS-1123 label (lowercase letters, digits and '-', at most 63)"
        elif key == "queue":  # a Kueue queue name is also a label value
            ok = len(text) <= 63 and LABEL_VALUE.fullmatch(text) is not None
            what = "a queue name usable as a label value (at most 63 characters)"
        else:
            ok = len(text) <= 253 and DNS_SUBDOMAIN.fullmatch(text) is not None
            what = "a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')"
        if not ok:
            raise self.error(f'option {key} = "{text}" must be {what} for workload {self.name}')
        return text


def context(p: Placement) -> Ctx:
    """The shared view of placement `p` on a Kubernetes node pool."""
    pool = p.target.target
    if not isinstance(pool, NodePool):
        raise PlanError(f"workload {p.workload.name}: {p.target.id} is not a Kubernetes node pool")
    w = p.workload
    selector = {NAME: w.name, MANAGED_BY: "router"}
    labels = {
        **selector,
        TEAM: label_value(w.team),
        RULE: label_value(p.rule),
        VERSION: label_value(router_version()),
    }
    # The workload's own labels first, so they can never break the selector.
    pod_labels = {**dict(sorted(w.labels.items())), **selector, TEAM: labels[TEAM]}
    ctx = Ctx(p, w, pool, "", labels, pod_labels, selector)
    namespace = ctx.name_option("namespace") or pool.namespace or dns_label(w.team)
    return replace(ctx, namespace=namespace)
