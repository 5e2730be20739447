"""A real two-node Slurm cluster on one host: two `slurmd`, each in a network namespace of its
own, so that multi-node jobs (torchrun rendezvous, MPI over PMIx) really cross a network.

Layout (k is a small per-run number, so that two runs never share names or addresses):

* namespace `rtmn<k>-hub` holds a bridge with 10.77.<k>.1, where `slurmctld` listens; every
  Slurm client runs in it too (`ns_cmd`), since the host itself gets no address here;
* namespaces `rtmn<k>-n1`, `-n2` hold one end of a veth pair each (10.77.<k>.2 and .3), the
  other end on the bridge; node `rtmn<k>n<i>` runs `slurmd -N rtmn<k>n<i>` there.

Facts that decide the shape (DESIGN.md, "Multi-node Slurm, for real"): slurmd starts under
`nsenter --net=/var/run/netns/NS` (`ip netns exec` remounts /sys and slurmd then fails "No
filesystem mounted on /sys/fs/cgroup"); each slurmd also gets a UTS namespace of its own with
the node's name as hostname (`unshare --uts`), so the ranks of a job see two hostnames and
gloo/Open MPI find the node's own address by name. `SlurmdSpoolDir`, `SlurmdPidFile`,
`SlurmdLogFile` and `TmpFS` take `%n`: the pmix plugin's `spmix_appdir_*` folders collide on a
shared /tmp ("File exists"). Node names resolve through /etc/hosts lines, added only when
missing and removed again by `stop()`. Ports are picked free, never 6817/6818.

Everything the cluster made (daemons, namespaces, veths, /etc/hosts lines, folders) is removed
by `stop()`, which `atexit` also calls.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from .harness import (
    TERMINAL_STATES,
    SlurmError,
    _free_port,
    _kill_pidfiles,
    _tail,
    client_env,
    gpu_gres,
    kill_strays,
    parse_scontrol_line,
    start_munged,
    write_slurm_conf,
)

NODES = 2
CPUS_PER_NODE = 4  # claimed through config_overrides; jobs here are tiny
MEMORY_MB = 4096
HOSTS = Path("/etc/hosts")


def _sh(args: Sequence[str]) -> None:
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise SlurmError(f"{' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")


def _netns_names() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


class MultiNodeCluster:
    """Two nodes, one partition `mn` (Default), in namespaces this object creates.

    `gres`: typed GPUs on each node, (GRES type, count) as in `Gres=gpu:a100:1,gpu:
    nvidia_a100_1g.10gb:7` (a MIG slice is a GRES type of its own), each GPU a symlink to
    /dev/null (harness.gpu_gres), so that steps get CUDA_VISIBLE_DEVICES. None by default."""

    partition = "mn"

    def __init__(
        self, workdir: Path, start_timeout: float = 40.0, gres: Sequence[tuple[str, int]] = ()
    ) -> None:
        self.workdir = Path(workdir)
        self.start_timeout = start_timeout
        self.gres = list(gres)
        taken = {n.split("-")[0] for n in _netns_names()}
        self.k = next(k for k in range(20, 250) if f"rtmn{k}" not in taken)
        self.prefix = f"rtmn{self.k}"
        self.hub = f"{self.prefix}-hub"
        self.node_ns = [f"{self.prefix}-n{i}" for i in range(1, NODES + 1)]
        self.nodes = [f"{self.prefix}n{i}" for i in range(1, NODES + 1)]
        self.addrs = [f"10.77.{self.k}.{i + 1}" for i in range(1, NODES + 1)]
        self.ctld_addr = f"10.77.{self.k}.1"
        self.rundir = Path("/nonexistent")
        self._hosts_added: list[str] = []
        self._netns_made: list[str] = []
        self._running = False

    # ---- paths and commands ----------------------------------------------------------------

    @property
    def conf_path(self) -> Path:
        return self.workdir / "etc" / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return client_env(self.conf_path)

    def ns_cmd(self, args: Sequence[str], ns: str | None = None) -> list[str]:
        """`args` run in the hub namespace (or `ns`): where the controller is reachable."""
        return ["nsenter", f"--net=/var/run/netns/{ns or self.hub}", *args]

    def run(
        self, args: Sequence[str], check: bool = True, cwd: Path | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            self.ns_cmd(args), env=self.env, cwd=cwd, capture_output=True, text=True,
            timeout=timeout,
        )  # fmt: skip
        if check and proc.returncode != 0:
            raise SlurmError(
                f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"
            )
        return proc

    # ---- network ---------------------------------------------------------------------------

    def _network(self) -> None:
        p = self.prefix
        for ns in (self.hub, *self.node_ns):
            _sh(["ip", "netns", "add", ns])
            self._netns_made.append(ns)
            _sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        _sh(["ip", "-n", self.hub, "link", "add", "br0", "type", "bridge"])
        _sh(["ip", "-n", self.hub, "addr", "add", f"{self.ctld_addr}/24", "dev", "br0"])
        _sh(["ip", "-n", self.hub, "link", "set", "br0", "up"])
        for i, (ns, addr) in enumerate(zip(self.node_ns, self.addrs, strict=True), 1):
            hub_end, node_end = f"{p}h{i}", f"{p}v{i}"
            _sh(["ip", "link", "add", hub_end, "type", "veth", "peer", "name", node_end])
            _sh(["ip", "link", "set", hub_end, "netns", self.hub])
            _sh(["ip", "link", "set", node_end, "netns", ns])
            _sh(["ip", "-n", self.hub, "link", "set", hub_end, "master", "br0", "up"])
            _sh(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", node_end])
            _sh(["ip", "-n", ns, "link", "set", node_end, "up"])
        known = HOSTS.read_text().splitlines() if HOSTS.exists() else []
        wanted = [f"{a} {n}" for a, n in zip(self.addrs, self.nodes, strict=True)]
        missing = [line for line in wanted if line not in known]
        if missing:
            with HOSTS.open("a") as f:
                f.write("".join(f"{line}\n" for line in missing))
            self._hosts_added = missing

    def _unnetwork(self) -> None:
        for ns in reversed(self._netns_made):  # deleting a namespace deletes its veth ends
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self._netns_made = []
        if self._hosts_added:
            with contextlib.suppress(OSError):
                lines = HOSTS.read_text().splitlines()
                kept = [line for line in lines if line not in self._hosts_added]
                HOSTS.write_text("".join(f"{line}\n" for line in kept))
            self._hosts_added = []

    # ---- configuration ---------------------------------------------------------------------

    def _write_config(self, ctld_port: int, slurmd_port: int) -> None:
        for node in self.nodes:  # %n folders (harness.write_slurm_conf, per_node)
            (self.rundir / "spool" / node).mkdir(parents=True, exist_ok=True)
            (self.rundir / "tmp" / node).mkdir(parents=True, exist_ok=True)
        kinds = [(typ, count, f"{typ}-") for typ, count in self.gres]
        gres, gres_lines = gpu_gres(",".join(self.nodes), self.rundir / "dev", kinds, True)
        write_slurm_conf(
            self.workdir,
            self.rundir,
            generated_by="tests/slurm/multinode.py",
            cluster=self.prefix,
            ctld_addr=self.ctld_addr,
            ports=(ctld_port, slurmd_port),  # one slurmd port: each has a namespace of its own
            per_node=True,
            nodes=[
                f"NodeName={node} NodeAddr={addr} CPUs={CPUS_PER_NODE} "
                f"RealMemory={MEMORY_MB}{f' Gres={gres}' if gres else ''} State=UNKNOWN"
                for node, addr in zip(self.nodes, self.addrs, strict=True)
            ],
            partitions=[
                f"PartitionName={self.partition} Nodes={','.join(self.nodes)} Default=YES "
                "MaxTime=UNLIMITED State=UP"
            ],
            settings=["SlurmdTimeout=60", *(["GresTypes=gpu"] if gres else [])],
        )
        if gres_lines:  # both slurmd read it beside slurm.conf, each its own NodeName= lines
            (self.workdir / "etc" / "gres.conf").write_text("\n".join(gres_lines) + "\n")

    # ---- lifecycle -------------------------------------------------------------------------

    def _pidfiles(self) -> list[Path]:
        return [
            *(self.rundir / f"slurmd-{n}.pid" for n in self.nodes),
            self.workdir / "slurmctld.pid",
            self.rundir / "munge" / "munged.pid",
        ]

    def start(self) -> None:
        if self._running:
            return
        if os.geteuid() != 0:
            raise SlurmError("MultiNodeCluster must run as root (namespaces, munged, slurmd)")
        shutil.rmtree(self.workdir / "state", ignore_errors=True)
        self.rundir = Path(tempfile.mkdtemp(prefix="rtmn-"))
        self._running = True
        atexit.register(self.stop)
        try:
            self._network()
            self._write_config(_free_port(), _free_port())
            start_munged(self.rundir, self.workdir / "log", _sh)
            subprocess.run(self.ns_cmd(["slurmctld"]), env=self.env, check=True, timeout=60)
            self._wait(
                lambda: "UP" in self.run(["scontrol", "ping"], check=False).stdout,
                "slurmctld to answer",
            )
            for node, ns in zip(self.nodes, self.node_ns, strict=True):
                # Its own hostname (UTS namespace) and network namespace; slurmd daemonizes.
                script = f'hostname "$1" && exec nsenter --net=/var/run/netns/{ns} slurmd -N "$1"'
                subprocess.run(
                    ["unshare", "--uts", "sh", "-c", script, "sh", node],
                    env=self.env,
                    check=True,
                    timeout=60,
                )
            self._wait(self._all_idle, "both nodes to be idle")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        atexit.unregister(self.stop)
        with contextlib.suppress(Exception):
            ids = self.run(["squeue", "-h", "-o", "%A"], check=False, timeout=10).stdout.split()
            if ids:
                self.run(["scancel", *ids], check=False, timeout=10)
        _kill_pidfiles(self._pidfiles())
        kill_strays(self.conf_path)
        self._unnetwork()
        shutil.rmtree(self.workdir / "state", ignore_errors=True)
        shutil.rmtree(self.rundir, ignore_errors=True)

    def __enter__(self) -> MultiNodeCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _all_idle(self) -> bool:
        out = self.run(["sinfo", "-h", "-N", "-o", "%N %T"], check=False).stdout
        states = dict(line.split()[:2] for line in out.splitlines() if len(line.split()) >= 2)
        return all(states.get(n) == "idle" for n in self.nodes)

    def _wait(self, ready: object, what: str) -> None:
        assert callable(ready)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                if ready():
                    return
            time.sleep(0.3)
        raise SlurmError(f"timed out after {self.start_timeout}s waiting for {what}\n{self.logs()}")

    # ---- jobs ------------------------------------------------------------------------------

    def sbatch(self, script: Path, cwd: Path, extra_args: Sequence[str] = ()) -> int:
        out = self.run(["sbatch", "--parsable", *extra_args, str(script)], cwd=cwd).stdout
        return int(out.strip().splitlines()[-1].split(";")[0])

    def show_job(self, job_id: int) -> dict[str, str]:
        out = self.run(["scontrol", "show", "job", "-o", str(job_id)]).stdout
        return parse_scontrol_line(out.strip().splitlines()[0])

    def wait_job(self, job_id: int, timeout: float = 180.0) -> str:
        """The terminal state of a job (for an array, once every task has ended)."""
        deadline = time.monotonic() + timeout
        states: list[str] = []
        while time.monotonic() < deadline:
            out = self.run(["scontrol", "show", "job", "-o", str(job_id)]).stdout
            states = [parse_scontrol_line(line)["JobState"] for line in out.splitlines() if line]
            if states and all(s in TERMINAL_STATES for s in states):
                return "COMPLETED" if set(states) == {"COMPLETED"} else ",".join(sorted(states))
            time.sleep(0.5)
        # Cancelled, so that the tests after this one do not wait behind it (a rank that
        # died under load once left its job RUNNING and four more tests timed out PENDING).
        self.run(["scancel", str(job_id)], check=False, timeout=10)
        raise TimeoutError(f"job {job_id} still {states} after {timeout}s\n{self.logs()}")

    def logs(self, lines: int = 20) -> str:
        names = ["munged.log", "slurmctld.log", *(f"slurmd-{n}.log" for n in self.nodes)]
        return "\n".join(
            f"--- {name} ---\n{_tail(self.workdir / 'log' / name, lines)}" for name in names
        )
