"""A longer fuzzing run: `python -m tests.fuzz --minutes 30 [--only grammar,mutated-yaml]`.

Runs the properties of test_fuzz.py with fresh random seeds until the time is up, round after
round (each property in turn, `--examples` each). A failure prints the shrunk (minimal)
input; its text is written to tests/fuzz/found/ to be kept in regressions/ once fixed.
Exit 1 if anything failed.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

from hypothesis.errors import InvalidArgument

from tests.fuzz.test_fuzz import PROPERTIES, run_with

FOUND = Path(__file__).parent / "found"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--examples", type=int, default=200, help="per property and round")
    parser.add_argument("--only", default="", help="comma-separated property names")
    args = parser.parse_args(argv)
    names = [n for n in PROPERTIES if not args.only or n in args.only.split(",")]
    deadline = time.monotonic() + args.minutes * 60
    failures, rounds = 0, 0
    while time.monotonic() < deadline:
        rounds += 1
        for name in names:
            test = run_with(name, max_examples=args.examples)
            started = time.monotonic()
            try:
                test()
                print(f"round {rounds} {name}: {args.examples} examples ok "
                      f"({time.monotonic() - started:.0f} s)", flush=True)  # fmt: skip
            except InvalidArgument:
                raise  # the harness is wrong, not router
            except Exception as e:  # a falsified property: keep the minimal input, go on
                failures += 1
                FOUND.mkdir(exist_ok=True)
                out = FOUND / f"{name}-{int(time.time())}.txt"
                notes = "\n".join(getattr(e, "__notes__", []))  # Hypothesis' falsifying example
                out.write_text(notes + "\n\n" + traceback.format_exc())
                print(f"round {rounds} {name}: FAILED, minimal input in {out}", flush=True)
            if time.monotonic() >= deadline:
                break
    print(f"{rounds} rounds, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
