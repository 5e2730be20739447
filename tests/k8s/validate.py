"""Offline, strict validation of the Kubernetes manifests the router emits.

No API server can run here (DESIGN.md, "Real components"), so this stands in for
`kubectl apply --validate=strict`:

* Built-in kinds go through `kubernetes-validate` (the official OpenAPI schemas) in strict mode,
  pinned to `K8S_VERSION`.
* Operator kinds go through `jsonschema`, using the `openAPIV3Schema` of the real CRDs
  in `crds/` (see crds/SOURCES.md). Unknown fields are rejected the way server-side strict field
  validation rejects fields it would prune.
* Every kind also gets its `metadata` checked (name/label syntax), and built-in kinds get their
  resource quantities checked. The OpenAPI schemas check neither, but the API server does.

Not checked: CEL rules (`x-kubernetes-validations`), admission webhooks, and the API server's
own semantic validation (such as the `restartPolicy` of a Job).
An apiVersion/kind with no schema is an error, never a pass.
"""

from __future__ import annotations

import functools
import gc
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

# The oldest minor that has all the batch/v1 Job fields Kueue/JobSet-era emitters use as GA
# (podFailurePolicy 1.31, successPolicy and backoffLimitPerIndex 1.33). Stable APIs only add
# fields, so a manifest that passes here passes on newer clusters too. kubernetes-validate 1.37.0
# ships schemas for 1.25 to 1.37.
K8S_VERSION = "1.33"

CRD_DIR = Path(__file__).parent / "crds"

# The C loader parses the multi-MB CRDs about 10 times faster than the pure-Python one.
_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc]
    """SafeLoader that reads a bare `=` as a string, as Go YAML does (PyYAML fails on it)."""


_Loader.add_constructor(
    "tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node)
)


class KustomizeError(RuntimeError):
    """`kubectl kustomize` failed. The message contains its stderr."""


class _NoSchema(Exception):
    """No schema for this apiVersion/kind: reported as an error, never passed."""


# ---------------------------------------------------------------- names, labels, quantities

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(rf"^{_DNS1123_LABEL}$")
_DNS1123_SUBDOMAIN_RE = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_DNS1035_LABEL_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# The regex from k8s.io/apimachinery resource.Quantity, as the CRDs carry it.
_QUANTITY_RE = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)
_RBAC_KINDS = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})


def _dns_subdomain_error(value: str) -> str | None:
    if len(value) > 253 or not _DNS1123_SUBDOMAIN_RE.match(value):
        return "must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.'; at most 253 characters)"
    return None


def _name_error(kind: str, name: str) -> str | None:
    """The API server's name rule for `kind`; most kinds use a DNS-1123 subdomain."""
    if kind == "Service":
        if len(name) > 63 or not _DNS1035_LABEL_RE.match(name):
            return "a Service name must be an RFC 1035 label (a letter first, a-z0-9-, at most 63)"
        return None
    if kind == "Namespace":
        if len(name) > 63 or not _DNS1123_LABEL_RE.match(name):
            return "a Namespace name must be an RFC 1123 label (a-z0-9-, at most 63)"
        return None
    if kind in _RBAC_KINDS:  # RBAC allows path segments such as "system:foo"
        if name in (".", "..") or "/" in name or "%" in name:
            return "an RBAC name must be a valid path segment"
        return None
    return _dns_subdomain_error(name)


def _qualified_key_error(key: object) -> str | None:
    """Label and annotation keys: optional DNS-subdomain prefix, '/', name of at most 63."""
    if not isinstance(key, str):
        return "key must be a string"
    prefix, _, name = key.rpartition("/")
    if prefix and _dns_subdomain_error(prefix):
        return "key prefix must be a DNS-1123 subdomain"
    if len(name) > 63 or not _QUALIFIED_NAME_RE.match(name):
        return "key name must be at most 63 characters of [A-Za-z0-9_.-], alphanumeric at both ends"
    return None


def _metadata_errors(kind: str, meta: object) -> Iterator[str]:
    if not isinstance(meta, dict):
        yield "metadata: required object is missing"
        return
    for field in sorted(set(meta) - _OBJECT_META_FIELDS):
        yield f"metadata: unknown field {field!r}"
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        # GitOps tools apply by name; generateName only works with `create`.
        yield "metadata.name: required"
    elif err := _name_error(kind, name):
        yield f"metadata.name: {name!r}: {err}"
    namespace = meta.get("namespace")
    if namespace is not None and (
        not isinstance(namespace, str)
        or len(namespace) > 63
        or not _DNS1123_LABEL_RE.match(namespace)
    ):
        yield f"metadata.namespace: {namespace!r}: must be an RFC 1123 label"
    for field in ("labels", "annotations"):
        values = meta.get(field)
        if values is None:
            continue
        if not isinstance(values, dict):
            yield f"metadata.{field}: must be a map of strings"
            continue
        for key, value in values.items():
            if err := _qualified_key_error(key):
                yield f"metadata.{field}.{key}: {err}"
            # YAML `true`/`1` arrive as bool/int; the API server rejects them.
            if not isinstance(value, str):
                yield f"metadata.{field}.{key}: value {value!r} must be a string"
            elif field == "labels" and (len(value) > 63 or not _LABEL_VALUE_RE.match(value)):
                yield (
                    f"metadata.labels.{key}: value {value!r} must be at most 63 characters"
                    " of [A-Za-z0-9_.-], alphanumeric at both ends"
                )


def _quantity_errors(node: object, path: str = "") -> Iterator[str]:
    """Checks `resources.{limits,requests}` anywhere in the object. The built-in OpenAPI schema
    accepts any string as a Quantity, so "64GiB" or "2 cpus" would only fail at apply time."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _quantity_errors(item, f"{path}[{i}]")
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        sub = f"{path}.{key}" if path else str(key)
        if key == "resources" and isinstance(value, dict):
            for bound in ("limits", "requests"):
                amounts = value.get(bound)
                if not isinstance(amounts, dict):
                    continue
                for resource, amount in amounts.items():
                    ok = isinstance(amount, (int, float)) and not isinstance(amount, bool)
                    ok = ok or (isinstance(amount, str) and bool(_QUANTITY_RE.match(amount)))
                    if not ok:
                        yield (
                            f"{sub}.{bound}.{resource}: {amount!r} is not a Kubernetes quantity"
                            " (e.g. 500m, 2, 64Gi, 1G)"
                        )
        yield from _quantity_errors(value, sub)


# ---------------------------------------------------------------- operator CRDs


@functools.cache
def _crd_index() -> dict[tuple[str, str], Path]:
    """(group, kind) -> CRD file. Reads only each file's head, so no multi-MB file is parsed."""
    index: dict[tuple[str, str], Path] = {}
    for path in sorted(CRD_DIR.glob("*.yaml")):
        with path.open(encoding="utf-8") as f:
            head = f.read(4096)
        group = re.search(r"^  group: (\S+)$", head, re.M)
        kind = re.search(r"^    kind: (\S+)$", head, re.M)
        if not (group and kind):
            raise RuntimeError(f"{path}: cannot find spec.group / spec.names.kind in its head")
        index[(group.group(1), kind.group(1))] = path
    return index


def _make_strict(schema: dict[str, Any]) -> None:
    """Rejects unknown fields in place, like server-side `fieldValidation=Strict`: in a structural
    schema every object without `additionalProperties` or `x-kubernetes-preserve-unknown-fields`
    has its unknown fields pruned, and strict validation reports them. Only properties/items/
    additionalProperties are followed; the anyOf branches only hold value checks."""
    is_object = schema.get("type") == "object" or "properties" in schema
    if (
        is_object
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        schema["additionalProperties"] = False
    for sub in schema.get("properties", {}).values():
        _make_strict(sub)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            _make_strict(schema[key])


def _list_map_keys(
    validator: Any, keys: list[str], instance: Any, schema: dict[str, Any]
) -> Iterator[Any]:
    """`x-kubernetes-list-type: map` lists must have unique keys (e.g. container or env names)."""
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(instance, list):
        return
    seen: set[tuple[Any, ...]] = set()
    for item in instance:
        if isinstance(item, dict):
            key = tuple(repr(item.get(k)) for k in keys)
            if key in seen:
                shown = dict(zip(keys, key, strict=True))
                yield jsonschema.ValidationError(f"duplicate entry with {shown} in a list-map")
            seen.add(key)


def _list_type_set(
    validator: Any, list_type: str, instance: Any, schema: dict[str, Any]
) -> Iterator[Any]:
    if list_type == "set" and isinstance(instance, list):
        yield from validator.descend(instance, {"uniqueItems": True})


# OpenAPI v3.0 schemas are closest to draft 4 (e.g. 1.0 is not an integer).
_CrdValidator = jsonschema.validators.extend(
    jsonschema.Draft4Validator,
    {"x-kubernetes-list-map-keys": _list_map_keys, "x-kubernetes-list-type": _list_type_set},
)


@functools.cache
def _crd_validators(path: Path) -> dict[str, tuple[bool, Any]]:
    """Version name -> (served, validator) for one CRD file; each file is parsed once."""
    # The cyclic GC is paused while parsing: the millions of new objects set it off again and
    # again, and that doubles the time for the biggest CRD (KServe, 2 MB: ~0.5 s -> ~0.25 s).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        with path.open(encoding="utf-8") as f:
            crd = next(doc for doc in yaml.load_all(f, Loader=_Loader) if doc)
    finally:
        if gc_was_enabled:
            gc.enable()
    result: dict[str, tuple[bool, Any]] = {}
    for version in crd["spec"]["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        # metadata is `type: object` in every CRD; the API server checks it as ObjectMeta, and so
        # does _metadata_errors.
        schema["properties"]["metadata"] = {}
        _make_strict(schema)
        result[version["name"]] = (bool(version.get("served")), _CrdValidator(schema))
    return result


def _crd_errors(doc: dict[str, Any], group: str, version: str, kind: str) -> list[str] | None:
    """Errors against the matching CRD, or None when no CRD in crds/ defines (group, kind).
    Raises _NoSchema when the CRD does not serve `version`."""
    index = _crd_index()
    path = index.get((group, kind))
    if path is None:
        if any(g == group for g, _ in index):  # else kubernetes-validate's message would mislead
            raise _NoSchema(f"no schema for {group}/{version} {kind}: no CRD for it in {CRD_DIR}")
        return None
    versions = _crd_validators(path)
    served, validator = versions.get(version, (False, None))
    if not served:
        ok = sorted(name for name, (s, _) in versions.items() if s)
        raise _NoSchema(
            f"no schema for {group}/{version} {kind}: {path.name} serves {', '.join(ok)}"
        )
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{_path(e.absolute_path)}: {e.message}" for e in errors]


def _path(parts: Any) -> str:
    return ".".join(str(p) for p in parts) or "<root>"


# ---------------------------------------------------------------- public API


def validate_manifest(doc: dict[str, Any]) -> list[str]:
    """All errors found in one manifest, each prefixed by `apiVersion kind/name`; [] = valid."""
    if not isinstance(doc, dict):
        return [f"manifest must be a mapping, got {type(doc).__name__}"]
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not api_version or not kind:
        return ["apiVersion and kind are required strings"]
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    where = f"{api_version} {kind}/{name}"

    group, _, version = api_version.rpartition("/")
    # Operator groups go first: kubernetes-validate drops everything after the first dot of the
    # group, so batch.volcano.sh/v1alpha1 Job would otherwise look up batch's schemas.
    try:
        errors = _crd_errors(doc, group, version, kind)
        if errors is None:
            errors = _builtin_errors(doc)
    except _NoSchema as e:
        return [f"{where}: {e}"]
    errors.extend(_metadata_errors(kind, meta))
    return [f"{where}: {e}" for e in errors]


def _builtin_errors(doc: dict[str, Any]) -> list[str]:
    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except kubernetes_validate.SchemaNotFoundError as e:  # str(e) is empty; the text is in .message
        what = f"{doc['apiVersion']} {doc['kind']}"
        raise _NoSchema(f"no schema for {what} in Kubernetes {K8S_VERSION} ({e.message})") from e
    except kubernetes_validate.ValidationError as e:  # only the first error is raised
        errors = [f"{_path(e.path)}: {e.message}"]
    else:
        errors = []
    return errors + list(_quantity_errors(doc))


def validate_file(path: str | Path) -> list[str]:
    """Errors in every document of a (multi-document) YAML file, each prefixed by `path#index`."""
    try:
        with open(path, encoding="utf-8") as f:
            docs = list(yaml.load_all(f, Loader=_Loader))
    except yaml.YAMLError as e:
        return [f"{path}: invalid YAML: {e}"]
    errors: list[str] = []
    for i, doc in enumerate(docs):
        if doc is not None:  # empty documents (`---` at the end) are fine, as for kubectl
            errors.extend(f"{path}#{i}: {e}" for e in validate_manifest(doc))
    return errors


def kustomize_build(folder: str | Path) -> list[dict[str, Any]]:
    """The documents `kubectl kustomize <folder>` builds; KustomizeError with stderr on failure."""
    kubectl = shutil.which("kubectl") or "/usr/bin/kubectl"
    try:
        proc = subprocess.run(
            [kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=120
        )
    except FileNotFoundError as e:
        raise KustomizeError(f"kubectl not found ({kubectl}); run .ci/k8s-setup.sh") from e
    if proc.returncode != 0:
        raise KustomizeError(
            f"kubectl kustomize {folder} failed ({proc.returncode}): {proc.stderr.strip()}"
        )
    return [doc for doc in yaml.load_all(proc.stdout, Loader=_Loader) if doc is not None]
