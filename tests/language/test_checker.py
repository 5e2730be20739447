"""The checker: names resolved per context, constants folded, options and quotas validated."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from router.errors import ErrorGroup, PolicyError, RouterError
from router.language import ast, load_policy

DATA = Path(__file__).parent / "data"
Load = Callable[[str], ast.Policy]


@pytest.fixture
def load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Load:
    """Check a policy text written to p.route (a relative path, as errors show it)."""
    monkeypatch.chdir(tmp_path)

    def run(text: str) -> ast.Policy:
        Path("p.route").write_text(text)
        return load_policy("p.route")

    return run


def error_text(load: Load, text: str) -> str:
    with pytest.raises(RouterError) as info:
        load(text)
    assert isinstance(info.value, (PolicyError, ErrorGroup))
    return info.value.format()


def test_platform_example_checks_and_resolves() -> None:
    policy = load_policy(DATA / "platform.route")
    assert policy.name == "platform"
    assert policy.constants == {"big_job": 8}
    large = policy.rules[0]
    assert isinstance(large.when, ast.Binary) and isinstance(large.when.right, ast.Binary)
    kind = large.when.left.left  # type: ignore[union-attr]
    assert isinstance(kind, ast.Name) and (kind.scope, kind.field) == ("workload", "kind")
    big_job = large.when.right.right
    assert isinstance(big_job, ast.Name) and (big_job.scope, big_job.field) == ("const", "big_job")
    where = large.routes[0].where
    assert isinstance(where, ast.Binary) and isinstance(where.left, ast.Binary)
    gpu_type = where.left.left
    assert isinstance(gpu_type, ast.Name) and gpu_type.scope == "target"
    small_where = policy.rules[1].routes[0].where
    assert isinstance(small_where, ast.Binary) and isinstance(small_where.right, ast.Name)
    assert (small_where.right.scope, small_where.right.field) == ("workload", "gpus")
    expect = policy.checks[0].expect
    assert isinstance(expect, ast.Binary) and isinstance(expect.right, ast.Name)
    assert (expect.right.scope, expect.right.field) == ("outcome", "exclusive")
    cpu = policy.rules[2].routes[0].options[0].args["cpu"]
    assert isinstance(cpu, ast.Literal) and (cpu.value, cpu.unit) == (0.7, "percent")
    share = policy.quotas[1].limits[0].amount
    assert isinstance(share, ast.Literal) and (share.value, share.unit) == (0.8, "percent")


def test_labels_and_prefixes(load: Load) -> None:
    policy = load(
        'rule a: when labels.app == "x" and workload.labels.team == "t" and "k" in labels\n'
        '  route slurm where labels.zone == "a" and target.gpus_per_node >= workload.gpus\n'
    )
    rule = policy.rules[0]
    names: list[ast.Name] = []

    def walk(e: ast.Expr | None) -> None:
        if isinstance(e, ast.Name):
            names.append(e)
        elif isinstance(e, ast.Binary):
            walk(e.left)
            walk(e.right)

    walk(rule.when)
    walk(rule.routes[0].where)
    resolved = [(n.scope, n.field, n.key) for n in names]
    assert resolved == [
        ("workload", "labels", "app"),
        ("workload", "labels", "team"),
        ("workload", "labels", None),
        ("target", "labels", "zone"),
        ("target", "gpus_per_node", None),
        ("workload", "gpus", None),
    ]


def test_constants_fold_in_order_and_into_options(load: Load) -> None:
    policy = load(
        'let hours = 24h\nlet long = 2 * hours\nlet share = 80%\nlet q = "high"\n'
        "let mem = 64GiB / 2\n"
        "rule a: route slurm with time = long, qos = q, exclusive = true\n"
        "quota b: limit gpus <= share limit memory <= mem\n"
    )
    assert policy.constants == {
        "hours": 86400,
        "long": 172800,
        "share": 0.8,
        "q": "high",
        "mem": 32768,
    }
    time, qos, exclusive = policy.rules[0].routes[0].options
    assert isinstance(time.value, ast.Literal) and (time.value.value, time.value.unit) == (
        172800,
        "duration",
    )
    assert isinstance(qos.value, ast.Literal) and qos.value.value == "high"
    assert isinstance(exclusive.value, ast.Literal) and exclusive.value.value is True
    gpus, memory = policy.quotas[0].limits
    assert isinstance(gpus.amount, ast.Literal) and gpus.amount.unit == "percent"
    assert isinstance(memory.amount, ast.Literal) and memory.amount.value == 32768


def test_any_route_takes_options_of_either_backend(load: Load) -> None:
    policy = load('rule a: route any with exclusive, hpa(min = 1), queue = "q"')
    assert [o.name for o in policy.rules[0].routes[0].options] == ["exclusive", "hpa", "queue"]


ERRORS = [
    (
        "rule a: when gpu > 1 route slurm",
        """\
p.route:1:14: error: unknown workload field `gpu`
    1 | rule a: when gpu > 1 route slurm
      |              ^^^
  did you mean "gpus"?""",
    ),
    (
        "rule a: when cost < 3 route slurm",
        "p.route:1:14: error: `cost` is a target attribute; "
        "use it in `where`, `prefer` or a quota's `on`, not in `when`\n"
        """\
    1 | rule a: when cost < 3 route slurm
      |              ^^^^""",
    ),
    (
        "rule a: route slurm where gpus > 1",
        """\
p.route:1:27: error: `gpus` is a workload field; in `where` write `workload.gpus`
    1 | rule a: route slurm where gpus > 1
      |                           ^^^^""",
    ),
    (
        "rule a: route slurm prefer lower cots",
        """\
p.route:1:34: error: unknown target attribute `cots`
    1 | rule a: route slurm prefer lower cots
      |                                  ^^^^
  did you mean "cost"?""",
    ),
    (
        'check c: expect backnd == "slurm"',
        """\
p.route:1:17: error: unknown routing outcome `backnd`
    1 | check c: expect backnd == "slurm"
      |                 ^^^^^^
  did you mean "backend"?""",
    ),
    (
        "rule a: route slurm with hpa(min = 2)",
        """\
p.route:1:26: error: `hpa` is a kubernetes option; this route goes to slurm
    1 | rule a: route slurm with hpa(min = 2)
      |                          ^^^^^^^^^^^^""",
    ),
    (
        "rule a: route slurm with exclusve",
        """\
p.route:1:26: error: unknown option `exclusve`
    1 | rule a: route slurm with exclusve
      |                          ^^^^^^^^
  did you mean "exclusive"?""",
    ),
    (
        'rule a: route slurm with mpi = "openmpi"',
        """\
p.route:1:32: error: `mpi` expects one of pmix, pmi2, none; got "openmpi"
    1 | rule a: route slurm with mpi = "openmpi"
      |                                ^^^^^^^^^""",
    ),
    (
        "rule a: route slurm with time = 5",
        """\
p.route:1:33: error: `time` expects a duration such as 48h; got `5` (a number)
    1 | rule a: route slurm with time = 5
      |                                 ^""",
    ),
    (
        "rule a: route slurm with qos = 3",
        """\
p.route:1:32: error: `qos` expects a string in quotes; got `3` (a number)
    1 | rule a: route slurm with qos = 3
      |                                ^""",
    ),
    (
        "rule a: route kubernetes with hpa(mn = 2)",
        """\
p.route:1:35: error: `hpa` has no argument `mn`
    1 | rule a: route kubernetes with hpa(mn = 2)
      |                                   ^^^^^^
  did you mean "min"?""",
    ),
    (
        "rule a: route kubernetes with hpa(min = 5, max = 2)",
        """\
p.route:1:31: error: `min` of `hpa` is above its `max`
    1 | rule a: route kubernetes with hpa(min = 5, max = 2)
      |                               ^^^^^^^^^^^^^^^^^^^^^""",
    ),
    (
        "rule a: route kubernetes with pdb(min_available = 1, max_unavailable = 1)",
        """\
p.route:1:31: error: `pdb` takes exactly one of min_available or max_unavailable
    1 | rule a: route kubernetes with pdb(min_available = 1, max_unavailable = 1)
      |                               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^""",
    ),
    (
        "rule a: route kubernetes with hpa(min = 0)",
        """\
p.route:1:41: error: `min` of `hpa` expects a whole number >= 1
    1 | rule a: route kubernetes with hpa(min = 0)
      |                                         ^""",
    ),
    (
        "rule a: route slurm with qos",
        """\
p.route:1:26: error: `qos` needs a value: qos = "..."
    1 | rule a: route slurm with qos
      |                          ^^^""",
    ),
    (
        "quota q: limit gpu <= 8",
        """\
p.route:1:16: error: unknown quota resource `gpu`
    1 | quota q: limit gpu <= 8
      |                ^^^
  did you mean "gpus"?""",
    ),
    (
        "quota q: limit gpus <= 120%",
        """\
p.route:1:24: error: a percentage limit must be above 0% and at most 100%
    1 | quota q: limit gpus <= 120%
      |                        ^^^^""",
    ),
    (
        "quota q: limit memory <= 100",
        """\
p.route:1:26: error: a memory limit needs a unit, such as 8TiB, or a percentage
    1 | quota q: limit memory <= 100
      |                          ^^^""",
    ),
    (
        "rule a: when memory > 48h route slurm",
        """\
p.route:1:14: error: cannot compare `memory` (a memory size) with `48h` (a duration)
    1 | rule a: when memory > 48h route slurm
      |              ^^^^^^^^^^^^""",
    ),
    (
        'rule a: when gpus == "eight" route slurm',
        """\
p.route:1:14: error: cannot compare `gpus` (a number) with `"eight"` (a string)
    1 | rule a: when gpus == "eight" route slurm
      |              ^^^^^^^^^^^^^^^""",
    ),
    (
        'rule a: route slurm where features == "ib"',
        """\
p.route:1:27: error: cannot compare `features` (a list) with `"ib"` (a string)
    1 | rule a: route slurm where features == "ib"
      |                           ^^^^^^^^^^^^^^^^
  to test membership, write `"ib" in features`""",
    ),
    (
        'rule a: when gpu_type in ["h100", 3] route slurm',
        """\
p.route:1:35: error: `3` is a number, but `gpu_type` is a string
    1 | rule a: when gpu_type in ["h100", 3] route slurm
      |                                   ^""",
    ),
    (
        "let a = b\nlet b = 1",
        """\
p.route:1:9: error: constant `b` is defined later, at p.route:2:5
    1 | let a = b
      |         ^
  a constant can use only the constants defined before it""",
    ),
    (
        "rule a: route slurm with qos = team",
        """\
p.route:1:32: error: `team` is not a constant; option values are fixed in the policy
    1 | rule a: route slurm with qos = team
      |                                ^^^^""",
    ),
    (
        "rule a: route slurm\nrule a: route any",
        """\
p.route:2:6: error: rule `a` is defined twice; the first is at p.route:1:6
    2 | rule a: route any
      |      ^""",
    ),
    (
        'deny a: because "no"\nrule a: route any',
        """\
p.route:2:6: error: rule `a` has the name of the deny at p.route:1:6
    2 | rule a: route any
      |      ^
  rules and denies share one set of names""",
    ),
]


@pytest.mark.parametrize(("text", "expected"), ERRORS)
def test_error_messages(load: Load, text: str, expected: str) -> None:
    assert error_text(load, text) == expected


def test_all_errors_are_reported_at_once(load: Load) -> None:
    with pytest.raises(ErrorGroup) as info:
        load("rule a: when gpu > 1 route slurm with hpa\nrule b: route kubernetes with exclusive")
    messages = [e.message for e in info.value.errors]
    assert messages == [
        "unknown workload field `gpu`",
        "`hpa` is a kubernetes option; this route goes to slurm",
        "`exclusive` is a slurm option; this route goes to kubernetes",
    ]
    assert info.value.format().count("p.route:") == 3


def test_load_policy_paths(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"policy path not found: .*missing"):
        load_policy(tmp_path / "missing")
    with pytest.raises(PolicyError, match=r"no \.route files in"):
        load_policy(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.route").write_text("rule from_sub: route any\n")
    (tmp_path / "b.route").write_text("rule from_top: route any\n")
    (tmp_path / "notes.txt").write_text("not a policy")
    policy = load_policy(tmp_path)
    # Sorted by path: b.route before sub/a.route.
    assert [r.name for r in policy.rules] == ["from_top", "from_sub"]
    assert [r.name for r in load_policy([tmp_path / "sub" / "a.route"]).rules] == ["from_sub"]
