"""Workload defaults are written once (models/workload.py) and the prover and the encoder
read them there: a workload that states nothing is what they assume."""

from __future__ import annotations

from router.assure import encode, prove
from router.models import Workload
from router.models.workload import WORKLOAD_DEFAULTS


def test_defaults_are_what_the_model_fills_in() -> None:
    w = Workload.model_validate({"name": "bare"})
    for key, value in WORKLOAD_DEFAULTS.items():
        if key == "nodes":  # unset nodes are derived from the target; alone, one node
            assert w.nodes is None and value == 1
            continue
        assert getattr(w, key) == value, key


def test_encoder_and_prover_read_the_same_defaults() -> None:
    for key in ("gpus", "cpus", "memory", "duration", "priority", "nodes"):
        assert encode.NUMBERS[key][2] == WORKLOAD_DEFAULTS[key], key
        assert prove._DEFAULTS[key] == WORKLOAD_DEFAULTS[key], key
    assert prove._DEFAULTS["team"] == WORKLOAD_DEFAULTS["team"] == "default"
