"""`router fmt`: canonical text, comments kept, idempotent, and the meaning unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.language import parse_text
from router.language.fmt import format_expr, format_policy_file
from tests.language.test_parser import COMPACT, PLATFORM, expr, plain

DATA = Path(__file__).parent / "data"
MESSY = (DATA / "messy.route").read_text()


def fmt(text: str) -> str:
    return format_policy_file(parse_text(text, "p.route"), text)


PLATFORM_FORMATTED = """\
policy platform  # optional name; one per file set

let big_job = 8  # constants, usable in any expression

# Deny rules are checked before any route; a match rejects the workload with the message.
deny notebook_gpus:
  when kind == "notebook" and gpus > 1
  because "notebooks may use at most one GPU; submit a training job instead"

# Rules are tried top to bottom (files in name order); the first whose `when` holds
# claims the workload. A rule without `when` matches everything.
rule large_training:
  when kind == "training" and gpus >= big_job
  route slurm with exclusive, qos = "high"
  where gpu_type in ["h100", "a100"] and "ib" in features
  prefer lower cost

rule small_training:
  when kind == "training"
  route slurm
  where gpus_per_node >= workload.gpus
  else route kubernetes with queue = "training"  # fallback, ranked below

rule inference:
  when kind == "inference"
  route kubernetes with hpa(min = 2, max = 20, cpu = 70%), pdb(min_available = 1)
  prefer gpu_type == workload.gpu_type

rule batch:
  route any
  prefer lower cost  # any backend; the solver picks the cheapest target with room

quota research_gpus:
  for team == "research"
  limit gpus <= 64

quota prod_headroom:
  on cluster == "k8s-prod"
  limit gpus <= 80%  # keep a fifth of that cluster's GPUs free

check big_training_is_exclusive_slurm:
  for kind == "training" and gpus >= 8
  expect backend == "slurm" and exclusive
"""

COMPACT_FORMATTED = """\
rule big_training:
  when kind == "training" and gpus >= 8
  route slurm with exclusive

rule serving:
  when kind == "inference"
  route kubernetes with hpa
"""

MESSY_FORMATTED = """\
# Header comment for the platform.
# Owned by the platform team.

policy acme  # the name

let a = 1
let b = a * 2  # doubled
let c = (a + b) * 2

# Two rules on one line.
rule one:
  when kind == "x" and (gpus > 1 or gpus < 0)
  route slurm with exclusive  # compact

rule two:
  # before when
  # trailing when
  when kind == "y" and gpus >= 2  # second line of when
  route slurm with qos = "high", time = 48h
  where gpus_per_node >= workload.gpus
  prefer lower cost
  # between routes
  else route kubernetes with hpa(min = 1, max = 4), pdb(max_unavailable = 1)
  else route any

# a comment right after a statement

deny nope:
  when labels."app.kubernetes.io/name" == "bad" and not preemptible
  because "no \\"bad\\" apps"

quota q:
  for team == "r"
  on cluster == "c"
  limit gpus <= 50%
  limit memory < 2TiB

check k:
  for kind == "training"
  expect not backend != "slurm" or denied

# trailing inside check
# the end
"""


@pytest.mark.parametrize(
    ("source", "formatted"),
    [(PLATFORM, PLATFORM_FORMATTED), (COMPACT, COMPACT_FORMATTED), (MESSY, MESSY_FORMATTED)],
    ids=["platform", "compact", "messy"],
)
def test_canonical_text(source: str, formatted: str) -> None:
    assert fmt(source) == formatted


@pytest.mark.parametrize("source", [PLATFORM, COMPACT, MESSY], ids=["platform", "compact", "messy"])
def test_idempotent_and_meaning_preserving(source: str) -> None:
    once = fmt(source)
    assert fmt(once) == once
    before = parse_text(source, "p.route")
    after = parse_text(once, "p.route")
    assert plain(after) == plain(before)
    assert [text for _, text in after.comments] == [text for _, text in before.comments]


@pytest.mark.parametrize(
    ("source", "canonical"),
    [
        ("(a and b) or c", "a and b or c"),
        ("a and (b or c)", "a and (b or c)"),
        ("not (a == b)", "not a == b"),
        ("(not a) == b", "(not a) == b"),
        ("not (a and b)", "not (a and b)"),
        ("(a + b) * c", "(a + b) * c"),
        ("a - (b - c)", "a - (b - c)"),
        ("(a - b) - c", "a - b - c"),
        ("-(a + b)", "-(a + b)"),
        ("- - a", "-(-a)"),
        ("(a < b) == c", "(a < b) == c"),
        ("a ≥ 2GiB", "a >= 2GiB"),
        ('labels."k.io/x" ≠ "y\\n"', 'labels."k.io/x" != "y\\n"'),
        ("[1,2 ,3,]", "[1, 2, 3]"),
    ],
)
def test_expression_parentheses(source: str, canonical: str) -> None:
    assert format_expr(expr(source)) == canonical
    assert plain(expr(canonical)) == plain(expr(source))


def test_prefer_condition_on_a_name_like_a_direction() -> None:
    text = "rule r: route any prefer (lower == 1), lower (higher)"
    assert fmt(text) == "rule r:\n  route any\n  prefer (lower == 1), lower higher\n"
    assert plain(parse_text(fmt(text), "p.route")) == plain(parse_text(text, "p.route"))


def test_long_conditions_break_before_and() -> None:
    text = (
        'check c: for kind == "training" and gpus <= 8 and gpu_type == "any" and nodes == 1 '
        "and duration <= 72h and memory <= 1TiB and (cpus <= 48 or preemptible)  # long\n"
        "  expect placed\n"
    )
    assert fmt(text) == (
        "check c:\n"
        '  for kind == "training" and gpus <= 8 and gpu_type == "any" and nodes == 1 and '
        "duration <= 72h\n"
        "    and memory <= 1TiB and (cpus <= 48 or preemptible)  # long\n"
        "  expect placed\n"
    )
    assert fmt(fmt(text)) == fmt(text)
    assert plain(parse_text(fmt(text), "p.route")) == plain(parse_text(text, "p.route"))


def test_comments_and_blank_lines() -> None:
    assert fmt("") == ""
    assert fmt("# only a comment\n") == "# only a comment\n"
    text = "let a = 1\n\nlet b = 2\nlet c = 3\nrule r:   # header\n  route any\n"
    assert fmt(text) == "let a = 1\n\nlet b = 2\nlet c = 3\n\nrule r:  # header\n  route any\n"
