"""Quantities are parsed in one place; these are the spellings users write."""

from __future__ import annotations

import pytest

from router.quantity import (
    QuantityError,
    format_duration,
    format_memory,
    parse_duration,
    parse_memory,
    parse_percent,
    slurm_time,
)


@pytest.mark.parametrize(
    ("text", "mib"),
    [
        ("64GiB", 65536),
        ("2TiB", 2097152),
        ("512MiB", 512),
        ("1.5GiB", 1536),
        ("192Gi", 196608),
        ("1GB", 954),
        (4096, 4096),
        ("100", 100),
    ],
)
def test_memory(text: object, mib: int) -> None:
    assert parse_memory(text) == mib


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("45min", 2700),
        ("48h", 172800),
        ("7d", 604800),
        ("1h30min", 5400),
        ("2-00:00:00", 172800),
        ("01:30:00", 5400),
        (90, 5400),
    ],
)
def test_duration(text: object, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["eight", "64 GiBs", "-1GiB", True, None, "GiB"])
def test_bad_memory_says_what_was_expected(bad: object) -> None:
    with pytest.raises(QuantityError, match="memory size such as 64GiB"):
        parse_memory(bad)


@pytest.mark.parametrize("bad", ["soon", "5 parsecs", "h", True])
def test_bad_duration_says_what_was_expected(bad: object) -> None:
    with pytest.raises(QuantityError, match="duration such as"):
        parse_duration(bad)


def test_percent_and_formatting() -> None:
    assert parse_percent("80%") == pytest.approx(0.8)
    with pytest.raises(QuantityError):
        parse_percent("80")
    assert format_memory(2097152) == "2TiB"
    assert format_memory(1536) == "1536MiB"
    assert format_duration(172800) == "2d"
    assert format_duration(5400) == "90min"
    assert slurm_time(172800) == "2-00:00:00"
    assert slurm_time(61) == "00:02:00"  # Slurm counts whole minutes; never round a job short
