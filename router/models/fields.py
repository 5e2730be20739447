"""Field types shared by the workload and inventory models, with the messages users see.

Every check is a plain function raising `PydanticCustomError`, so pydantic reports our message
as is (no "Value error, " prefix) and the loader can put it after the field path. Strings are
checked with `re.fullmatch`: `$` would accept a trailing newline.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Annotated, Any

from annotated_types import Ge
from pydantic import BaseModel, BeforeValidator, ConfigDict, WithJsonSchema
from pydantic_core import PydanticCustomError

from router.quantity import QuantityError, parse_duration, parse_memory

# Priority words and their weights (a policy and plan.json read them as these numbers).
PRIORITIES: dict[str, int] = {"low": 1, "normal": 2, "high": 4, "critical": 8}

MAX_COUNT = 1_000_000_000  # a bound on whole numbers: keeps the solver's integers sane

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
SLUG = re.compile(r"[a-z0-9][a-z0-9._-]*")
SLURM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


# ---- option and path values that reach scripts and manifests -------------------------------
# One definition for `router check` (the policy's option values, at their position) and the
# emitters (what `router plan` refuses): characters that sbatch's #SBATCH parser and a shell
# both take literally (no space, quote, '#', '%', '$' or backslash), Slurm feature
# expressions, and Kubernetes names.
SBATCH_SAFE = re.compile(r"[A-Za-z0-9._,:@+=/-]+")
SBATCH_CONSTRAINT = re.compile(r"[A-Za-z0-9._,:@+=/&|()\[\]*!-]+")
VALUE_FORMATS: dict[str, tuple[re.Pattern[str], int, str]] = {
    "sbatch": (SBATCH_SAFE, 1024, "letters, digits and . _ , : @ + = / - (what an #SBATCH"
               " line takes literally)"),
    "constraint": (SBATCH_CONSTRAINT, 1024, "a Slurm feature expression: letters, digits and"
                   " . _ , : @ + = / - & | ( ) [ ] * !"),
    "dns_label": (DNS_LABEL, 63, "a DNS-1123 label (lowercase letters, digits and '-', at most"
                  " 63)"),
    "label_value": (LABEL_NAME, 63, "usable as a label value (letters, digits, '-', '_' and"
                    " '.', at most 63 characters)"),
    "dns_subdomain": (DNS_SUBDOMAIN, 253, "a DNS-1123 subdomain (lowercase letters, digits,"
                      " '-' and '.')"),
}  # fmt: skip


def value_problem(fmt: str, text: str) -> str | None:
    """What is wrong with `text` as a value of format `fmt` (VALUE_FORMATS), or None."""
    regex, longest, what = VALUE_FORMATS[fmt]
    if len(text) <= longest and regex.fullmatch(text):
        return None
    return f"must be {what}"


def fail(message: str) -> PydanticCustomError:
    """An error whose message pydantic reports verbatim."""
    return PydanticCustomError("router", message)


def show(value: object) -> str:
    """A value as the user wrote it in YAML, escaped, so hostile text cannot forge output."""
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 72 else text[:68] + '..."'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__


def need_str(value: object, what: str = "a string") -> str:
    if not isinstance(value, str):
        raise fail(f"must be {what}, got {show(value)}")
    return value


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # Unicode category Cc


def has_control(text: str, allow: str = "") -> str | None:
    """The first control character in text that is not allowed, spelt for a message."""
    for found in _CONTROL.finditer(text):
        ch = found.group()
        if ch not in allow:
            return "NUL" if ch == "\x00" else json.dumps(ch)[1:-1]
    return None


# ---- whole numbers ------------------------------------------------------------------------


def whole(minimum: int, maximum: int = MAX_COUNT) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail(f"must be a whole number ≥ {minimum}, got {show(value)}")
        if value < minimum:
            raise fail(f"must be a whole number ≥ {minimum}, got {value}")
        if value > maximum:
            raise fail(f"must be at most {maximum}, got {value}")
        return value

    return check


Count = Annotated[int, Ge(0), BeforeValidator(whole(0))]
PositiveCount = Annotated[int, Ge(1), BeforeValidator(whole(1))]


def _money(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(f"must be a number ≥ 0, got {show(value)}")
    if not math.isfinite(value) or value < 0:
        raise fail(f"must be a number ≥ 0, got {show(value)}")
    return float(value)


Money = Annotated[float, Ge(0), BeforeValidator(_money)]


def _strict_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise fail(f"must be true or false, got {show(value)}")
    return value


Flag = Annotated[bool, BeforeValidator(_strict_bool)]

# ---- quantities ---------------------------------------------------------------------------


def _memory(value: Any) -> int:
    try:
        mib = parse_memory(value)
    except QuantityError as e:
        raise fail(str(e)) from None
    if mib < 1:
        raise fail(
            f"must be more than 0 (Slurm reads 0 as all of a node's memory), got {show(value)}"
        )
    if mib > MAX_COUNT:
        raise fail(f"must be at most {MAX_COUNT} MiB, got {show(value)}")
    return mib


def _duration(value: Any) -> int:
    try:
        seconds = parse_duration(value)
    except QuantityError as e:
        raise fail(str(e)) from None
    if seconds < 1:
        raise fail(f"must be longer than 0 (Slurm reads 0 as no time limit), got {show(value)}")
    if seconds > MAX_COUNT:
        raise fail(f"must be at most {MAX_COUNT} seconds, got {show(value)}")
    return seconds


_QuantityInput = str | Annotated[int, Ge(1)]
Memory = Annotated[int, BeforeValidator(_memory, json_schema_input_type=_QuantityInput)]
Duration = Annotated[int, BeforeValidator(_duration, json_schema_input_type=_QuantityInput)]

# ---- names --------------------------------------------------------------------------------


def pattern(regex: re.Pattern[str], what: str, max_len: int = 63) -> Callable[[Any], str]:
    """A check that a string is `what`: fullmatches regex and has at most max_len characters."""

    def check(value: Any) -> str:
        text = need_str(value)
        if len(text) > max_len or not regex.fullmatch(text):
            raise fail(f"must be {what}, got {show(text)}")
        return text

    return check


DNS_LABEL_TEXT = (
    "a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter"
    " or digit, at most 63 characters)"
)
LABEL_VALUE_TEXT = (
    "a label value (letters, digits, '-', '_' and '.', starting and ending with a letter"
    " or digit, at most 63 characters)"
)


def schema_pattern(regex: re.Pattern[str], max_len: int = 63) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "pattern": f"^{regex.pattern}$", "maxLength": max_len})


DnsLabel = Annotated[
    str, BeforeValidator(pattern(DNS_LABEL, DNS_LABEL_TEXT)), schema_pattern(DNS_LABEL)
]
Slug = Annotated[
    str,
    BeforeValidator(
        pattern(
            SLUG, "lowercase letters, digits, '.', '_' and '-', starting with a letter or digit"
        )
    ),
    schema_pattern(SLUG),
]
SlurmName = Annotated[
    str,
    BeforeValidator(
        pattern(SLURM_NAME, "letters, digits, '.', '_' and '-', starting with a letter or digit")
    ),
]


def _label_key(value: Any) -> str:
    key = need_str(value, "a string label key")
    prefix, slash, name = key.rpartition("/")
    ok = bool(LABEL_NAME.fullmatch(name)) and len(name) <= 63
    if slash:
        ok = ok and len(prefix) <= 253 and bool(DNS_SUBDOMAIN.fullmatch(prefix))
    if not ok:
        raise fail(
            "label key must be an optional DNS subdomain prefix and '/', then a name of at most"
            " 63 letters, digits, '-', '_' or '.' starting and ending with a letter or digit;"
            f" got {show(key)}"
        )
    return key


def _label_value(value: Any) -> str:
    if isinstance(value, (bool, int, float)):
        raise fail(f'must be a string; quote it: "{show(value)}"')
    text = need_str(value)
    if text and (len(text) > 63 or not LABEL_NAME.fullmatch(text)):
        raise fail(f"must be empty or {LABEL_VALUE_TEXT}, got {show(text)}")
    return text


LabelKey = Annotated[str, BeforeValidator(_label_key)]
LabelValue = Annotated[str, BeforeValidator(_label_value)]
Labels = dict[LabelKey, LabelValue]


def _team(value: Any) -> str:
    text = need_str(value)
    if not text or len(text) > 63 or not LABEL_NAME.fullmatch(text):
        raise fail(f"must be {LABEL_VALUE_TEXT}, got {show(text)}")
    return text


Team = Annotated[str, BeforeValidator(_team)]

# ---- models -------------------------------------------------------------------------------


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


class Frozen(BaseModel):
    """A frozen model, hashable and compared by its fields only (private attributes such as
    the source location take no part)."""

    # defer_build: a model's validator is made when first used, not at import (of 39 models,
    # `router plan` validates 20 on their own; the rest only inside others' schemas).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    def __hash__(self) -> int:
        return hash((type(self), _freeze(self.__dict__)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BaseModel):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__
