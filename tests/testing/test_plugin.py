"""The pytest plugin as a platform repo uses it: its own tests, in its own folder, in a
pytest process of their own (the entry point, or -p when router is not installed)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from router.testing.outcome import Routing, routing
from tests.helpers import EXAMPLE

pytestmark = pytest.mark.slow


def _pytest(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = (
        []
        if any(e.name == "router" for e in entry_points(group="pytest11"))
        else ["-p", "router.testing.pytest_plugin"]
    )
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *args,
            *extra,
            str(folder),
        ],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=300,
        check=False,
    )


def test_fixtures_route_plan_and_factory(tmp_path: Path) -> None:
    (tmp_path / "test_routing.py").write_text(
        "def test_big(route):\n"
        "    r = route({'kind': 'training', 'gpus': 16})\n"
        "    assert (r.status, r.rule, r.backends) == ('routed', 'large_training', {'slurm'})\n"
        "def test_factory(router_platform):\n"
        f"    p = router_platform({str(EXAMPLE)!r})\n"
        "    assert p.route({'name': 'n', 'image': 'i:1', 'kind': 'notebook', 'gpus': 4}"
        ").status == 'denied'\n"
        "def test_plan(router_plan):\n"
        "    assert router_plan.placements and not router_plan.unrouted\n"
    )
    out = _pytest(tmp_path, f"--router-platform={EXAMPLE}")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3 passed" in out.stdout


def test_hypothesis_without_suppressions_and_a_short_falsifying_example(tmp_path: Path) -> None:
    """@given with the `route` fixture passes Hypothesis' health checks (the fixture is
    session-scoped), and a failure prints the drawn workload, not the platform."""
    (tmp_path / "test_props.py").write_text(
        "from hypothesis import given, settings, strategies as st\n"
        "from router.testing import workloads\n"
        "@settings(max_examples=30, deadline=None, derandomize=True)\n"
        "@given(gpus=st.integers(8, 256))\n"
        "def test_big_training(route, gpus):\n"
        "    assert route({'kind': 'training', 'gpus': gpus}).rule == 'large_training'\n"
        "@settings(max_examples=30, deadline=None, derandomize=True)\n"
        "@given(w=workloads(kind='training', gpus=st.integers(8, 4096), gpu_type='h100',\n"
        "                   duration='12h'))\n"
        "def test_always_placed(route, w):\n"
        "    r = route(w)\n"
        "    assert r.status == 'routed', r.reasons\n"
    )
    out = _pytest(tmp_path, f"--router-platform={EXAMPLE}")
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "1 failed, 1 passed" in text
    assert "FailedHealthCheck" not in text and "function-scoped fixture" not in text
    # The falsifying example and the message: the workload and the reasons, a few lines.
    assert "Falsifying example" in text and "nodes < " in text, text[-4000:]
    failure = text[text.index("test_always_placed") :]
    assert len(failure) < 8000, len(failure)
    assert "<route on <Platform" in failure


def test_routing_outcomes_on_the_example() -> None:
    import router

    platform = router.load(EXAMPLE)
    big = routing(platform, {"kind": "training", "gpus": 16})
    assert big.status == "routed" and big.rule == "large_training"
    assert big.target is not None and big.target.startswith("hpc-")
    assert big.options["exclusive"] is True and big.backend == "slurm"
    denied = routing(platform, {"kind": "notebook", "gpus": 2})
    assert (denied.status, denied.rule) == ("denied", "notebook_gpus")
    huge = routing(platform, {"kind": "training", "gpus": 1024, "gpu_type": "h100"})
    assert (huge.status, huge.targets) == ("unplaced", ())
    assert any("hpc-east/gpu-h100" in r and "needed" in r for r in huge.reasons), huge.reasons
    text = repr(huge)
    assert len(text) < 600 and "Platform" not in text and "Inventory" not in text
    assert Routing("a", "unrouted") == Routing("a", "unrouted")
    # The CPU partitions have no gpu_type: the `where` says so, as plan.json and explain do.
    long = routing(platform, {"kind": "training", "gpus": 8, "gpu_type": "a100", "duration": "72h"})
    cpu = [r for r in long.reasons if r.startswith("2 targets (hpc-east/cpu, hpc-west/cpu)")]
    assert len(cpu) == 1 and 'gpu_type in ["h100", "a100"]: gpu_type is not set;' in cpu[0]
    assert "none in" not in cpu[0]


def test_the_testing_page_examples_run_through_the_plugin(tmp_path: Path) -> None:
    """docs/testing.md's Python examples, as a platform repo's test file, pass on the
    example platform."""
    from tests.docs.pages import DOCS, blocks

    code = [b.text for b in blocks(DOCS / "testing.md") if b.kind == "python"]
    assert len(code) >= 2
    (tmp_path / "test_from_docs.py").write_text("\n\n".join(code))
    out = _pytest(tmp_path, f"--router-platform={EXAMPLE}")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3 passed" in out.stdout
