"""Loading YAML files: good files, and errors that name file, line, column and field path."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest

from router.errors import ErrorGroup, LoadError, RouterError
from router.models import load_inventory, load_workloads
from router.models.loader import MAX_ERRORS, workload_files


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # error messages show the paths as given: relative ones


def write(path: str, text: str) -> str:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load_error(path: str) -> RouterError:
    with pytest.raises(RouterError) as info:
        load_workloads(path)
    return info.value


LLM = """
# the big one
name: llm-pretrain
kind: training
team: nlp
labels: {app: llm}
image: nvcr.io/nvidia/pytorch:24.01-py3
gpus: 64
gpus_per_node: 8
gpu_type: h100
memory: 2TiB
duration: 48h
priority: high
command: |
  torchrun --nproc-per-node 8 train.py
env: {NCCL_DEBUG: INFO}
"""


# ---- good files -----------------------------------------------------------------------------


def test_one_mapping_exact_values() -> None:
    [w] = load_workloads(write("workloads/llm.yaml", LLM))
    assert (w.name, w.kind, w.team, w.gpus, w.gpus_per_node) == (
        "llm-pretrain",
        "training",
        "nlp",
        64,
        8,
    )
    assert (w.memory, w.duration, w.priority) == (2097152, 172800, 4)
    assert w.command == "torchrun --nproc-per-node 8 train.py\n"
    assert w.env == {"NCCL_DEBUG": "INFO"} and w.labels == {"app": "llm"}
    assert w.source == ("workloads/llm.yaml", 2)


def test_list_and_multi_document_keep_file_order() -> None:
    write(
        "w.yaml",
        """
        - name: b
          replicas: 2
        - {name: a, kind: inference, port: 8080}
        ---
        name: c
        ---
        - name: d
        """,
    )
    loaded = load_workloads("w.yaml")
    assert [w.name for w in loaded] == ["b", "a", "c", "d"]
    assert [w.source for w in loaded] == [
        ("w.yaml", 1),
        ("w.yaml", 3),
        ("w.yaml", 5),
        ("w.yaml", 7),
    ]
    assert loaded[0].replicas and loaded[0].replicas.min == 2 and loaded[1].port == 8080


def test_folder_recursive_sorted_by_relative_path() -> None:
    write("wl/b.yaml", "name: b1")
    write("wl/a/z.yml", "name: az")
    write("wl/a.yaml", "[{name: a1}, {name: a2}]")
    write("wl/.hidden/x.yaml", "name: hidden")
    write("wl/.skip.yaml", "name: dot")
    write("wl/notes.txt", "name: txt")
    write("wl/empty.yaml", "# nothing yet\n")
    assert [w.name for w in load_workloads("wl")] == ["a1", "a2", "az", "b1"]
    assert [d for _, d in workload_files("wl")] == [
        "wl/a.yaml",
        "wl/a/z.yml",
        "wl/b.yaml",
        "wl/empty.yaml",
    ]
    assert load_workloads("wl")[2].source == ("wl/a/z.yml", 1)


def test_yaml_details() -> None:
    write(
        "w.yaml",
        """
        base: &base {gpus: 8, gpu_type: a100, labels: {tier: gold}}
        """,
    )
    write(
        "m.yaml",
        """
        - &base {name: one, gpus: 8, gpu_type: a100, duration: "1:30:00"}
        - <<: *base
          name: two
          gpus: 4
        - {name: three, duration: 1:30:00, labels: {"on": "yes"}}
        """,
    )
    one, two, three = load_workloads("m.yaml")
    assert (two.gpus, two.gpu_type, two.duration) == (4, "a100", 5400)  # merge, local wins
    assert one.duration == 5400 and three.duration == 5400  # base-60 stays a clock time
    assert three.labels == {"on": "yes"}


def test_inventory_exact_values() -> None:
    write(
        "inventory.yaml",
        """
        clusters:
          - name: hpc-east
            backend: slurm
            partitions:
              - {name: gpu-h100, nodes: 32, gpus_per_node: 8, gpu_type: h100, cpus_per_node: 96,
                 memory_per_node: 2TiB, max_time: 72h, features: [ib, lustre],
                 cost_per_gpu_hour: 2.5}
          - name: k8s-prod
            backend: kubernetes
            node_pools:
              - {name: a10g, nodes: 8, max_nodes: 32, gpus_per_node: 4, gpu_type: a10g,
                 cpus_per_node: 48, memory_per_node: 192GiB, labels: {pool: a10g},
                 taints: [{key: nvidia.com/gpu, effect: NoSchedule}], cost_per_gpu_hour: 1.0}
        """,
    )
    inv = load_inventory("inventory.yaml")
    assert [t.id for t in inv.targets()] == ["hpc-east/gpu-h100", "k8s-prod/a10g"]
    h100 = inv.target("hpc-east/gpu-h100").target
    assert (h100.memory_per_node, h100.max_time, h100.cost_per_gpu_hour) == (2097152, 259200, 2.5)
    a10g = inv.target("k8s-prod/a10g").target
    assert (a10g.memory_per_node, a10g.capacity_nodes) == (196608, 32)


# ---- errors name file, line and field path --------------------------------------------------


def test_gpus_eight_located() -> None:
    write(
        "workloads/llm.yaml",
        LLM.replace("gpus: 64", "gpus: eight").replace("gpus_per_node: 8\n", ""),
    )
    err = load_error("workloads/llm.yaml")
    assert isinstance(err, LoadError)
    text = str(err)
    assert text.startswith(
        'workloads/llm.yaml:7:7: error: gpus: must be a whole number ≥ 0, got "eight"'
    )
    assert err.line == 7 and err.path == "workloads/llm.yaml"
    assert "    7 | gpus: eight\n" in text and text.endswith("|       ^^^^^")


def test_unknown_field_did_you_mean() -> None:
    write("w.yaml", "name: a\ngpu: 8\n")
    err = load_error("w.yaml")
    assert err.format().startswith('w.yaml:2:1: error: unknown field "gpu"')
    assert 'did you mean "gpus"?' in err.format()


def test_nested_field_path_and_line() -> None:
    write(
        "w.yaml",
        """
        - name: a
        - name: svc
          replicas:
            min: 3
            max: 2
        """,
    )
    text = str(load_error("w.yaml"))
    assert text.startswith("w.yaml:5:10: error: replicas: max (2) must be ≥ min (3)")


def test_cross_field_error_at_gpus() -> None:
    write("w.yaml", "name: a\nnodes: 2\ngpus_per_node: 8\ngpus: 12\n")
    text = str(load_error("w.yaml"))
    assert text.startswith("w.yaml:4:7: error: nodes × gpus_per_node must equal gpus: 2 × 8 ≠ 12")


def test_missing_name() -> None:
    write("w.yaml", "- gpus: 1\n")
    assert str(load_error("w.yaml")).startswith('w.yaml:1:3: error: missing required field "name"')


def test_several_errors_grouped_in_line_order() -> None:
    write(
        "w.yaml",
        """
        - name: a
          gpus: -1
        - name: B
        - name: c
          labels: {"#SBATCH": "--wrap=id", tier: 1}
          priority: hihg
        """,
    )
    err = load_error("w.yaml")
    assert isinstance(err, ErrorGroup)
    lines = [e.format().splitlines()[0] for e in err.errors]
    assert lines == [
        "w.yaml:2:9: error: gpus: must be a whole number ≥ 0, got -1",
        "w.yaml:3:9: error: name: must be a DNS-1123 label (lowercase letters, digits and '-',"
        ' starting and ending with a letter or digit, at most 63 characters), got "B"',
        'w.yaml:5:12: error: labels."#SBATCH": label key must be an optional DNS subdomain'
        " prefix and '/', then a name of at most 63 letters, digits, '-', '_' or '.' starting"
        ' and ending with a letter or digit; got "#SBATCH"',
        'w.yaml:5:23: error: labels."#SBATCH": must be empty or a label value (letters, digits,'
        " '-', '_' and '.', starting and ending with a letter or digit, at most 63 characters),"
        ' got "--wrap=id"',
        'w.yaml:5:42: error: labels.tier: must be a string; quote it: "1"',
        "w.yaml:6:13: error: priority: must be one of low, normal, high, critical or a whole"
        ' number 0..1000, got "hihg"; did you mean "high"?',
    ]
    assert "2 errors" not in err.format() and err.message == "6 errors"


def test_errors_from_several_files_are_collected() -> None:
    write("wl/a.yaml", "name: a\ngpus: x\n")
    write("wl/b.yaml", "name: b\ncpus: 0\n")
    err = load_error("wl")
    assert isinstance(err, ErrorGroup)
    assert [e.location() for e in err.errors] == ["wl/a.yaml:2:7", "wl/b.yaml:2:7"]


def test_error_count_is_capped() -> None:
    write("w.yaml", "".join(f"- {{name: w{i}, gpus: x}}\n" for i in range(MAX_ERRORS + 5)))
    err = load_error("w.yaml")
    assert isinstance(err, ErrorGroup) and len(err.errors) == MAX_ERRORS + 1
    assert err.errors[-1].message == "... and 5 more errors"


def test_duplicate_names_name_both_places() -> None:
    write("wl/a.yaml", "name: x\n")
    write("wl/b.yaml", "- name: y\n- name: x\n")
    text = str(load_error("wl"))
    assert text.startswith(
        'wl/b.yaml:2:9: error: duplicate workload name "x"; first defined at wl/a.yaml:1'
    )


def test_yaml_syntax_error_location() -> None:
    write("w.yaml", "name: a\nlabels: {a: b\ngpus: 1\n")
    err = load_error("w.yaml")
    assert isinstance(err, LoadError)
    assert err.format().startswith("w.yaml:3:5: error: invalid YAML:")
    assert "flow mapping at line 2" in (err.hint or "")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: a\nname: b\n", 'w.yaml:2:1: error: the key "name" is written twice'),
        (
            "name: !!python/object/apply:os.system [id]\n",
            'unsupported YAML tag "tag:yaml.org,2002:python/object/apply:os.system"',
        ),
        ("name: a\nlabels: !!set {a}\n", 'unsupported YAML tag "tag:yaml.org,2002:set"'),
        ("? [a]\n: b\nname: c\n", "w.yaml:1:3: error: mapping keys must be plain names"),
        ("name: a\non: true\n", 'unknown field "on"'),
        (
            "just text\n",
            'w.yaml:1:1: error: expected a workload (a mapping with name:), got "just text"',
        ),
        ("- 3\n", "expected a workload"),
        ("name: a\n<<: 3\n", "a merge key (<<) takes a mapping"),
    ],
)
def test_yaml_level_errors(text: str, message: str) -> None:
    write("w.yaml", text)
    assert message in str(load_error("w.yaml"))


def test_hostile_strings_rejected() -> None:
    write(
        "w.yaml",
        r"""
        - name: "ok\n#SBATCH --uid=0"
        - name: b
          labels: {team: "#SBATCH --uid=0"}
        - name: c
          image: $(rm -rf /)
        - name: d
          env: {A: "x\ry"}
        - name: e
          command: ["a\nb"]
        """,
    )
    err = load_error("w.yaml")
    assert isinstance(err, ErrorGroup)
    heads = [e.format().splitlines()[0] for e in err.errors]
    assert heads[0].startswith("w.yaml:1:9: error: name: must be a DNS-1123 label")
    assert heads[0].endswith('got "ok\\n#SBATCH --uid=0"')  # escaped: no raw newline
    assert heads[1].startswith("w.yaml:3:18: error: labels.team: must be empty or a label value")
    assert heads[2].startswith("w.yaml:5:10: error: image: must be a container image reference")
    assert heads[3] == "w.yaml:7:12: error: env.A: must not contain control characters, found \\r"
    assert heads[4].startswith("w.yaml:9:3: error: command: argument 0 must not contain")


def test_nul_in_env_rejected() -> None:
    write("w.yaml", 'name: a\nenv: {A: "x\\0y"}\n')
    err = load_error("w.yaml")
    assert err.path == "w.yaml" and err.line == 2  # libyaml refuses it; PyYAML reaches our check
    assert "control characters" in err.message or "NUL" in err.message


def test_aliases_do_not_explode() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    write("w.yaml", "\n".join(["- name: w", "  labels:", *("    " + s for s in lines)]) + "\n")
    start = time.perf_counter()
    err = load_error("w.yaml")
    assert time.perf_counter() - start < 2
    assert "labels.a0: must be a string" in str(err)


def test_missing_path_and_bad_encoding() -> None:
    with pytest.raises(LoadError, match="no such file or folder: nope"):
        load_workloads("nope")
    Path("latin.yaml").write_bytes(b"name: a\nteam: caf\xe9\n")
    err = load_error("latin.yaml")
    assert err.location() == "latin.yaml:2:10" and "not UTF-8" in err.message  # the byte


# ---- inventory errors -----------------------------------------------------------------------

INVENTORY = """
clusters:
  - name: hpc
    backend: slurm
    partitions:
      - name: gpu
        nodes: 4
        gpus_per_node: 8
        cpus_per_node: 64
        memory_per_node: 1TiB
"""


def inventory_error(text: str) -> RouterError:
    write("inventory.yaml", text)
    with pytest.raises(RouterError) as info:
        load_inventory("inventory.yaml")
    return info.value


def test_inventory_error_path_and_line() -> None:
    err = inventory_error(INVENTORY)
    assert err.format().startswith(
        "inventory.yaml:7:24: error: clusters[0].partitions[0]: gpus_per_node is 8:"
        " a target with GPUs must state gpu_type"
    )
    assert "gpu_type: any for GPUs of no stated type" in err.format()


def test_inventory_literal_and_unknown() -> None:
    text = INVENTORY.replace("slurm", "slrum").replace(
        "nodes: 4", "nodes: 4\n        gpu_typ: h100"
    )
    err = inventory_error(text)
    assert isinstance(err, ErrorGroup)
    first, second = (e.format() for e in err.errors)
    assert first.startswith(
        'inventory.yaml:3:14: error: clusters[0].backend: must be one of "slurm", "kubernetes",'
        ' got "slrum"'
    )
    assert 'did you mean "slurm"?' in first
    assert second.startswith(
        'inventory.yaml:7:9: error: clusters[0].partitions[0]: unknown field "gpu_typ"'
    )
    assert 'did you mean "gpu_type"?' in second


def test_inventory_backend_mismatch_points_at_key() -> None:
    text = INVENTORY.replace("backend: slurm", "backend: kubernetes")
    err = inventory_error(text + "        gpu_type: h100\n")
    assert err.format().startswith(
        "inventory.yaml:4:5: error: clusters[0]: a kubernetes cluster has node_pools,"
        " not partitions"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "this one is empty"),
        ("clusters: []\n---\nclusters: []\n", "holds 2 YAML documents"),
        ("- clusters\n", "an inventory is a mapping with clusters:"),
        ("{}\n", 'missing required field "clusters"'),
        ("clusters: {a: 1}\n", "clusters: must be a list"),
    ],
)
def test_inventory_file_shape(text: str, message: str) -> None:
    assert message in str(inventory_error(text))
