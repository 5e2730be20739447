"""router.yaml: which policy, inventory and workloads make up a platform, and where out/ is.

Besides the paths, one setting for each emitter:

```yaml
kubernetes:
  create_namespaces: true   # a Namespace object per namespace used, in each cluster's kustomization
slurm:
  log_dir: /shared/logs     # where jobs write %x-%j.out/.err; a cluster's own slurm.log_dir wins
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from router.errors import LoadError, Source

if TYPE_CHECKING:
    from yaml.nodes import Node

CONFIG_NAME = "router.yaml"
DEFAULTS = {
    "policy": "policies",
    "inventory": "inventory.yaml",
    "workloads": "workloads",
    "out": "out",
}


KUBERNETES_KEYS = ("create_namespaces",)


@dataclass(frozen=True)
class KubernetesSettings:
    """router.yaml's `kubernetes:` mapping. Off by default: namespaces, with their quotas and
    RBAC, are usually the platform's; on, each cluster's kustomization creates those its
    workloads use (labelled with the Pod Security level they need)."""

    create_namespaces: bool = False


SLURM_KEYS = ("log_dir",)


@dataclass(frozen=True)
class SlurmDefaults:
    """router.yaml's `slurm:` mapping: settings for every Slurm cluster of the inventory that
    does not set its own (`slurm.log_dir` in inventory.yaml wins)."""

    log_dir: str | None = None


@dataclass(frozen=True)
class Project:
    root: Path  # the folder holding router.yaml (or the current one)
    policy: Path
    inventory: Path
    workloads: Path
    out: Path
    running: Path | None = None  # what already runs on the nodes (optional)
    kubernetes: KubernetesSettings = field(default_factory=KubernetesSettings)
    slurm: SlurmDefaults = field(default_factory=SlurmDefaults)

    def relative(self, path: str | Path) -> str:
        """A path as plan.json shows it: relative to the project, with forward slashes."""
        p = Path(path).resolve()
        try:
            return p.relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return Path(path).as_posix()


def load_project(
    directory: str | Path = ".",
    *,
    policy: str | Path | None = None,
    inventory: str | Path | None = None,
    workloads: str | Path | None = None,
    out: str | Path | None = None,
    running: str | Path | None = None,
) -> Project:
    """Read DIR/router.yaml (optional when every part is given) and apply overrides.

    Paths in router.yaml are relative to its folder; overrides are as the user typed them.
    """
    root = Path(directory)
    if not root.is_dir():
        raise LoadError(f"{root} is not a folder", path=str(root))
    config_path = root / CONFIG_NAME
    values: dict[str, str] = {}
    kubernetes = KubernetesSettings()
    slurm = SlurmDefaults()
    if config_path.exists():
        values, kubernetes, slurm = _read_config(config_path)
    elif not (policy and inventory and workloads):
        raise LoadError(
            f"no {CONFIG_NAME} in {root}: give -p/--policy, -i/--inventory and -w/--workloads",
            path=str(config_path),
        )

    def pick(key: str, override: str | Path | None) -> Path:
        if override is not None:
            return Path(override)
        return root / values.get(key, DEFAULTS[key])

    return Project(
        root=root,
        policy=pick("policy", policy),
        inventory=pick("inventory", inventory),
        workloads=pick("workloads", workloads),
        out=pick("out", out),
        running=Path(running)
        if running is not None
        else (root / values["running"] if "running" in values else None),
        kubernetes=kubernetes,
        slurm=slurm,
    )


def _kubernetes(value: Any, source: Source, node: Node) -> KubernetesSettings:
    """router.yaml's `kubernetes:` mapping (`node`), checked key by key; errors at the key or
    value."""
    from router.errors import did_you_mean
    from router.models.yamlsource import locate, span

    if value is None:
        return KubernetesSettings()
    if not isinstance(value, dict):
        raise LoadError(
            f"kubernetes: expected a mapping such as {{create_namespaces: true}}, got {value!r}",
            span(source, node),
        )
    for key, item in value.items():
        key_node, value_node = locate(node, (key,))
        if key not in KUBERNETES_KEYS:
            raise LoadError(
                f'kubernetes: unknown key "{key}" (expected create_namespaces)',
                span(source, key_node or value_node),
                hint=did_you_mean(str(key), KUBERNETES_KEYS),
            )
        if not isinstance(item, bool):
            raise LoadError(
                f"kubernetes.{key}: expected true or false, got {item!r}",
                span(source, value_node),
            )
    return KubernetesSettings(create_namespaces=bool(value.get("create_namespaces", False)))


def _slurm(value: Any, path: str, text: str) -> SlurmDefaults:
    """router.yaml's `slurm:` mapping; errors point at the offending key or value."""
    from router.errors import Source, did_you_mean
    from router.models.run import AbsPath
    from router.models.yamlsource import compose, locate, span

    def fail(where: tuple[str, ...], message: str, hint: str | None = None,
             at_key: bool = False) -> LoadError:  # fmt: skip
        source = Source(path, text)
        roots = compose(source)
        if not roots:
            return LoadError(message, path=path, line=_line_of(text, "slurm"), hint=hint)
        key, node = locate(roots[0], where)
        return LoadError(message, span(source, key if at_key and key else node), hint=hint)

    if value is None:
        return SlurmDefaults()
    if not isinstance(value, dict):
        raise fail(("slurm",), f"slurm: expected a mapping such as {{log_dir: /abs/path}}, "
                   f"got {value!r}")  # fmt: skip
    for key in value:
        if key not in SLURM_KEYS:
            message = f'slurm: unknown key "{key}" (expected log_dir)'
            raise fail(("slurm", str(key)), message, did_you_mean(str(key), SLURM_KEYS), True)
    log_dir = value.get("log_dir")
    if log_dir is not None:
        from pydantic import TypeAdapter, ValidationError

        try:
            log_dir = TypeAdapter(AbsPath).validate_python(log_dir)
        except ValidationError as e:
            why = e.errors()[0]["msg"].removeprefix("Value error, ")
            raise fail(("slurm", "log_dir"), f"slurm.log_dir: {why}") from None
    return SlurmDefaults(log_dir=log_dir)


def _line_of(text: str, key: object) -> int | None:
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith(f"{key}:"):
            return n
    return None


def _read_config(path: Path) -> tuple[dict[str, str], KubernetesSettings, SlurmDefaults]:
    """The keys of router.yaml; a LoadError at the line and column of what is wrong (read with
    the loader's YAML reader: positions, duplicate keys, its limits)."""
    from router.errors import RouterError, did_you_mean
    from router.models.yamlsource import Builder, compose, locate, read_source, span

    source = read_source(path, str(path))
    docs = compose(source)
    if len(docs) > 1:
        raise LoadError(f"{CONFIG_NAME} holds one YAML document, this one {len(docs)}",
                        span(source, docs[1]))  # fmt: skip
    if not docs:
        return {}, KubernetesSettings(), SlurmDefaults()
    builder = Builder(source)
    data = builder.value(docs[0])
    if builder.errors:
        first: RouterError = builder.errors[0]
        raise first
    if not isinstance(data, dict):
        raise LoadError("expected a mapping of policy, inventory, workloads, out",
                        span(source, docs[0]))  # fmt: skip
    values: dict[str, str] = {}
    kubernetes = KubernetesSettings()
    slurm = SlurmDefaults()
    for key, value in data.items():
        key_node, value_node = locate(docs[0], (key,))
        if key == "slurm":
            slurm = _slurm(value, str(path), source.text)
            continue
        if key == "kubernetes":
            kubernetes = _kubernetes(value, source, value_node)
            continue
        if key not in (*DEFAULTS, "version", "running"):
            raise LoadError(
                f'unknown key "{key}" (expected policy, inventory, workloads, running, out'
                ", kubernetes or slurm)",
                span(source, key_node or value_node),
                hint=did_you_mean(str(key), [*DEFAULTS, "running", "kubernetes", "slurm"]),
            )
        if key != "version" and not isinstance(value, str):
            shown = (
                value
                if isinstance(value, (int, float, bool)) or value is None
                else "a " + ("mapping" if isinstance(value, dict) else "list")
            )
            raise LoadError(f"{key}: expected a path, got {shown}", span(source, value_node))
        if key != "version":
            values[key] = value
    return values, kubernetes, slurm
