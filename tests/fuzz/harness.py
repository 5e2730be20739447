"""Running an input through router the way a user does, and judging the outcome."""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from router.cli.main import cli
from router.errors import RouterError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ml-platform"
POSITIONED = re.compile(r"^\S+:\d+:\d+: error: ", re.MULTILINE)


@dataclass
class Outcome:
    command: str
    code: int
    output: str
    exception: BaseException | None

    def problem(self) -> str | None:
        """Why this outcome is a bug, or None: exit 0/2/3, or 1 with a positioned error."""
        if self.exception is not None and not isinstance(self.exception, SystemExit):
            return f"{type(self.exception).__name__}: {self.exception}"
        if "internal error" in self.output or "Traceback" in self.output:
            return "internal error: " + self.output[-400:]
        if self.code in (0, 2, 3):
            return None
        if self.code == 1 and POSITIONED.search(self.output):
            return None
        return f"exit {self.code} without a positioned error: " + self.output[-400:]


def make_project(root: Path, policy: str | bytes | None = None,
                 files: dict[str, str | bytes] | None = None) -> Path:  # fmt: skip
    """The example platform copied to `root`, its policy replaced by `policy` if given, and
    `files` ({relative path: text}) written over it."""
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("out", "schemas", "tests"))
    changed = {"policies/platform.route": policy} if policy is not None else {}
    for rel, text in {**changed, **(files or {})}.items():
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def run(project: Path, command: str) -> Outcome:
    args = [command, str(project)]
    if command == "plan":
        args += ["-o", str(project / "out")]
    r = CliRunner().invoke(cli, args)
    return Outcome(command, r.exit_code, r.output, r.exception)


def check_and_plan(policy: str | bytes | None = None,
                   files: dict[str, str | bytes] | None = None,
                   commands: tuple[str, ...] = ("check", "plan")) -> list[Outcome]:  # fmt: skip
    """`router check` and `router plan` of the example with these changes, in a temp folder."""
    with tempfile.TemporaryDirectory(prefix="router-fuzz-") as tmp:
        project = make_project(Path(tmp) / "p", policy, files)
        return [run(project, c) for c in commands]


@cache
def _example_inputs() -> Any:
    from router.config import load_project
    from router.plan.build import load_inputs

    return load_inputs(load_project(EXAMPLE))


def check_in_memory(text: str) -> str | None:
    """Parse, check and analyse a policy against the example inventory and workloads, in
    this process (fast); why it is a bug, or None. A RouterError must carry a position."""
    from router.assure.analysis import analyze
    from router.errors import ErrorGroup
    from router.language import check_policy, parse_files

    inputs = _example_inputs()
    with tempfile.TemporaryDirectory(prefix="router-fuzz-") as tmp:
        path = Path(tmp) / "fuzz.route"
        path.write_text(text, encoding="utf-8")
        try:
            raw = parse_files([path])
            policy = check_policy(parse_files([path]))
            analyze(policy, inputs.inventory, raw, inputs.workloads)
        except RouterError as e:
            errors = e.errors if isinstance(e, ErrorGroup) else [e]
            unpositioned = [x for x in errors if x.span is None]
            if unpositioned:
                return f"error without a position: {unpositioned[0].message}"
            for x in errors:
                x.format()  # rendering the caret must not fail either
        except Exception as e:  # any other exception is what the fuzzer looks for
            return f"{type(e).__name__}: {e}"
    return None
