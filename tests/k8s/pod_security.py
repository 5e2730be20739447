"""The Pod Security Standards' `restricted` and `baseline` profiles, as checks on a pod spec.

No API server (and so no Pod Security admission) runs here, so the controls are written out
from the standard (https://kubernetes.io/docs/concepts/security/pod-security-standards/,
"Baseline" and "Restricted" tables; the restricted profile includes the baseline one). Only
the controls a pod spec router writes can touch are checked: host namespaces, privileged,
capabilities, hostPath and host ports, /proc mount, seccomp, volume types, privilege
escalation, non-root user and UID 0.
"""

from __future__ import annotations

from typing import Any

BASELINE_CAPS = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip
RESTRICTED_VOLUMES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
    "projected", "secret",
}  # fmt: skip


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec.get("containers", [])]


def baseline_errors(spec: dict[str, Any]) -> list[str]:
    errors = []
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            errors.append(f"{key} is set")
    for v in spec.get("volumes", []):
        if "hostPath" in v:
            errors.append(f"volume {v['name']} is a hostPath")
    pod_sc = spec.get("securityContext", {})
    seccomp = pod_sc.get("seccompProfile", {}).get("type")
    if seccomp == "Unconfined":
        errors.append("pod seccomp is Unconfined")
    for c in _containers(spec):
        sc = c.get("securityContext", {})
        name = c["name"]
        if sc.get("privileged"):
            errors.append(f"{name}: privileged")
        added = set(sc.get("capabilities", {}).get("add", []))
        if added - BASELINE_CAPS:
            errors.append(f"{name}: adds capabilities {sorted(added - BASELINE_CAPS)}")
        if any(p.get("hostPort") for p in c.get("ports", [])):
            errors.append(f"{name}: host port")
        if sc.get("procMount", "Default") != "Default":
            errors.append(f"{name}: procMount")
        if sc.get("seccompProfile", {}).get("type") == "Unconfined":
            errors.append(f"{name}: seccomp Unconfined")
    return errors


def restricted_errors(spec: dict[str, Any]) -> list[str]:
    errors = baseline_errors(spec)
    for v in spec.get("volumes", []):
        kinds = set(v) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            errors.append(f"volume {v['name']}: type {sorted(kinds)} not allowed")
    pod_sc = spec.get("securityContext", {})
    pod_seccomp = pod_sc.get("seccompProfile", {}).get("type")
    if pod_sc.get("runAsUser") == 0:
        errors.append("pod runs as UID 0")
    for c in _containers(spec):
        sc, name = c.get("securityContext", {}), c["name"]
        if sc.get("allowPrivilegeEscalation") is not False:
            errors.append(f"{name}: allowPrivilegeEscalation is not false")
        if not (sc.get("runAsNonRoot") is True or pod_sc.get("runAsNonRoot") is True):
            errors.append(f"{name}: runAsNonRoot is not true")
        if sc.get("runAsNonRoot") is False:
            errors.append(f"{name}: runAsNonRoot is false")
        if sc.get("runAsUser") == 0:
            errors.append(f"{name}: runs as UID 0")
        seccomp = sc.get("seccompProfile", {}).get("type", pod_seccomp)
        if seccomp not in ("RuntimeDefault", "Localhost"):
            errors.append(f"{name}: seccomp is {seccomp}, not RuntimeDefault or Localhost")
        caps = sc.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            errors.append(f"{name}: capabilities do not drop ALL")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            errors.append(f"{name}: adds capabilities other than NET_BIND_SERVICE")
    return errors
