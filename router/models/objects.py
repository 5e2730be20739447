"""Inventory and workloads given as Python objects (dicts, as the YAML files would hold),
validated by the same models as the files, with errors that name the field path."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from router.errors import ErrorGroup, LoadError, RouterError, did_you_mean
from router.models.classes import WorkloadClasses
from router.models.fields import show
from router.models.inventory import Inventory
from router.models.loader import _TAG, MAX_ERRORS, _message, _model_at, _path_text
from router.models.running import Running
from router.models.workload import Workload

__all__ = ["inventory_from_data", "running_from_data", "workloads_from_data"]


def _errors(
    e: ValidationError, model: type[BaseModel], where: str, prefix: tuple[Any, ...] = ()
) -> list[RouterError]:
    out: list[RouterError] = []
    for err in e.errors(include_url=False):
        loc = tuple(p for p in err["loc"] if isinstance(p, int) or not _TAG.fullmatch(p))
        kind, ctx = err["type"], err.get("ctx") or {}
        hint = None
        if kind == "extra_forbidden":
            loc, name = loc[:-1], loc[-1]
            message = f'unknown field "{name}"'
            fields = _model_at(model, loc)
            hint = did_you_mean(str(name), fields.model_fields) if fields else None
        elif kind == "missing":
            loc, name = loc[:-1], loc[-1]
            message = f'missing required field "{name}"'
        elif kind == "router_cross":
            message, hint = err["msg"], ctx.get("hint")
        else:
            message = _message(kind, err["msg"], err.get("input"), ctx)
        text = _path_text((*prefix, *loc))
        out.append(LoadError(f"{text}: {message}" if text else message, path=where, hint=hint))
    return out


def _raise(errors: list[RouterError]) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ErrorGroup(errors[:MAX_ERRORS])


def inventory_from_data(data: Mapping[str, Any] | Inventory, where: str = "inventory") -> Inventory:
    """An Inventory from a dict shaped as inventory.yaml (or an Inventory, returned as is).
    `where` names it in errors."""
    if isinstance(data, Inventory):
        return data
    if not isinstance(data, Mapping):
        raise LoadError(f"an inventory is a mapping with clusters:, got {show(data)}", path=where)
    try:
        return Inventory.model_validate(dict(data))
    except ValidationError as e:
        _raise(_errors(e, Inventory, where))
        raise  # not reached: _raise raises for a non-empty list


def workloads_from_data(
    items: Iterable[Mapping[str, Any] | Workload], where: str = "workloads"
) -> list[Workload]:
    """Workloads from dicts shaped as in workloads/*.yaml (or Workload models), in order;
    names must be unique. Errors name the item: `workloads[3].gpus: ...`."""
    out: list[Workload] = []
    errors: list[RouterError] = []
    seen: dict[str, int] = {}
    classes = WorkloadClasses(plain=False)  # validated once per class (classes.py)
    for n, item in enumerate(items):
        if isinstance(item, Workload):
            w = item
        elif not isinstance(item, Mapping):
            errors.append(
                LoadError(
                    f"[{n}]: expected a workload (a mapping with name:), got {show(item)}",
                    path=where,
                )
            )
            continue
        else:
            data = dict(item)
            key, found = classes.known(data)
            try:
                w = found or Workload.model_validate(data)
            except ValidationError as e:
                errors.extend(_errors(e, Workload, where, (n,)))
                continue
            classes.add(key, w)
        if w.name in seen:
            errors.append(
                LoadError(
                    f'[{n}]: duplicate workload name "{w.name}"; first given at [{seen[w.name]}]',
                    path=where,
                )
            )
            continue
        seen[w.name] = n
        out.append(w)
    _raise(errors)
    return out


def running_from_data(data: Mapping[str, Any] | Running, where: str = "running") -> Running:
    """What already runs, from a dict shaped as a running-work file (`running: [...]`)."""
    if isinstance(data, Running):
        return data
    if not isinstance(data, Mapping):
        raise LoadError(f"running work is a mapping with running:, got {show(data)}", path=where)
    try:
        return Running.model_validate(dict(data))
    except ValidationError as e:
        _raise(_errors(e, Running, where))
        raise
