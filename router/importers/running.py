"""What is already running → the running-work YAML (`running:`) that `router plan` packs around.

Pure: the caller runs `squeue --json` or `kubectl get pods -A -o json` (or reads a saved copy);
this turns it into one item per job node or per pod, by node name:
`{cluster: hpc, node: gpu-007, gpus: 4, cpus: 32, memory: 256GiB, job: "12345"}`, or
`{cluster: hpc, node: gpu-008, whole: true, job: "12346"}` for a job that has its node to itself.
Same data, same bytes: items sorted, no timestamps.

Slurm (`squeue --json`, Slurm 21.08 to 25.x). Jobs that hold resources count: RUNNING,
COMPLETING, CONFIGURING and SUSPENDED (a suspended job keeps its memory and GPUs). Per node:
* nodes and their CPUs and memory from `job_resources`, whose layout changed twice:
  21.08 `allocated_nodes` is a mapping {"0": {cpus, memory}} indexed into the `nodes`
  hostlist; 22.05 to 23.11 a list [{nodename, memory_allocated, cpus_used, sockets}]
  (22.05 reports cpus_used 0, so the allocated cores in `sockets` count, scaled to the job's
  `cpus` when threads make them differ); 24.05 on `nodes.allocation` [{name, cpus.count,
  memory.allocated}]. Numbers may come bare or as {set, infinite, number}.
* GPUs from `gres_detail`, one entry per node in the same order ("gpu:h100:3(IDX:0-2)"); a GRES
  type that is a MIG profile ("gpu:1g.10gb:2", "gpu:a100_1g.10gb:2") is that many slices.
  Without gres_detail, `tres_per_node` ("gres:gpu:h100:3") or `tres_alloc_str`'s gres/gpu
  spread evenly.
* whole: `--exclusive` jobs (`shared: "none"`, or `exclusive` naming anything but false): the
  node is theirs, whatever they use of it.
Job ids are "123", array tasks "120_3", heterogeneous components "200+1".

Kubernetes (`kubectl get pods -A -o json`): pods bound to a node (`spec.nodeName`) that have not
ended (phase not Succeeded or Failed), with the scheduler's own sum of requests: the containers'
requests plus restartable init containers (sidecars), or the largest init container if more,
plus `spec.overhead`; a resource given only as a limit is requested at the limit (what the API
server defaults). `nvidia.com/gpu` are whole GPUs, `nvidia.com/mig-<profile>` MIG slices. CPUs
and memory are rounded up per node, not per pod: each pod's share is the increase of the
rounded-up running total over the pods on its node in name order, so ten 100m daemon pods
count one CPU, not ten.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import yaml

from router.errors import LoadError
from router.hostlist import expand
from router.importers import one_line
from router.quantity import format_memory

HOLDS_RESOURCES = {"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"}
MIG_TYPE = re.compile(r"(?:^|[_-])(\d+g\.\d+gb)$")
GRES = re.compile(r"([A-Za-z0-9_]+)(?::([^:(,]+))?:(\d+)(?:\([^)]*\))?")
GPU = "nvidia.com/gpu"
MIG_RESOURCE = "nvidia.com/mig-"


@dataclass
class ImportedRunning:
    """Running-work items (one per job node or pod) and where they came from."""

    items: list[dict[str, Any]]
    source: list[str]
    notes: list[str] = field(default_factory=list)


def render_running(imported: ImportedRunning) -> str:
    """The running YAML: a comment header, then `running:` with one flow mapping per item."""
    out = [f"# {one_line(line)}" for line in imported.source]
    out += [f"# note: {one_line(n)}" for n in imported.notes]
    items = sorted(imported.items, key=lambda i: (i["cluster"], i["node"], i["job"]))
    out.append("running:" if items else "running: []")
    for item in items:
        text: str = yaml.safe_dump(
            item, default_flow_style=True, sort_keys=False, width=10_000, allow_unicode=True
        )
        out.append(f"  - {text.strip()}")
    return "\n".join(out) + "\n"


# --- Slurm ------------------------------------------------------------------------------------


def _number(value: Any) -> int | None:
    """A Slurm number: bare, or {set, infinite, number} (unset or infinite: None)."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def expand_hostlist(text: str) -> list[str]:
    """Slurm hostlist "gpu-[001-003,007],cpu1" → names, zero padding kept."""
    return expand(text)


def _states(job: dict[str, Any]) -> set[str]:
    state = job.get("job_state")
    return {state} if isinstance(state, str) else set(state or [])


def _job_id(job: dict[str, Any]) -> str:
    jid = _number(job.get("job_id"))
    array, task = _number(job.get("array_job_id")), _number(job.get("array_task_id"))
    if array and task is not None:
        return f"{array}_{task}"
    het, offset = _number(job.get("het_job_id")), _number(job.get("het_job_offset"))
    if het and offset is not None and het != jid:
        return f"{het}+{offset}"
    return str(jid)


def _whole(job: dict[str, Any]) -> bool:
    shared = job.get("shared")
    if shared == "none" or (isinstance(shared, list) and "none" in shared):
        return True
    exclusive = job.get("exclusive")
    return isinstance(exclusive, list) and any(e not in ("false", "") for e in exclusive)


def _allocated_cores(sockets: Any) -> int:
    """Allocated cores in a 22.05-23.11 `sockets` map {socket: {cores: {core: state}}}."""
    if not isinstance(sockets, dict):
        return 0
    count = 0
    for sock in sockets.values():
        cores = sock.get("cores", {}) if isinstance(sock, dict) else {}
        count += sum(1 for s in cores.values() if str(s).startswith("allocated"))
    return count


def _job_nodes(job: dict[str, Any], where: str) -> list[tuple[str, int, int]]:
    """(node name, CPUs, memory MiB) of each node the job holds."""
    res = job.get("job_resources")
    if not isinstance(res, dict):
        raise LoadError(
            f"{where}: a running job without job_resources; expected the nodes "
            "it holds (is this `squeue --json` output?)"
        )
    cpus = _number(job.get("cpus")) or 0
    nodes = res.get("nodes")
    if isinstance(nodes, dict):  # 24.05 on
        alloc = nodes.get("allocation") or []
        return [
            (
                str(a["name"]),
                _number(a.get("cpus", {}).get("count")) or 0,
                _number(a.get("memory", {}).get("allocated")) or 0,
            )
            for a in alloc
        ]
    allocated = res.get("allocated_nodes")
    if isinstance(allocated, dict):  # 21.08: indexed into the hostlist
        names = expand_hostlist(str(nodes or job.get("nodes") or ""))
        out = []
        for key in sorted(allocated, key=int):
            a = allocated[key]
            out.append(
                (names[int(key)], _number(a.get("cpus")) or 0, _number(a.get("memory")) or 0)
            )
        return out
    if isinstance(allocated, list):  # 22.05 to 23.11
        rows = []
        for a in allocated:
            used = _number(a.get("cpus_used")) or 0
            rows.append(
                (
                    str(a["nodename"]),
                    used or _allocated_cores(a.get("sockets")),
                    _number(a.get("memory_allocated")) or 0,
                )
            )
        counted = sum(c for _, c, _ in rows)
        if cpus and counted and counted != cpus and cpus % counted == 0:
            rows = [(n, c * (cpus // counted), m) for n, c, m in rows]  # threads per core
        elif len(rows) == 1 and cpus:
            rows = [(rows[0][0], cpus, rows[0][2])]
        return rows
    raise LoadError(
        f"{where}: job_resources has no allocated nodes; expected `allocated_nodes`"
        " (Slurm 21.08-23.11) or `nodes.allocation` (24.05 and later)"
    )


def _gres(text: str) -> tuple[int, dict[str, int]]:
    """(whole GPUs, {MIG profile: slices}) in one node's GRES text."""
    gpus, slices = 0, dict[str, int]()
    for m in GRES.finditer(text.removeprefix("gres:").replace("gres/", "")):
        name, kind, count = m.group(1), m.group(2), int(m.group(3))
        if name != "gpu":
            continue
        mig = MIG_TYPE.search(kind or "")
        if mig:
            slices[mig.group(1)] = slices.get(mig.group(1), 0) + count
        else:
            gpus += count
    return gpus, slices


def _gpus_per_node(job: dict[str, Any], count: int) -> list[tuple[int, dict[str, int]]]:
    detail = job.get("gres_detail") or []
    if len(detail) == count:
        return [_gres(str(d)) for d in detail]
    per_node = str(job.get("tres_per_node") or "")
    if per_node:
        return [_gres(per_node)] * count
    m = re.search(r"gres/gpu=(\d+)", str(job.get("tres_alloc_str") or ""))
    total = int(m.group(1)) if m else 0
    return [(total // count + (1 if i < total % count else 0), {}) for i in range(count)]


def running_from_squeue(
    data: Any, *, cluster: str | None = None, source: str = "`squeue --json`"
) -> ImportedRunning:
    """The running-work items of `squeue --json` output (see the module docstring)."""
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise LoadError(
            f'{source}: expected `squeue --json` output, a JSON object with a "jobs" list',
            hint="save it with: squeue --json > squeue.json",
        )
    items: list[dict[str, Any]] = []
    skipped = 0
    for i, job in enumerate(data["jobs"]):
        if not isinstance(job, dict):
            raise LoadError(f"{source}: jobs[{i}] is not a job object")
        if not _states(job) & HOLDS_RESOURCES:
            skipped += 1
            continue
        jid = _job_id(job)
        where = f"{source}: jobs[{i}] (job {jid})"
        name = cluster or _cluster_of(data, job, where)
        try:
            nodes = _job_nodes(job, where)
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as e:
            raise LoadError(f"{where}: job_resources is not as Slurm writes it ({e})") from None
        whole = _whole(job)
        for (node, cpus, memory), (gpus, slices) in zip(
            nodes, _gpus_per_node(job, len(nodes)), strict=True
        ):
            item: dict[str, Any] = {"cluster": name, "node": node}
            if whole:
                item["whole"] = True
            else:
                if gpus:
                    item["gpus"] = gpus
                if slices:
                    item["mig"] = dict(sorted(slices.items()))
                item |= {"cpus": cpus, "memory": format_memory(memory)}
            items.append(item | {"job": jid})
    version = _release(data)
    head = [
        f"Running work from {source}" + (f" (Slurm {version})" if version else "") + ".",
        f"{len(items)} job nodes of running jobs; {skipped} jobs not running left out.",
    ]
    return ImportedRunning(items, head)


def _release(data: dict[str, Any]) -> str:
    meta = data.get("meta") or {}
    slurm = meta.get("Slurm") or meta.get("slurm") or {}
    release = slurm.get("release") if isinstance(slurm, dict) else None
    return str(release) if release and release != "release" else ""


def _cluster_of(data: dict[str, Any], job: dict[str, Any], where: str) -> str:
    meta = data.get("meta") or {}
    slurm = meta.get("slurm") or {}
    name = job.get("cluster") or (slurm.get("cluster") if isinstance(slurm, dict) else None)
    if not name:
        raise LoadError(
            f"{where}: no cluster name in the data",
            hint="name the inventory's cluster with --cluster NAME",
        )
    return str(name)


# --- Kubernetes -------------------------------------------------------------------------------


def _quantity(value: Any, where: str) -> Decimal:
    from router.importers.kubernetes import parse_quantity

    try:
        return parse_quantity(value)
    except ValueError as e:
        raise LoadError(f"{where}: {e}; expected a quantity such as 500m, 2 or 16Gi") from None


def _requests(container: dict[str, Any], where: str) -> dict[str, Decimal]:
    res = container.get("resources") or {}
    merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}
    return {k: _quantity(v, f"{where}: {k}") for k, v in merged.items()}


def _add(a: dict[str, Decimal], b: dict[str, Decimal]) -> dict[str, Decimal]:
    return {k: a.get(k, Decimal(0)) + b.get(k, Decimal(0)) for k in a.keys() | b.keys()}


def pod_requests(pod: dict[str, Any], where: str) -> dict[str, Decimal]:
    """The scheduler's view of what a pod requests (see the module docstring)."""
    spec = pod.get("spec") or {}
    total: dict[str, Decimal] = {}
    for c in spec.get("containers") or []:
        total = _add(total, _requests(c, where))
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for c in spec.get("initContainers") or []:
        req = _requests(c, where)
        if c.get("restartPolicy") == "Always":
            sidecars = _add(sidecars, req)
        else:
            during = _add(req, sidecars)
            init_peak = {
                k: max(init_peak.get(k, Decimal(0)), during.get(k, Decimal(0)))
                for k in init_peak.keys() | during.keys()
            }
    total = _add(total, sidecars)
    total = {
        k: max(total.get(k, Decimal(0)), init_peak.get(k, Decimal(0)))
        for k in total.keys() | init_peak.keys()
    }
    overhead = {
        k: _quantity(v, f"{where}: overhead {k}") for k, v in (spec.get("overhead") or {}).items()
    }
    return _add(total, overhead)


def running_from_pods(
    data: Any, *, cluster: str = "kubernetes", source: str = "`kubectl get pods -A -o json`"
) -> ImportedRunning:
    """The running-work items of a pod list (see the module docstring)."""
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise LoadError(
            f"{source}: expected `kubectl get pods -o json` output, a JSON object "
            'with an "items" list of pods',
            hint="save it with: kubectl get pods -A -o json > pods.json",
        )
    per_node: dict[str, list[tuple[str, dict[str, Decimal]]]] = {}
    skipped = 0
    for i, pod in enumerate(data["items"]):
        if not isinstance(pod, dict) or pod.get("kind", "Pod") != "Pod":
            raise LoadError(f"{source}: items[{i}] is not a Pod")
        meta = pod.get("metadata") or {}
        name = f"{meta.get('namespace', 'default')}/{meta.get('name', '?')}"
        node = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if not node or phase in ("Succeeded", "Failed"):
            skipped += 1
            continue
        per_node.setdefault(str(node), []).append(
            (name, pod_requests(pod, f"{source}: items[{i}] ({name})"))
        )
    items: list[dict[str, Any]] = []
    for node, pods in sorted(per_node.items()):
        cpu_total = mem_total = Decimal(0)
        cpus_before = mem_before = 0
        for name, req in sorted(pods):
            cpu_total += req.get("cpu", Decimal(0))
            mem_total += req.get("memory", Decimal(0))
            cpus_now = math.ceil(cpu_total)
            mem_now = math.ceil(mem_total / (1024 * 1024))
            item: dict[str, Any] = {"cluster": cluster, "node": node}
            gpus = math.ceil(req.get(GPU, Decimal(0)))
            if gpus:
                item["gpus"] = gpus
            mig = {
                k.removeprefix(MIG_RESOURCE): math.ceil(v)
                for k, v in sorted(req.items())
                if k.startswith(MIG_RESOURCE) and v
            }
            if mig:
                item["mig"] = mig
            item |= {
                "cpus": cpus_now - cpus_before,
                "memory": format_memory(mem_now - mem_before),
                "job": name,
            }
            cpus_before, mem_before = cpus_now, mem_now
            items.append(item)
    head = [
        f"Running work from {source}.",
        f"{len(items)} pods bound to nodes; {skipped} pods unscheduled or ended left out.",
    ]
    return ImportedRunning(items, head)
