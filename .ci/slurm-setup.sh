#!/bin/sh
# Installs what tests/slurm needs on a fresh Debian 12 machine (run as root, before pytest):
# Debian's Slurm 22.05 (slurmctld, slurmd, clients) and munge. The tests start their own private
# munged/slurmctld/slurmd (tests/slurm/harness.py, multinode.py), so no service is started or
# configured here. Also: Open MPI and its compiler wrapper (the two-node MPI test), shellcheck
# (every emitted script is checked), iproute2 (network namespaces of the two-node cluster), and
# PyTorch's CPU wheel (the two-node torchrun test; `torch==2.13.0` is the CPU build on this
# machine's disk, a bare `torch` would fetch a CUDA build of several GB).
# Idempotent: does nothing when everything is already installed.
set -eu

PACKAGES="slurm-wlm munge libpmix-dev openmpi-bin libopenmpi-dev shellcheck iproute2"
PYTHON="${PYTHON:-python3}"
TORCH="torch==2.13.0"
# libpmix-dev: Debian's mpi/pmix plugin dlopen()s pmix2/lib/libpmix.so, the unversioned name that
# only the -dev package ships; without it `srun --mpi=pmix` fails "can not load PMIx library".

missing=""
for pkg in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
done
install_torch() {
    "$PYTHON" -c "import torch" 2>/dev/null && return 0
    "$PYTHON" -m pip install --disable-pip-version-check --quiet "$TORCH"
}
if [ -z "$missing" ]; then
    install_torch
    echo "slurm-setup: already installed:$PACKAGES"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "slurm-setup: must run as root (missing:$missing)" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# No systemd/init here: keep the packages' postinst from starting munge/slurmctld/slurmd
# (policy-rc.d exit 101 = "not allowed"), unless the machine already has such a policy.
cleanup_policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    cleanup_policy=1
fi
trap '[ -n "$cleanup_policy" ] && rm -f /usr/sbin/policy-rc.d' EXIT

apt_opts="-y -q -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold"
# shellcheck disable=SC2086
apt-get $apt_opts update
# shellcheck disable=SC2086
apt-get $apt_opts install $PACKAGES </dev/null

install_torch
for bin in munged mungekey slurmctld slurmd sbatch scontrol sinfo squeue scancel mpicc shellcheck ip nsenter unshare; do
    command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ] || { echo "slurm-setup: $bin missing" >&2; exit 1; }
done
echo "slurm-setup: installed$missing ($(slurmctld -V))"
