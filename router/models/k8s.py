"""What a workload asks of Kubernetes beyond resources: the `kubernetes:` mapping of a workload.

```yaml
kubernetes:
  service_account: trainer              # serviceAccountName (its token is then mounted)
  image_pull_secrets: [regcred]
  run_as_user: 1000                      # the UID pods run as (default 65532, non-root)
  volumes:                               # exactly one of pvc, secret, config_map each
    - {pvc: datasets, mount: /data, read_only: true}
    - {secret: hf-token, mount: /etc/hf}
    - {config_map: train-config, mount: /etc/train}
  secret_env:                            # env from secrets: VAR -> {secret, key}
    HF_TOKEN: {secret: hf-token, key: token}
  probe: {path: /healthz, startup: 10min}  # HTTP probes (else TCP on the port)
  shm: 16GiB                             # /dev/shm size (default: half the pod's memory, GPU work)
  storage: {size: 20GiB, path: /home/jovyan, class: standard-rwo}   # a notebook's own PVC
```

Only Kubernetes reads these (router/emit/k8s); a Slurm placement ignores them. Every name is
checked here as Kubernetes checks it, so a manifest never carries a name the API server rejects.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from router.errors import did_you_mean
from router.models.fields import Duration, Flag, Frozen, Memory, fail, has_control, need_str, show

DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]+")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HTTP_PATH = re.compile(r"/[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*")
MAX_UID = 2**31 - 1
SHM = "/dev/shm"  # router's own mount for GPU work


def _subdomain(value: Any) -> str:
    text = need_str(value)
    if len(text) > 253 or not DNS_SUBDOMAIN.fullmatch(text):
        raise fail(
            "must be a Kubernetes object name (a DNS-1123 subdomain: lowercase letters, digits,"
            f" '-' and '.', at most 253), got {show(text)}"
        )
    return text


def _secret_key(value: Any) -> str:
    text = need_str(value)
    if len(text) > 253 or not SECRET_KEY.fullmatch(text):
        raise fail(f"must be a secret key (letters, digits, '-', '_' and '.'), got {show(text)}")
    return text


def _env_name(value: Any) -> str:
    text = need_str(value, "a string variable name")
    if len(text) > 255 or not ENV_NAME.fullmatch(text):
        raise fail(f"must be a variable name (letters, digits and '_'), got {show(text)}")
    return text


def _mount(value: Any) -> str:
    text = need_str(value)
    bad = has_control(text)
    if bad:
        raise fail(f"must not contain control characters, found {bad}")
    parts = text.split("/")
    if not text.startswith("/") or text == "/" or ".." in parts or len(text) > 1024:
        raise fail(f"must be an absolute path other than / and without '..', got {show(text)}")
    if text.rstrip("/") == SHM:
        raise fail(f"{SHM} is router's own in-memory volume; set kubernetes.shm to size it")
    return text.rstrip("/")


def _http_path(value: Any) -> str:
    text = need_str(value)
    if len(text) > 1024 or not HTTP_PATH.fullmatch(text):
        raise fail(f"must be an HTTP path starting with / (no spaces), got {show(text)}")
    return text


def _uid(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_UID:
        raise fail(f"must be a non-root UID, a whole number 1..{MAX_UID}, got {show(value)}")
    return value


def _port(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise fail(f"must be a port 1..65535, got {show(value)}")
    return value


Subdomain = Annotated[str, BeforeValidator(_subdomain)]
SecretKeyName = Annotated[str, BeforeValidator(_secret_key)]
EnvName = Annotated[str, BeforeValidator(_env_name)]
MountPath = Annotated[str, BeforeValidator(_mount)]
HttpPath = Annotated[str, BeforeValidator(_http_path)]
Uid = Annotated[int, BeforeValidator(_uid)]
Port = Annotated[int, BeforeValidator(_port)]


def _cross(field: str, message: str) -> PydanticCustomError:
    return PydanticCustomError("router_cross", message, {"field": field})


class SecretRef(Frozen):
    """One key of a Secret, as an environment variable's value."""

    secret: Subdomain
    key: SecretKeyName


class Volume(Frozen):
    """A volume mounted into the workload's container: a PVC, a Secret or a ConfigMap."""

    mount: MountPath = Field(description="absolute path in the container")
    pvc: Subdomain | None = Field(None, description="a PersistentVolumeClaim's name")
    secret: Subdomain | None = Field(None, description="a Secret's name")
    config_map: Subdomain | None = Field(None, description="a ConfigMap's name")
    read_only: Flag = False

    @model_validator(mode="after")
    def _one_source(self) -> Volume:
        given = [k for k in ("pvc", "secret", "config_map") if getattr(self, k) is not None]
        if len(given) != 1:
            raise _cross(
                "mount", f"give exactly one of pvc, secret or config_map, got {len(given)}"
            )
        return self

    @property
    def source(self) -> tuple[str, str]:
        """(kind, name): kind is pvc, secret or config_map."""
        for kind in ("pvc", "secret", "config_map"):
            name = getattr(self, kind)
            if name is not None:
                return kind, name
        raise AssertionError("validated: one source")


class Probe(Frozen):
    """Health checks of a service or notebook: HTTP GET `path` when given, else a TCP connect."""

    path: HttpPath | None = None
    port: Port | None = Field(None, description="default: the workload's port")
    startup: Duration = Field(600, description="how long starting may take; input 10min")


class Storage(Frozen):
    """A notebook's own PersistentVolumeClaim, kept across restarts."""

    size: Memory = Field(description='input "20GiB"')
    path: MountPath = "/home/jovyan"
    storage_class: Subdomain | None = Field(None, alias="class")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class KubernetesSpec(Frozen):
    """The `kubernetes:` mapping of a workload."""

    service_account: Subdomain | None = None
    image_pull_secrets: list[Subdomain] = Field(default_factory=list)
    run_as_user: Uid | None = Field(None, description="default 65532 (non-root)")
    volumes: list[Volume] = Field(default_factory=list)
    secret_env: dict[EnvName, SecretRef] = Field(default_factory=dict)
    probe: Probe | None = None
    shm: Memory | None = Field(None, description="/dev/shm size; input 16GiB")
    storage: Storage | None = None

    @model_validator(mode="after")
    def _distinct_mounts(self) -> KubernetesSpec:
        mounts = [v.mount for v in self.volumes]
        if self.storage is not None:
            mounts.append(self.storage.path)
        for path in mounts:
            if mounts.count(path) > 1:
                raise _cross("volumes", f"two volumes are mounted at {path}")
        return self


PRIORITY_NAMES = ("low", "normal", "high", "critical")


def _priority_name(value: Any) -> str:
    text = need_str(value)
    if text not in PRIORITY_NAMES:
        hint = did_you_mean(text, PRIORITY_NAMES)
        raise fail(
            f"must be one of {', '.join(PRIORITY_NAMES)}, got {show(text)}"
            + (f"; {hint}" if hint else "")
        )
    return text


class KubernetesCluster(Frozen):
    """The `kubernetes:` mapping of a Kubernetes cluster in the inventory.

    `priority_classes` maps a workload's priority to the PriorityClass its pods get:
    `{low: batch-low, normal: default-priority, high: prod-high, critical: system-critical}`.
    A numeric priority takes the class of the highest name at or below it; a priority below
    every named one, or a cluster without the table, gets no priorityClassName (the cluster's
    global default applies). A rule's `priority_class` option wins over the table.
    """

    priority_classes: dict[Annotated[str, BeforeValidator(_priority_name)], Subdomain] = Field(
        default_factory=dict
    )
