"""Kubernetes names and label values that are always valid, and stable when shortened.

Names derived from a workload can exceed what Kubernetes allows once a controller appends its
own suffix (an Indexed Job's pods are `<job>-<index>`, a JobSet's `<jobset>-<rjob>-<i>-<j>`,
and a pod hostname is a 63-character DNS label). Such names are cut and given a short hash of
the whole original name, so the same workload always gets the same name and two long names
that share a prefix still differ.
"""

from __future__ import annotations

import hashlib
import re

LABEL_MAX = 63
HASH_LEN = 8

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
LABEL_VALUE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_LEN]


def _cut(clean: str, original: str, limit: int, strip: str) -> str:
    """`clean` if it fits in `limit`, else its prefix + "-" + a hash of `original`."""
    if clean and len(clean) <= limit:
        return clean
    head = clean[: max(limit - HASH_LEN - 1, 0)].rstrip(strip)
    return f"{head}-{short_hash(original)}" if head else short_hash(original)


def dns_label(name: str, limit: int = LABEL_MAX) -> str:
    """`name` as a DNS-1123 label (lowercase letters, digits, '-') of at most `limit` chars.

    A valid name that fits is returned unchanged; otherwise it is lowercased, other characters
    become '-', and a name still too long is cut and suffixed with a hash.
    """
    if len(name) <= limit and DNS_LABEL.fullmatch(name):
        return name
    clean = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    return _cut(clean, name, limit, "-")


def dns1035_label(name: str, limit: int = LABEL_MAX) -> str:
    """A DNS-1035 label: a DNS-1123 label that starts with a letter.

    Service names must be one, and so must every name an operator turns into a Service name
    (a PyTorchJob's, a JobSet's, a Volcano Job's). A workload name may start with a digit
    (it is a DNS-1123 label), so such a name gets a "w-" prefix.
    """
    label = dns_label(name, limit)
    return label if label[0].isalpha() else dns_label(f"w-{name}", limit)


def label_value(text: str) -> str:
    """`text` as a label value: at most 63 of letters, digits, '-', '_', '.', alphanumeric
    at both ends. Valid text is returned unchanged."""
    if len(text) <= LABEL_MAX and (text == "" or LABEL_VALUE.fullmatch(text)):
        return text
    clean = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-_.")
    return _cut(clean, text, LABEL_MAX, "-_.")
