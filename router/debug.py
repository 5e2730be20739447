"""The debug switch: ROUTER_DEBUG=1 makes every place that turns an unexpected exception
into a message (the command line's "internal error", a `check` block reported as an error)
raise it instead, with its traceback."""

from __future__ import annotations

import os

DEBUG_ENV = "ROUTER_DEBUG"


def debugging() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")
