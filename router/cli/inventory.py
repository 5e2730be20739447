"""`router inventory import slurm|kubernetes`: an inventory YAML from a cluster or its output.

Slurm: live, it asks what the installed Slurm supports (`sinfo --version`): `sinfo --json`
from 21.08 on (else `scontrol show node -o`), `scontrol show partition -o` for the limits
(every release prints it; the JSON has no Default flag) and `scontrol show config`
(ClusterName), with the environment's SLURM_CONF. Or it reads saved output: `--from FILE` (any
nodes layout: sinfo/scontrol/slurmrestd JSON or `scontrol show node -o` text) and
`--partitions-from FILE` (`scontrol show partition -o` text or partitions JSON). Kubernetes:
`kubectl get nodes -o json` or `--from FILE`. The YAML goes to stdout, or atomically to
`-o FILE`; every node left out is a line on stderr (and a comment in the file), and so is
every other warning.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from router.cli.options import from_option, output_option
from router.errors import LoadError
from router.output import write_file_atomic

F = TypeVar("F", bound=Callable[..., Any])


def reports_errors(fn: F) -> F:
    """router.cli.main.reports_errors, looked up at call time: main imports this module."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from router.cli.main import reports_errors as wrap

        return wrap(fn)(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


@click.group()
def inventory() -> None:
    """Build inventory files from live clusters."""


@inventory.command("import")
@click.argument("backend", type=click.Choice(["slurm", "kubernetes"]))
@from_option(
    "--from-json",
    help="Saved output instead of asking the live cluster: `sinfo --json`, `scontrol "
    "show nodes --json`, slurmrestd /nodes or `scontrol show node -o` (slurm); "
    "`kubectl get nodes -o json` (kubernetes).",
)
@click.option(
    "--partitions-from",
    type=click.Path(exists=True, dir_okay=False),
    help="Saved `scontrol show partition -o`, `scontrol show partitions --json` or "
    "slurmrestd /partitions (slurm): limits, states, the default partition.",
)
@click.option("--pool-label", help="Node label that names a node's pool (kubernetes).")
@click.option(
    "--cluster", help='Cluster name (default: Slurm\'s ClusterName if known, else "slurm").'
)
@output_option()
@reports_errors
def import_command(
    backend: str,
    from_file: str | None,
    partitions_from: str | None,
    pool_label: str | None,
    cluster: str | None,
    output: str | None,
) -> None:
    """Write an inventory YAML for BACKEND (slurm or kubernetes) from a cluster or its output."""
    from router.importers import ImportedCluster, render_inventory

    if backend == "slurm" and pool_label:
        raise click.UsageError("--pool-label is for kubernetes")
    if backend == "kubernetes" and partitions_from:
        raise click.UsageError("--partitions-from is for slurm")
    try:
        if backend == "slurm":
            imported: ImportedCluster = _import_slurm(from_file, partitions_from, cluster)
        else:
            imported = _import_kubernetes(from_file, pool_label, cluster)
    except LoadError as e:
        if e.path or not from_file:
            raise
        # what the file held could not be imported: say which file
        raise LoadError(e.message, hint=e.hint, path=from_file) from None
    text = render_inventory(imported)
    count = _check(text)
    _warn(imported)
    if output:
        write_file_atomic(Path(output), text)
        click.echo(f"Wrote {output}: {count}")
    else:
        click.echo(text, nl=False)


def _import_slurm(from_file: str | None, partitions_from: str | None, cluster: str | None) -> Any:
    from router.importers.slurm import import_slurm, read_nodes, read_partitions

    partitions = None
    partitions_source = None
    if partitions_from:
        partitions = read_partitions(_read(partitions_from), partitions_from)
        partitions_source = os.path.basename(partitions_from)
    if from_file:
        nodes = read_nodes(_read(from_file), from_file)
        source = os.path.basename(from_file)
        name = cluster
    else:
        command = _live_nodes_command()
        nodes = read_nodes(_run(command), f"`{' '.join(command)}`")
        source = f"`{' '.join(command)}`"
        if partitions is None:
            text = _run(["scontrol", "show", "partition", "-o"])
            partitions = read_partitions(text, "`scontrol show partition -o`")
            partitions_source = "`scontrol show partition -o`"
        name = cluster or _live_cluster_name()
    return import_slurm(
        nodes, partitions, cluster=name, source=source, partitions_source=partitions_source
    )


def _live_nodes_command() -> list[str]:
    """`sinfo --json` where the installed Slurm has it (21.08 on), else the text layout."""
    m = re.search(r"(\d+)\.(\d+)", _run(["sinfo", "--version"]))
    if m and (int(m.group(1)), int(m.group(2))) >= (21, 8):
        return ["sinfo", "--json"]
    return ["scontrol", "show", "node", "-o"]


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise LoadError("not text (UTF-8): expected saved command output", path=path) from None


def _import_kubernetes(from_file: str | None, pool_label: str | None, cluster: str | None) -> Any:
    try:
        from router.importers.kubernetes import import_cluster
    except ImportError:
        raise LoadError(
            "the kubernetes importer is not available in this version of router",
            hint="import from Slurm, or write the node_pools by hand",
        ) from None
    if from_file:
        data = _read_json(from_file)
    else:
        data = _parse_json(
            _run(["kubectl", "get", "nodes", "-o", "json"]), "`kubectl get nodes -o json`"
        )
    kwargs: dict[str, Any] = {"cluster": cluster or "kubernetes"}
    if pool_label:
        kwargs["pool_label"] = pool_label
    return import_cluster(data, **kwargs)


def _live_cluster_name() -> str | None:
    m = re.search(r"^ClusterName\s*=\s*(\S+)", _run(["scontrol", "show", "config"]), re.M)
    return m.group(1) if m else None


def _run(args: list[str]) -> str:
    command = " ".join(args)
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise LoadError(
            f"`{command}`: {args[0]} is not installed here",
            hint="import a saved copy with --from-json FILE",
        ) from None
    except subprocess.TimeoutExpired:
        raise LoadError(f"`{command}` did not answer within 120 s") from None
    if proc.returncode != 0:
        raise LoadError(f"`{command}` exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def _read_json(path: str) -> Any:
    return _parse_json(Path(path).read_text(encoding="utf-8"), path)


def _parse_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise LoadError(f"{what}: not JSON: {e.msg}", path=what, line=e.lineno) from None


def _warn(imported: Any) -> None:
    for line in imported.exclusions:
        click.echo(line, err=True)
    for note in imported.notes:
        click.echo(f"warning: {note}", err=True)
    for item in [*imported.node_sets, *imported.targets]:
        for i, note in enumerate(item.notes):
            prefix = f"note: {item.fields['name']}: " if i == 0 else "  "
            click.echo(prefix + note, err=True)


def _check(text: str) -> str:
    """Validate the YAML as `router plan` would; a summary such as "3 partitions, 28 nodes"."""
    import yaml
    from pydantic import ValidationError

    from router.models import Inventory

    try:
        inv = Inventory.model_validate(yaml.safe_load(text))
    except (ValidationError, yaml.YAMLError) as e:
        raise LoadError(f"the imported inventory is not valid (please report this): {e}") from None
    refs = inv.targets()
    kinds = {r.backend for r in refs}
    what = "partitions" if kinds == {"slurm"} else "targets"
    sets = inv.node_sets()
    usable = sum(s.spec.nodes for s in sets)
    ceiling = sum(s.spec.capacity_nodes for s in sets)
    more = f" (up to {ceiling} with powered-down nodes)" if ceiling != usable else ""
    return f"{len(refs)} {what}, {usable} usable nodes{more}, each counted once"
