"""Kubernetes resource quantities ("95500m", "1056896024Ki", "8", "1e3") as numbers."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

_SUFFIX: dict[str, Decimal] = {
    k: Decimal(str(v))
    for k, v in {
        "Ki": 1 << 10,
        "Mi": 1 << 20,
        "Gi": 1 << 30,
        "Ti": 1 << 40,
        "Pi": 1 << 50,
        "Ei": 1 << 60,
        "n": Decimal("1e-9"),
        "u": Decimal("1e-6"),
        "m": Decimal("1e-3"),
        "": 1,
        "k": 10**3,
        "M": 10**6,
        "G": 10**9,
        "T": 10**12,
        "P": 10**15,
        "E": 10**18,
    }.items()
}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)([A-Za-z]*)")


def parse_quantity(text: Any) -> Decimal:
    m = _QUANTITY.fullmatch(str(text).strip())
    if not m or m.group(2) not in _SUFFIX:
        raise ValueError(f"{text!r} is not a Kubernetes quantity")
    try:
        return Decimal(m.group(1)) * _SUFFIX[m.group(2)]
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a Kubernetes quantity") from None
