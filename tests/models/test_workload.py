"""The Workload model: values in base units, every validation rule, hostile strings."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from router.models import Replicas, Workload
from router.models.schema import json_schema


def make(**fields: Any) -> Workload:
    return Workload.model_validate({"name": "w", **fields})


def error_of(**fields: Any) -> str:
    with pytest.raises(ValidationError) as info:
        make(**fields)
    return str(info.value)


# ---- good values ----------------------------------------------------------------------------


def test_defaults() -> None:
    w = make()
    assert (w.kind, w.team, w.gpus, w.gpu_type, w.cpus) == ("batch", "default", 0, "any", 1)
    assert (w.memory, w.duration, w.priority) == (4096, 14400, 2)
    assert w.labels == {} and w.env == {} and w.command is None and w.replicas is None
    assert w.nodes is None and w.gpus_per_node is None and w.port is None
    assert w.preemptible is False and w.source is None


def test_quantities_in_base_units() -> None:
    w = make(memory="2TiB", duration="48h", priority="high")
    assert (w.memory, w.duration, w.priority) == (2097152, 172800, 4)
    assert make(memory=512).memory == 512  # a bare number is MiB
    assert make(memory="64Gi").memory == 65536
    assert make(duration="1h30min").duration == 5400
    assert make(duration="2-00:00:00").duration == 172800
    assert make(duration=90).duration == 5400  # a bare number is minutes, as sbatch --time


@pytest.mark.parametrize(("given", "value"), [("low", 1), ("normal", 2), ("critical", 8), (0, 0)])
def test_priority(given: Any, value: int) -> None:
    assert make(priority=given).priority == value
    assert make(priority=1000).priority == 1000


def test_priority_weight_is_at_least_one() -> None:
    assert make(priority=0).priority_weight == 1
    assert make(priority="critical").priority_weight == 8


def test_replicas_forms() -> None:
    assert make(replicas=3).replicas == Replicas(min=3, max=3)
    assert make(replicas={"min": 2, "max": 5}).replicas == Replicas(min=2, max=5)
    assert make(replicas={"min": 2}).replicas == Replicas(min=2, max=2)
    assert make(replicas={"max": 4}).replicas == Replicas(min=1, max=4)
    assert make(replicas={"min": 0, "max": 3}).replicas == Replicas(min=0, max=3)


def test_service_and_job() -> None:
    job = make(kind="training", gpus=64)
    assert not job.is_service and (job.min_replicas, job.max_replicas) == (1, 1)
    inference = make(kind="inference")
    assert inference.is_service and (inference.min_replicas, inference.max_replicas) == (1, 1)
    scaled = make(kind="batch", replicas={"min": 2, "max": 6})
    assert scaled.is_service and (scaled.min_replicas, scaled.max_replicas) == (2, 6)


def test_gpu_shape() -> None:
    assert make(nodes=8, gpus_per_node=8, gpus=64).gpus == 64
    assert make(nodes=2, gpus_per_node=4).gpus == 8  # derived when gpus is not written
    assert make(gpus_per_node=8, gpus=64).nodes is None
    assert make(gpus_per_node=0, gpus=0).gpus == 0


def test_command_forms() -> None:
    assert make(command="echo a\necho b").command == "echo a\necho b"
    assert make(command=["python", "train.py", "--lr", "3e-4"]).command == [
        "python",
        "train.py",
        "--lr",
        "3e-4",
    ]


def test_labels_env_image_workdir() -> None:
    w = make(
        labels={"app.kubernetes.io/name": "llm", "tier": "", "x_y.z": "A-1"},
        env={"HF_HOME": "/data/hf", "_X": "multi\nline"},
        image="nvcr.io/nvidia/pytorch:24.01-py3@sha256:abc",
        workdir="/scratch/job",
        port=8080,
        preemptible=True,
    )
    assert w.labels["app.kubernetes.io/name"] == "llm"
    assert w.env["_X"] == "multi\nline"
    assert w.image and w.image.startswith("nvcr.io/")
    assert (w.workdir, w.port, w.preemptible) == ("/scratch/job", 8080, True)


def test_frozen_hashable_and_source_not_compared() -> None:
    a, b = make(labels={"a": "b"}, command=["x"]), make(labels={"a": "b"}, command=["x"])
    a._source = ("a.yaml", 1)
    b._source = ("b.yaml", 9)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a.source == ("a.yaml", 1)
    with pytest.raises(ValidationError):
        a.gpus = 3  # type: ignore[misc]


# ---- every rule has a failing case ----------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["Bad", "a_b", "-a", "a-", "a" * 64, "", "a\nb", "llm\n", "a.b", "ä"]
)
def test_name_must_be_dns_label(name: str) -> None:
    assert "DNS-1123 label" in error_of(name=name)


def test_name_newline_is_shown_escaped() -> None:
    message = error_of(name="ok\n#SBATCH --x")
    assert '"ok\\n#SBATCH --x"' in message


@pytest.mark.parametrize("kind", ["Training", "1x", "a b", "x" * 64, ""])
def test_kind_pattern(kind: str) -> None:
    assert "lowercase word" in error_of(kind=kind)


@pytest.mark.parametrize("team", ["", "a b", "-a", "x" * 64, "a/b"])
def test_team_is_label_value(team: str) -> None:
    assert "label value" in error_of(team=team)


@pytest.mark.parametrize(
    "key", ["#SBATCH", "a b", "-a", "a/", "/a", "Bad_Prefix/x", "x" * 64, "a/b/c", ""]
)
def test_label_keys(key: str) -> None:
    assert "label key" in error_of(labels={key: "v"})


@pytest.mark.parametrize("value", ["#SBATCH --x", "a b", "-a", "x" * 64, "a\nb", "$(id)"])
def test_label_values(value: str) -> None:
    assert "label value" in error_of(labels={"k": value})


def test_label_value_number_says_quote_it() -> None:
    assert 'quote it: "1"' in error_of(labels={"tier": 1})


@pytest.mark.parametrize(
    "image", ["$(rm -rf /)", "a b", "img;id", "img`id`", "a\nb", "-x", "x" * 256, ""]
)
def test_image_rejects_shell_and_space(image: str) -> None:
    assert "container image reference" in error_of(image=image)


@pytest.mark.parametrize(
    ("command", "text"),
    [
        ("a\x00b", "NUL"),
        ("a\rb", "\\r"),
        (["a\nb"], "argument 0"),
        (["ok", "a\x00"], "argument 1 must not contain control characters, found NUL"),
        (["a\r"], "\\r"),
        ([], "non-empty list"),
        ("  ", "must not be empty"),
        (["python", 3], "argument 1 must be a string"),
        ({"a": 1}, "shell command string"),
    ],
)
def test_command_rules(command: Any, text: str) -> None:
    assert text in error_of(command=command)


@pytest.mark.parametrize(
    ("env", "text"),
    [
        ({"1X": "a"}, "environment variable names"),
        ({"A-B": "a"}, "environment variable names"),
        ({"A": "a\x00b"}, "found NUL"),
        ({"A": "a\rb"}, "\\r"),
        ({"A": 1}, "quote it"),
    ],
)
def test_env_rules(env: dict[str, Any], text: str) -> None:
    assert text in error_of(env=env)


@pytest.mark.parametrize(
    ("workdir", "text"),
    [("relative/dir", "absolute path"), ("/a\nb", "control characters"), ("/a\x00", "NUL")],
)
def test_workdir_rules(workdir: str, text: str) -> None:
    assert text in error_of(workdir=workdir)


@pytest.mark.parametrize("gpus", ["eight", True, -1, 1.5, None, "8"])
def test_gpus_must_be_whole(gpus: Any) -> None:
    assert "gpus" in (message := error_of(gpus=gpus))
    assert "must be a whole number ≥ 0" in message


def test_gpus_eight_message() -> None:
    assert 'must be a whole number ≥ 0, got "eight"' in error_of(gpus="eight")


def test_whole_number_upper_bound() -> None:
    assert "must be at most" in error_of(gpus=10**12)


@pytest.mark.parametrize(
    ("field", "value", "text"),
    [
        ("gpu_type", "H100", "lowercase letters"),
        ("gpu_type", "h100 --x", "lowercase letters"),
        ("nodes", 0, "whole number ≥ 1"),
        ("cpus", 0, "whole number ≥ 1"),
        ("gpus_per_node", -1, "whole number ≥ 0"),
        ("memory", "lots", "memory size"),
        ("memory", 0, "more than 0"),
        ("memory", True, "memory size"),
        ("duration", "forever", "duration"),
        ("duration", 0, "longer than 0"),
        ("priority", "urgent", "must be one of low, normal, high, critical"),
        ("priority", 1001, "0..1000"),
        ("priority", -1, "0..1000"),
        ("priority", True, "0..1000"),
        ("port", 0, "whole number ≥ 1"),
        ("port", 65536, "at most 65535"),
        ("preemptible", "yes", "true or false"),
        ("replicas", "3", "number or a mapping"),
        ("replicas", {"min": -1}, "whole number ≥ 0"),
        ("replicas", {"min": 3, "max": 2}, "max (2) must be ≥ min (3)"),
        ("replicas", {"min": 1, "mx": 2}, "Extra inputs"),
    ],
)
def test_field_rules(field: str, value: Any, text: str) -> None:
    message = error_of(**{field: value})
    assert field in message and text in message


def test_priority_did_you_mean() -> None:
    assert 'did you mean "high"' in error_of(priority="hihg")


def test_gpu_shape_rules() -> None:
    assert "nodes × gpus_per_node must equal gpus: 2 × 8 ≠ 12" in error_of(
        nodes=2, gpus_per_node=8, gpus=12
    )
    assert "gpus (12) must be a multiple of gpus_per_node (8)" in error_of(gpus_per_node=8, gpus=12)
    assert "gpus (4) must be a multiple of gpus_per_node (0)" in error_of(gpus_per_node=0, gpus=4)


def test_unknown_field_forbidden() -> None:
    assert "gpu" in error_of(gpu=8)


def test_name_required() -> None:
    with pytest.raises(ValidationError, match="name"):
        Workload.model_validate({})


# ---- schema ---------------------------------------------------------------------------------


def test_workload_schema_accepts_one_or_a_list() -> None:
    schema = json_schema("workload")
    assert schema["oneOf"] == [
        {"$ref": "#/$defs/Workload"},
        {"items": {"$ref": "#/$defs/Workload"}, "type": "array"},
    ]
    props = schema["$defs"]["Workload"]["properties"]
    assert schema["$defs"]["Workload"]["additionalProperties"] is False
    assert {"type": "string"} in props["memory"]["anyOf"]
    assert props["name"]["pattern"] == "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
    assert {"type": "integer"} in props["replicas"]["anyOf"]
    assert "required" not in schema["$defs"]["Replicas"]
    assert json.dumps(schema, sort_keys=True) == json.dumps(json_schema("workload"))
