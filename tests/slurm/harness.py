"""A real single-host Slurm cluster for tests (Debian 12 `slurm-wlm` + `munge`, Slurm 22.05).

`SlurmCluster` writes a private slurm.conf / gres.conf / cgroup.conf, starts a private `munged`,
`slurmctld` and ONE `slurmd` as root, and offers small helpers to submit and read back jobs.
Nothing under /etc/slurm or /run/munge is read or written: every client and daemon gets
`SLURM_CONF` (see `SlurmCluster.env`) and the munge socket is named by `AuthInfo=socket=...`.

Layout. Each partition gets its own nodes `<partition>-n1 .. -nN` (name sanitized). Only the
first node of `run_node_partition` has a slurmd (`slurmd -N NAME`, `NodeHostname=$(hostname)`,
`NodeAddr=127.0.0.1`); with `SlurmdParameters=config_overrides` it claims the configured CPUs,
RealMemory (2 TiB is fine) and GPUs. The other nodes are defined `State=DOWN` on a port where
nothing listens, so the controller never mistakes the one slurmd for them.

Facts verified on Debian 12 / Slurm 22.05.8 with this harness (tests in test_harness.py):

* Acceptance. `sbatch --hold` skips Slurm's resource check entirely: impossible GRES, features,
  memory or CPUs are accepted and sit PENDING (Reason=JobHeldUser). A job that is not held
  (or only deferred with `--begin`) is checked against the partition's *defined* nodes, DOWN
  ones included: 8 or 16 nodes of a 16-node partition with one live node is accepted (PENDING,
  Reason=ReqNodeNotAvail), while `--gres=gpu:a100:1` on an h100 partition, 9 GPUs on 8-GPU
  nodes, a missing feature, more memory or CPUs than a node has are rejected with "Requested
  node configuration is not available". So `sbatch(hold=True)` defers with
  `--begin=now+365days` by default (validate=True). With EnforcePartLimits=ALL, partition
  limits are checked in every mode: more nodes than the partition has -> "Node count
  specification invalid", more than MaxTime -> "Requested time limit is invalid (missing or
  exceeds some limit)". `sbatch --test-only` is useless here (fails whenever nodes are down).
* Absent nodes are `State=DOWN Reason=absent`: sinfo lists them ("down"), as an inventory
  import expects. FUTURE nodes would also be accepted against but vanish from sinfo.
* GPUs need gres.conf `File=` lines (Debian's build has no NVML and drops file-less GPUs with
  "Removing file-less GPU"). Empty regular files work; slurmd logs "is not a valid character
  or block device" for each and keeps the count, but sets no CUDA_VISIBLE_DEVICES. Symlinks
  to /dev/null pass as character devices: steps then get CUDA_VISIBLE_DEVICES (their GPUs'
  indices in gres.conf order), as multinode.py's nodes do (`gpu_gres(null_devices=True)`).
* No slurmdbd (AccountingStorageType=accounting_storage/none, AccountingStorageEnforce unset):
  `--account=foo` is accepted and reads back as `Account=foo`; `--qos=high` is accepted but
  there is no QOS table, so the job shows `QOS=(null)`: check a QOS in the script text.
  `AccountingStorageTRES=gres/gpu` is fatal without slurmdbd ("slurmdbd is required to run
  with TRES gres/gpu"), so a job's `TRES=` never mentions GPUs (`cpu=16,mem=1600M,node=16,
  billing=16`). `sacct` does not work; state comes from `scontrol show job`, and MinJobAge=600
  keeps finished jobs visible for ten minutes.
* Typed GPUs read back as: `--gres=gpu:h100:8` and `--gpus-per-node=h100:8` ->
  `TresPerNode=gres:gpu:h100:8`; `--gpus=h100:16` -> `TresPerJob=gres:gpu:h100:16`.
  Untyped GPUs (gres.conf `Name=gpu File=...` without Type=, node `Gres=gpu:4`): sinfo shows
  `gres: "gpu:4"`; `--gpus-per-node=4` and `--gres=gpu:4` read back as `TresPerNode=gres:gpu:4`,
  while a typed request there (`--gpus-per-node=h100:4`) is rejected like a missing type.
* `--exclusive` reads back as `OverSubscribe=NO`; without it `OverSubscribe=OK`.
* `srun --mpi=list` offers pmix (pmix_v4), none, cray_shasta, pmi2. `srun --mpi=pmix` needs
  libpmix-dev (the plugin dlopen()s the unversioned libpmix.so), which .ci/slurm-setup.sh installs.
* No pyxis: `sbatch --container-image=...` fails: "unrecognized option '--container-image=...'".
* `sinfo --json` works (22.05 lists nodes only, no partition limits: see `show_partitions()`);
  `scontrol --json` does not exist in 22.05.
* Timing: start ~0.3 s; the first job after a start waits ~3 s for the first scheduling pass,
  later ones start at once (batch_sched_delay=0). Several clusters can run side by side (ports
  and folders are private), but each needs root.

`show_job()` parses the one-line `scontrol show job -o` output (see `parse_scontrol_line`);
`scontrol --json` does not work in 22.05 and `sinfo --json` does.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Daemons and clients the harness needs; `missing_binaries()` reports the absent ones.
REQUIRED_BINARIES = (
    "munged",
    "mungekey",
    "slurmctld",
    "slurmd",
    "sbatch",
    "scontrol",
    "sinfo",
    "squeue",
    "scancel",
)

TERMINAL_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
    }
)


@dataclass
class PartitionSpec:
    name: str
    nodes: int
    gpus_per_node: int
    gpu_type: str | None
    cpus_per_node: int
    memory_mb: int
    max_time_minutes: int | None = None
    features: list[str] = field(default_factory=list)
    default: bool = False
    #: MIG slices per node beside the whole GPUs: {GRES type: count}, e.g.
    #: {"nvidia_a100_1g.10gb": 14} (a typed GRES of its own, one empty device file per slice)
    mig: dict[str, int] = field(default_factory=dict)

    @property
    def router_gpu_type(self) -> str | None:
        """The inventory's gpu_type for this partition: untyped GPUs are `any`."""
        return self.gpu_type or ("any" if self.gpus_per_node else None)

    def node_prefix(self) -> str:
        # Node names are hostnames: lower-case letters, digits and '-'.
        return re.sub(r"[^a-z0-9-]+", "-", self.name.lower()).strip("-") or "p"

    def node_names(self) -> list[str]:
        return [f"{self.node_prefix()}-n{i}" for i in range(1, self.nodes + 1)]

    def node_range(self) -> str:
        return (
            f"{self.node_prefix()}-n[1-{self.nodes}]"
            if self.nodes > 1
            else f"{self.node_prefix()}-n1"
        )


#: The session cluster's layout (tests/slurm/conftest.py): partitions large enough that held
#: 8- and 16-node jobs fit their node definitions; only gpu-h100-n1 has a running slurmd.
#: gpu-plain has untyped GPUs (gres.conf `Name=gpu File=...` without Type=, `Gres=gpu:4`).
ROUTERTEST_PARTITIONS: tuple[PartitionSpec, ...] = (
    PartitionSpec("gpu-h100", 16, 8, "h100", 96, 2 * 1024 * 1024, 72 * 60, ["ib", "lustre"]),
    PartitionSpec("gpu-a100", 8, 8, "a100", 64, 1024 * 1024, 48 * 60, ["ib"]),
    PartitionSpec("gpu-plain", 2, 4, None, 32, 256 * 1024, 24 * 60),
    PartitionSpec("cpu", 4, 0, None, 64, 256 * 1024, 24 * 60, ["avx512"], default=True),
)


class SlurmError(RuntimeError):
    """A Slurm daemon or command failed; the message carries its output and log tails."""


def missing_binaries() -> list[str]:
    return [
        b
        for b in REQUIRED_BINARIES
        if shutil.which(b) is None and not Path("/usr/sbin", b).exists()
    ]


def parse_scontrol_line(line: str) -> dict[str, str]:
    """Parse one `scontrol show ... -o` line into key=value pairs (router's own parser, which
    the inventory importer uses: values may hold '=' and spaces; padding is stripped)."""
    from router.importers.slurm import parse_scontrol_lines

    records = parse_scontrol_lines(line)
    return records[0] if records else {}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _alive(pidfile: Path) -> bool:
    """False only when the pid file names a process that is gone (no file yet: still starting)."""
    try:
        return _pid_alive(int(pidfile.read_text().strip()))
    except (OSError, ValueError):
        return True


def _kill_pidfiles(pidfiles: Sequence[Path], timeout: float = 1.5) -> None:
    """SIGTERM every daemon at once, SIGKILL what outlives `timeout`.

    A clean shutdown takes ~0.3 s, but slurmctld then waits ~3 s for its agent that keeps
    retrying the absent nodes ("Dropped 1 hung communications to shutdown"); its state is
    about to be deleted, so it is not worth the wait.
    """
    pids: list[int] = []
    for pidfile in pidfiles:
        with contextlib.suppress(OSError, ValueError):
            pids.append(int(pidfile.read_text().strip()))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + timeout
        while pids and time.monotonic() < deadline:
            pids = [pid for pid in pids if _pid_alive(pid)]
            time.sleep(0.05)
        if not pids:
            return


def kill_strays(conf: Path) -> list[int]:
    """SIGKILL what still runs under the cluster of `conf` once its daemons are gone: the
    slurmstepd of a job that outlived its test (init has them, not slurmd) and the job's
    processes, found by SLURM_CONF=<conf> in their environment. A timed-out MPI job's ranks
    were seen spinning both cores for 50 minutes after their cluster stopped. Returns the pids."""
    mark = f"SLURM_CONF={conf}".encode()
    killed: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if mark in env:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
    return killed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A daemon that exited may linger as a zombie until init reaps it: that is gone too.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


# ---- what both test clusters share (this one and multinode.py's two-node cluster) -----------

#: slurm.conf settings of every test cluster: root daemons, munge, no cgroups, systemd or
#: accounting (containers and CI have none), cons_tres over cores and memory, and a scheduler
#: that starts jobs at once.
COMMON_SETTINGS = (
    "SlurmUser=root",
    "SlurmdUser=root",
    "AuthType=auth/munge",
    "CredType=cred/munge",
    "SlurmctldDebug=info",
    "SlurmdDebug=info",
    # No cgroups and no systemd in containers/CI: track processes by /proc.
    "ProctrackType=proctrack/linuxproc",
    "TaskPlugin=task/none",
    "JobAcctGatherType=jobacct_gather/none",
    "AccountingStorageType=accounting_storage/none",
    "JobCompType=jobcomp/none",
    "MailProg=/bin/true",  # Debian's default /usr/bin/mail is usually absent
    "MpiDefault=none",
    "SelectType=select/cons_tres",
    "SelectTypeParameters=CR_Core_Memory",
    "DefMemPerCPU=100",
    "SlurmdParameters=config_overrides",  # a host claims any configured CPUs/memory/GPUs
    "ReturnToService=2",
    "MinJobAge=600",  # finished jobs stay visible to scontrol (no sacct here)
    "SchedulerType=sched/backfill",
    # Start batch jobs as soon as they are submitted or released (default delay: up to 3 s).
    "SchedulerParameters=batch_sched_delay=0,sched_interval=1",
    "SlurmctldTimeout=30",
    "InactiveLimit=0",
    "KillWait=2",
    "Waittime=0",
)


def write_slurm_conf(
    workdir: Path,
    rundir: Path,
    *,
    generated_by: str,
    cluster: str,
    ctld_addr: str,
    ports: tuple[int, int],
    nodes: Sequence[str],
    partitions: Sequence[str],
    per_node: bool = False,
    settings: Sequence[str] = (),
) -> Path:
    """Write workdir/etc/slurm.conf (+ an empty plugstack.conf and a cgroup.conf that uses no
    cgroups) for a private test cluster whose controller listens on `ctld_addr`; `ports` are
    slurmctld's and slurmd's. Daemon files live under workdir (state, logs, controller pid)
    and the short rundir (munge socket, slurmd spool: Unix socket paths are limited to 108
    bytes). `per_node`: several slurmd on one host, so the spool, slurmd pid and log files and
    TmpFS are per node (`%n`; the pmix plugin's `spmix_appdir_*` collide on a shared /tmp).
    `settings` are the cluster's own extra lines; `nodes` and `partitions` its NodeName= and
    PartitionName= lines. Returns the slurm.conf path."""
    etc, state, logs = workdir / "etc", workdir / "state", workdir / "log"
    for d in (etc, state, logs):
        d.mkdir(parents=True, exist_ok=True)
    spool = rundir / "spool"
    spool.mkdir(exist_ok=True)
    host = socket.gethostname().split(".")[0]
    node_files = [f"SlurmdSpoolDir={spool}", f"SlurmdPidFile={workdir / 'slurmd.pid'}",
                  f"SlurmdLogFile={logs / 'slurmd.log'}"]  # fmt: skip
    if per_node:
        node_files = [f"SlurmdSpoolDir={spool}/%n", f"TmpFS={rundir / 'tmp'}/%n",
                      f"SlurmdPidFile={rundir}/slurmd-%n.pid",
                      f"SlurmdLogFile={logs}/slurmd-%n.log"]  # fmt: skip
    lines = [
        f"# Generated by {generated_by}",
        f"ClusterName={cluster}",
        f"SlurmctldHost={host}({ctld_addr})",
        f"SlurmctldPort={ports[0]}",
        f"SlurmdPort={ports[1]}",
        f"AuthInfo=socket={rundir / 'munge' / 'munge.sock'}",
        f"StateSaveLocation={state}",
        f"SlurmctldPidFile={workdir / 'slurmctld.pid'}",
        f"SlurmctldLogFile={logs / 'slurmctld.log'}",
        *node_files,
        f"PlugStackConfig={etc / 'plugstack.conf'}",  # not /etc/slurm's
        *COMMON_SETTINGS,
        *settings,
        "",
        *nodes,
        *partitions,
    ]
    conf = etc / "slurm.conf"
    conf.write_text("\n".join(lines) + "\n")
    # slurmd reads cgroup.conf next to slurm.conf if it exists; nothing here uses cgroups.
    (etc / "cgroup.conf").write_text(
        "CgroupAutomount=no\nConstrainCores=no\nConstrainRAMSpace=no\n"
    )
    (etc / "plugstack.conf").write_text("")
    return conf


def gpu_gres(
    nodes: str,
    devdir: Path,
    kinds: Sequence[tuple[str | None, int, str]],
    null_devices: bool = False,
) -> tuple[str, list[str]]:
    """GPUs for a node line: its `Gres=` value (`gpu:a100:1,gpu:nvidia_a100_1g.10gb:7`) and the
    gres.conf lines of `nodes`, for `kinds` of (GRES type or None for untyped, count per node,
    file stem). Each GPU is a file `devdir/<stem><i>` (no NVML here: file-less GPUs are
    dropped): empty, which keeps the count, or with `null_devices` a symlink to /dev/null,
    which slurmd takes for a character device: then it sets CUDA_VISIBLE_DEVICES (indices in
    gres.conf order) for the GPUs a step gets, as on a real node."""
    gres: list[str] = []
    lines: list[str] = []
    for typ, count, stem in kinds:
        if not count:
            continue
        devdir.mkdir(parents=True, exist_ok=True)
        for i in range(count):
            if null_devices:
                (devdir / f"{stem}{i}").symlink_to("/dev/null")
            else:
                (devdir / f"{stem}{i}").touch()
        files = f"{devdir}/{stem}[0-{count - 1}]" if count > 1 else f"{devdir}/{stem}0"
        gres.append(f"gpu:{typ}:{count}" if typ else f"gpu:{count}")
        lines.append(f"NodeName={nodes} Name=gpu{f' Type={typ}' if typ else ''} File={files}")
    return ",".join(gres), lines


def client_env(conf: Path) -> dict[str, str]:
    """Environment for the Slurm clients of a private cluster: its SLURM_CONF, no SLURM_*,
    SBATCH_*, SRUN_* or SALLOC_* leaking in from outside."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))
    }
    env["SLURM_CONF"] = str(conf)
    return env


def start_munged(rundir: Path, logdir: Path, run: Callable[[list[str]], object]) -> None:
    """A private munged with a fresh key, its socket at rundir/munge/munge.sock (`run` runs a
    command and raises when it fails)."""
    mdir = rundir / "munge"
    mdir.mkdir(exist_ok=True)
    # munged wants its socket folder searchable by all and its key private to its user.
    os.chmod(rundir, 0o755)
    os.chmod(mdir, 0o755)
    keydir = rundir / "munge-key"
    keydir.mkdir(mode=0o700, exist_ok=True)
    key = keydir / "munge.key"
    run(["mungekey", "--create", "--keyfile", str(key)])
    os.chmod(key, 0o600)
    run(
        [
            "munged",
            f"--socket={mdir / 'munge.sock'}",
            f"--key-file={key}",
            f"--pid-file={mdir / 'munged.pid'}",
            f"--log-file={logdir / 'munged.log'}",
            f"--seed-file={keydir / 'munged.seed'}",
        ]
    )


class SlurmCluster:
    """One private Slurm cluster on this host; at most one should run per host at a time."""

    def __init__(
        self,
        partitions: list[PartitionSpec],
        workdir: Path,
        run_node_partition: str | None = None,
        start_timeout: float = 30.0,
    ) -> None:
        self.workdir = Path(workdir)
        self.start_timeout = start_timeout
        self.partitions: list[PartitionSpec] = []
        self.run_node = ""
        self._set_layout(partitions, run_node_partition)
        self._running = False
        self._next_job_id = 1
        # Unix socket paths are limited to 108 bytes and pytest's tmp paths are long, so the
        # munge socket, the slurmd spool (slurmstepd sockets) and the fake GPU devices live
        # in a short private folder under /tmp.
        self.rundir = Path("/nonexistent")  # made by start()
        self.ctld_port = self.slurmd_port = self.dead_port = 0
        self._last_out = ""  # output of the last _try(), shown when start() times out

    # ---- configuration ---------------------------------------------------------------------

    def _set_layout(self, partitions: list[PartitionSpec], run_node_partition: str | None) -> None:
        if not partitions:
            raise ValueError("at least one partition is needed")
        names = [p.name for p in partitions]
        bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9_.-]+", n)]
        if bad:  # slurm.conf has no quoting: a space would end the PartitionName= value
            raise ValueError(f"partition names must match [A-Za-z0-9_.-]+: {bad}")
        if len(set(names)) != len(names) or len({p.node_prefix() for p in partitions}) != len(
            names
        ):
            raise ValueError(
                f"partition names (and their sanitized node prefixes) must be unique: {names}"
            )
        run = run_node_partition or partitions[0].name
        chosen = [p for p in partitions if p.name == run]
        if not chosen:
            raise ValueError(f"run_node_partition {run!r} is not one of {names}")
        self.partitions = list(partitions)
        self.run_node = chosen[0].node_names()[0]

    @property
    def conf_path(self) -> Path:
        return self.workdir / "etc" / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return client_env(self.conf_path)

    def _write_config(self) -> None:
        devdir = self.rundir / "dev"
        devdir.mkdir(exist_ok=True)
        host = socket.gethostname().split(".")[0]
        nodes: list[str] = []
        gres_lines = ["# Generated by tests/slurm/harness.py; empty files stand in for GPU devices"]
        for p in self.partitions:
            kinds = [(p.gpu_type, p.gpus_per_node, "gpu")]
            # A MIG slice is a GRES of its own type (as NVML autodetect reports it).
            kinds += [(kind, count, f"{kind}-") for kind, count in sorted(p.mig.items())]
            gres, lines = gpu_gres(p.node_range(), devdir / p.node_prefix(), kinds)
            gres = f" Gres={gres}" if gres else ""
            gres_lines += lines
            feats = f" Features={','.join(p.features)}" if p.features else ""
            hw = f"CPUs={p.cpus_per_node} RealMemory={p.memory_mb}{gres}{feats}"
            for node in p.node_names():
                if node == self.run_node:
                    nodes.append(
                        f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 {hw} State=UNKNOWN"
                    )
                else:
                    # Absent: DOWN on a dead port, so the one slurmd never answers for it.
                    absent = (
                        f"NodeAddr=127.0.0.1 Port={self.dead_port} {hw} State=DOWN Reason=absent"
                    )
                    nodes.append(f"NodeName={node} {absent}")
        partitions = []
        for p in self.partitions:
            max_time = p.max_time_minutes if p.max_time_minutes is not None else "UNLIMITED"
            default = " Default=YES" if p.default else ""
            line = f"PartitionName={p.name} Nodes={p.node_range()} MaxTime={max_time}"
            partitions.append(f"{line} State=UP{default}")
        write_slurm_conf(
            self.workdir,
            self.rundir,
            generated_by="tests/slurm/harness.py",
            cluster="routertest",
            ctld_addr="127.0.0.1",
            ports=(self.ctld_port, self.slurmd_port),
            nodes=nodes,
            partitions=partitions,
            settings=[
                "GresTypes=gpu",
                "EnforcePartLimits=ALL",  # reject at submit what no partition could ever run
                f"FirstJobId={self._next_job_id}",  # job ids are not reused across restarts
                "SlurmdTimeout=300",  # pings (every timeout/3) to absent nodes slow shutdown
            ],
        )
        (self.workdir / "etc" / "gres.conf").write_text("\n".join(gres_lines) + "\n")

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        if self._running:
            return
        if os.geteuid() != 0:
            raise SlurmError("SlurmCluster must run as root (SlurmUser=root, munged)")
        # A fresh cluster: no jobs or pid files left by an earlier run in this workdir.
        shutil.rmtree(self.workdir / "state", ignore_errors=True)
        for pidfile in ("slurmctld.pid", "slurmd.pid"):
            (self.workdir / pidfile).unlink(missing_ok=True)
        self.rundir = Path(tempfile.mkdtemp(prefix="rtslurm-"))
        self.ctld_port, self.slurmd_port, self.dead_port = _free_port(), _free_port(), _free_port()
        self._write_config()
        self._running = True
        atexit.register(self.stop)
        try:
            start_munged(self.rundir, self.workdir / "log", self._run)
            self._run(["slurmctld"])
            ctld_pid, slurmd_pid = self.workdir / "slurmctld.pid", self.workdir / "slurmd.pid"
            self._wait_for(
                lambda: self._try(["scontrol", "ping"]) and "UP" in self._last_out,
                "slurmctld to answer",
                [ctld_pid],
            )
            self._run(["slurmd", "-N", self.run_node])
            self._wait_for(
                self._run_node_idle, f"node {self.run_node} to be idle", [ctld_pid, slurmd_pid]
            )
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        atexit.unregister(self.stop)
        self._remember_job_ids()
        self.cancel_all()
        # SIGTERM is the clean shutdown for all three (`scontrol shutdown` does the same by RPC).
        _kill_pidfiles(
            [
                self.workdir / "slurmd.pid",
                self.workdir / "slurmctld.pid",
                self.rundir / "munge" / "munged.pid",
            ]
        )
        kill_strays(self.conf_path)
        shutil.rmtree(self.workdir / "state", ignore_errors=True)
        shutil.rmtree(self.rundir, ignore_errors=True)

    def reconfigure(
        self, partitions: list[PartitionSpec], run_node_partition: str | None = None
    ) -> None:
        """Restart the cluster with another layout (fresh state; job ids keep counting up)."""
        self._set_layout(partitions, run_node_partition)
        was_running = self._running
        self.stop()
        if was_running:
            self.start()

    def __enter__(self) -> SlurmCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._running

    # ---- helpers ---------------------------------------------------------------------------

    def run(
        self, args: Sequence[str], check: bool = True, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command against this cluster."""
        proc = subprocess.run(
            list(args), env=self.env, cwd=cwd, capture_output=True, text=True, timeout=60
        )
        if check and proc.returncode != 0:
            raise SlurmError(
                f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"
            )
        return proc

    def sbatch(
        self,
        script_path: Path,
        hold: bool = True,
        extra_args: Sequence[str] = (),
        cwd: Path | None = None,
        validate: bool = True,
    ) -> int:
        """Submit a script and return its job id; raises SlurmError if sbatch rejects it.

        hold=True keeps the job from running. Slurm skips the resource check for `--hold` jobs
        (impossible GRES, features, memory or CPUs are accepted), so by default (validate=True)
        the job is instead deferred with `--begin=now+365days`: Slurm checks it against the
        partition's node definitions as for a normal job (rejecting with "Requested node
        configuration is not available"), then leaves it PENDING with Reason=BeginTime.
        validate=False uses a true `--hold` (Reason=JobHeldUser). Either way `release()` frees it.
        Partition limits (node count, MaxTime) are enforced at submit in both modes.
        """
        script_path = Path(script_path)
        held = (["--begin=now+365days"] if validate else ["--hold"]) if hold else []
        args = ["sbatch", "--parsable", *held, *extra_args, str(script_path)]
        out = self.run(args, cwd=cwd or script_path.parent).stdout.strip()
        return int(out.splitlines()[-1].split(";")[0])

    def show_job_raw(self, job_id: int) -> str:
        return self.run(["scontrol", "show", "job", "-o", str(job_id)]).stdout.strip()

    def show_job(self, job_id: int) -> dict[str, str]:
        return parse_scontrol_line(self.show_job_raw(job_id).splitlines()[0])

    def job_state(self, job_id: int) -> str:
        return self.show_job(job_id)["JobState"]

    def wait_job(self, job_id: int, timeout: float = 60.0) -> str:
        """Wait until the job reaches a terminal state and return it (e.g. "COMPLETED")."""
        deadline = time.monotonic() + timeout
        state = "?"
        while time.monotonic() < deadline:
            state = self.job_state(job_id)
            if state in TERMINAL_STATES:
                return state
            time.sleep(0.3)
        shown = self.show_job_raw(job_id)
        self.run(["scancel", str(job_id)], check=False)  # not left in the next test's way
        raise TimeoutError(f"job {job_id} still {state} after {timeout}s:\n{shown}")

    def release(self, job_id: int) -> None:
        """Let a job from `sbatch(hold=True)` start: clear a user hold and a future begin time."""
        self.run(["scontrol", "release", str(job_id)])
        self.run(["scontrol", "update", f"JobId={job_id}", "StartTime=now"])

    def job_ids(self) -> list[int]:
        out = self.run(["squeue", "-h", "-o", "%A"], check=False).stdout
        return [int(x) for x in out.split() if x.isdigit()]

    def cancel_all(self) -> None:
        ids = self.job_ids()
        if ids:
            self.run(["scancel", *map(str, ids)], check=False)

    def sinfo_json(self) -> dict[str, Any]:
        """`sinfo --json`: {"meta", "errors", "nodes": [...]}; 22.05 lists nodes only (each with
        "partitions", "gres" like "gpu:h100:8", "cpus", "real_memory", "features", "state")."""
        data: dict[str, Any] = json.loads(self.run(["sinfo", "--json"]).stdout)
        return data

    def show_partitions(self) -> dict[str, dict[str, str]]:
        """`scontrol show partition -o` by name (MaxTime, Nodes, TotalNodes, TotalCPUs, ...),
        which `sinfo --json` does not give in 22.05."""
        out = self.run(["scontrol", "show", "partition", "-o"]).stdout
        parts = [parse_scontrol_line(line) for line in out.splitlines() if line.strip()]
        return {p["PartitionName"]: p for p in parts}

    def logs(self, lines: int = 30) -> str:
        parts = [
            f"--- {name} (last {lines} lines) ---\n{_tail(self.workdir / 'log' / name, lines)}"
            for name in ("munged.log", "slurmctld.log", "slurmd.log")
        ]
        return "\n".join(parts)

    # ---- internals -------------------------------------------------------------------------

    def _try(self, args: Sequence[str]) -> bool:
        try:
            proc = self.run(args, check=False)
        except subprocess.TimeoutExpired:
            return False
        self._last_out = proc.stdout + proc.stderr
        return proc.returncode == 0

    def _run(self, args: Sequence[str]) -> None:
        proc = subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            output = f"{proc.stdout}{proc.stderr}"
            raise SlurmError(f"{' '.join(args)} exited {proc.returncode}:\n{output}\n{self.logs()}")

    def _run_node_idle(self) -> bool:
        if not self._try(["sinfo", "-h", "-N", "-n", self.run_node, "-o", "%T"]):
            return False
        return self._last_out.split()[:1] == ["idle"]

    def _wait_for(self, ready: Callable[[], bool], what: str, pidfiles: Sequence[Path]) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if ready():
                return
            dead = [p.stem for p in pidfiles if not _alive(p)]
            if dead:  # a daemon died (usually a fatal config error): fail now, not at the timeout
                raise SlurmError(
                    f"{', '.join(dead)} exited while waiting for {what}\n{self.logs()}"
                )
            time.sleep(0.2)
        raise SlurmError(
            f"timed out after {self.start_timeout}s waiting for {what}; last output: "
            f"{self._last_out.strip()!r}\n{self.logs()}"
        )

    def _remember_job_ids(self) -> None:
        ids = self.job_ids()
        last = self.run(["scontrol", "show", "config"], check=False).stdout
        m = re.search(r"^NEXT_JOB_ID\s*=\s*(\d+)", last, re.M)
        if m:
            self._next_job_id = max(self._next_job_id, int(m.group(1)))
        elif ids:
            self._next_job_id = max(self._next_job_id, max(ids) + 1)
