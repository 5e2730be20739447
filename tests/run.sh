#!/usr/bin/env bash
# The whole test suite, set-up included: `bash tests/run.sh` on a fresh machine.
# Installs router with its test extras, Debian's slurm-wlm and munge for the live Slurm tests
# (when run as root; otherwise they must already be there), then checks lint, format and
# types, then runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"

"$PYTHON" -m pip install --disable-pip-version-check --quiet -e '.[test]'
if [ "$(id -u)" = 0 ]; then
    bash .ci/slurm-setup.sh
fi
bash .ci/k8s-setup.sh

# Lint, format and types first: the tests (and examples/ml-platform/tests, which pytest
# collects through testpaths) are held to the same standard as router itself.
"$PYTHON" -m ruff check router tests examples
"$PYTHON" -m ruff format --check router tests examples
"$PYTHON" -m mypy router tests examples/ml-platform/tests

# Two workers (pytest-xdist; ROUTER_TEST_WORKERS to change it, 0 for none): the suite is
# single-threaded tests, and the Slurm ones stay together on one worker (tests/conftest.py).
exec "$PYTHON" -m pytest -q -n "${ROUTER_TEST_WORKERS:-2}" --dist loadgroup "$@"
