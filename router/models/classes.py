"""Workloads validated once per class: those equal in everything but their name.

Platforms hold thousands of workloads that differ in their names only (the same team, image,
shape and labels). The first of a class is validated; the others are a copy of it under their
own name, when that name is valid and the class's `after` does not hold it (the one check
that reads the name) — else they are validated in full, errors and all. Equal means the same
keys in the same order with values of the same plain types (their `repr`), so a copy is what
validating it would have made. At 10,000 workloads this is a tenth of the cost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast, get_args

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

from router.models.fields import DnsLabel
from router.models.workload import Workload

# Off only in the tests that check the shortcut against validating every workload.
SAME_CLASS_SHORTCUT = True
_SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None)})
_CONTAINERS: frozenset[type] = frozenset({dict, list})
_STR: frozenset[type] = frozenset({str})


class WorkloadClasses:
    """The validated workload of each class seen so far."""

    def __init__(self, plain: bool = True) -> None:
        # plain: the items are known to hold plain data only (dict, list, str, int, float,
        # bool, None: what YAML gives); else each is checked before its repr is trusted.
        self.plain = plain
        self.validated: dict[str, Workload] = {}

    def known(self, item: dict[str, Any]) -> tuple[str | None, Workload | None]:
        """(the item's class key, or None if it has none; its workload, if the class has
        been validated and the shortcut applies)."""
        name = item.get("name")
        if not SAME_CLASS_SHORTCUT or type(name) is not str:
            return None, None
        rest = dict(item)
        del rest["name"]
        if not self.plain and not _is_plain(rest, 0):
            return None, None
        key = repr(rest)
        return key, self.named(key, name)

    def named(self, key: str, name: str) -> Workload | None:
        """The class's workload under `name`, if the class has been validated and the
        shortcut applies (the key from known(), or kept from an item equal but for its
        name)."""
        seen = self.validated.get(key)
        if seen is not None and name not in seen.after and _valid_name(name):
            return _renamed(seen, name)
        return None

    def add(self, key: str | None, workload: Workload) -> None:
        """Remember a validated workload as its class's (the first one stays)."""
        if key is not None:
            self.validated.setdefault(key, workload)


def _is_plain(value: dict[str, Any] | list[Any], depth: int) -> bool:
    """Whether a dict or list holds only plain values (str keys), checked a level at a time
    by the set of types met (a call per value took longer than the validation it saves)."""
    if type(value) is dict:
        if not {type(k) for k in value} <= _STR:
            return False
        items: Any = value.values()
    else:
        items = value
    kinds = {type(v) for v in items}
    if kinds <= _SCALARS:
        return True
    if depth >= 8 or not kinds <= _CONTAINERS | _SCALARS:  # a workload nests 4 deep
        return False
    return all(_is_plain(v, depth + 1) for v in items if type(v) in _CONTAINERS)


def _renamed(w: Workload, name: str) -> Workload:
    """`w.model_copy(update={"name": name})` without its general machinery (which took most
    of the time of a copy): the same four slots pydantic's copy fills, filled directly."""
    new = Workload.__new__(Workload)
    object.__setattr__(new, "__dict__", {**w.__dict__, "name": name})
    object.__setattr__(new, "__pydantic_fields_set__", set(w.__pydantic_fields_set__))
    object.__setattr__(new, "__pydantic_extra__", None)
    object.__setattr__(new, "__pydantic_private__", dict(w.__pydantic_private__ or {}))
    return new


def _valid_name(name: str) -> bool:
    """Whether DnsLabel takes the name as it is: its own check, called directly (through a
    TypeAdapter, a tenth of loading 50,000 workloads)."""
    try:
        return bool(_NAME_CHECK(name) == name)
    except PydanticCustomError:
        return False


# DnsLabel is a str with one BeforeValidator: the name check of every workload.
_NAME_CHECK = cast(
    Callable[[Any], Any],
    next(m.func for m in get_args(DnsLabel)[1:] if isinstance(m, BeforeValidator)),
)
