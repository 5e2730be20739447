"""Pod Security: pods that a namespace enforcing `restricted` admits, unless a rule opts out.

Default (`restricted`, the Pod Security Standard): the pod runs as a non-root UID (65532, the
distroless "nonroot" user, or the workload's `kubernetes.run_as_user`) with the same group and
fsGroup (so volumes are writable), seccomp RuntimeDefault, and its container has
allowPrivilegeEscalation false and drops ALL capabilities. An image built to run as root then
runs as that UID, which is what `restricted` means.

Opt-out, per rule: `pod_security = "baseline"` for images that must run as their own (root)
user, such as MPI launchers that start sshd. The pod keeps seccomp RuntimeDefault and no
privilege escalation, and runs as the image's user with the runtime's default capabilities.
Such pods carry `checkov.io/skip<N>` annotations naming the rule, so a platform's checkov run
says why they differ from the rest rather than failing. A namespace router creates gets the
least strict level its workloads need (router.emit.kubernetes).
"""

from __future__ import annotations

from typing import Any

from router.emit.k8s.context import Ctx

RESTRICTED = "restricted"
BASELINE = "baseline"
NONROOT_UID = 65532
SECCOMP = {"type": "RuntimeDefault"}

# checkov checks a baseline pod fails on purpose: root user, UID, capabilities, NET_RAW.
BASELINE_SKIPS = ("CKV_K8S_23", "CKV_K8S_40", "CKV_K8S_37", "CKV_K8S_28")


def level(ctx: Ctx) -> str:
    return str(ctx.options.get("pod_security", RESTRICTED))


def pod_context(ctx: Ctx) -> dict[str, Any]:
    if level(ctx) != RESTRICTED:
        return {"seccompProfile": dict(SECCOMP)}
    uid = ctx.workload.kubernetes.run_as_user or NONROOT_UID
    return {
        "runAsNonRoot": True,
        "runAsUser": uid,
        "runAsGroup": uid,
        "fsGroup": uid,
        "seccompProfile": dict(SECCOMP),
    }


def container_context(ctx: Ctx) -> dict[str, Any]:
    if level(ctx) != RESTRICTED:
        return {"allowPrivilegeEscalation": False}
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
    }


def skips(ctx: Ctx, *, probed: bool) -> dict[str, str]:
    """checkov skip annotations for what this workload asked for on purpose, with the reason."""
    why: list[tuple[str, str]] = []
    if level(ctx) != RESTRICTED:
        # No "=" in a reason: checkov splits the annotation on it.
        reason = f"rule {ctx.placement.rule} opts out of restricted (pod_security {level(ctx)})"
        why += [(check, reason) for check in BASELINE_SKIPS]
    k = ctx.workload.kubernetes
    if k.service_account:
        why.append(("CKV_K8S_38", f"the workload runs as service account {k.service_account}"))
    if k.secret_env:
        why.append(("CKV_K8S_35", "the workload asks for secrets in its environment"))
    if not probed and ctx.workload.is_service:
        why += [(c, "the service has no port to probe") for c in ("CKV_K8S_8", "CKV_K8S_9")]
    return {f"checkov.io/skip{i}": f"{check}={reason}" for i, (check, reason) in enumerate(why, 1)}
