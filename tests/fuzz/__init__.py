"""Fuzzing router's inputs: policies generated from the grammar and mutated, YAML mutated.

CI runs a bounded number of examples (tests/fuzz/test_fuzz.py, derandomized); a longer run:

    python -m tests.fuzz --minutes 30          # random seeds; reproducers go to found/

Every input must end in exit 0, 2 or 3, or exit 1 with a positioned error
(file:line:col: error: ...); a traceback or "internal error" is a failure. The minimal
reproducers found so far are kept as files in regressions/ (test_regressions.py).
"""
