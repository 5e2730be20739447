"""`router inventory import slurm|kubernetes`: an inventory YAML from a cluster or its JSON.

Slurm: live, runs `sinfo --json`, `scontrol show partition -o` and `scontrol show config`
(ClusterName) with the environment's SLURM_CONF; or reads saved output (`--from-json`,
`--partitions-from`). Kubernetes: `kubectl get nodes -o json` or `--from-json`, handed to
`router.importers.kubernetes.import_nodes`. The YAML goes to stdout, or atomically to `-o FILE`;
the importer's warnings go to stderr (and into the file as comments).
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
@click.option(
    "--from-json",
    "from_json",
    type=click.Path(exists=True, dir_okay=False),
    help="Saved `sinfo --json` (slurm) or `kubectl get nodes -o json` (kubernetes) "
    "instead of asking the live cluster.",
)
@click.option(
    "--partitions-from",
    type=click.Path(exists=True, dir_okay=False),
    help="Saved `scontrol show partition -o` (slurm): max times, the default partition.",
)
@click.option("--pool-label", help="Node label that names a node's pool (kubernetes).")
@click.option(
    "--cluster", help='Cluster name (default: Slurm\'s ClusterName if known, else "slurm").'
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the YAML to this file (atomically) instead of stdout.",
)
@reports_errors
def import_command(
    backend: str,
    from_json: str | None,
    partitions_from: str | None,
    pool_label: str | None,
    cluster: str | None,
    output: str | None,
) -> None:
    """Write an inventory YAML for BACKEND (slurm or kubernetes) from a cluster or its JSON."""
    from router.importers import ImportedCluster, render_inventory

    if backend == "slurm":
        if pool_label:
            raise click.UsageError("--pool-label is for kubernetes")
        imported: ImportedCluster | str = _import_slurm(from_json, partitions_from, cluster)
    else:
        if partitions_from:
            raise click.UsageError("--partitions-from is for slurm")
        imported = _import_kubernetes(from_json, pool_label, cluster)
    if isinstance(imported, str):
        text = imported
    else:
        text = render_inventory(imported)
        _warn(imported)
    count = _check(text)
    if output:
        write_file_atomic(Path(output), text)
        click.echo(f"Wrote {output}: {count}")
    else:
        click.echo(text, nl=False)


def _import_slurm(from_json: str | None, partitions_from: str | None, cluster: str | None) -> Any:
    from router.importers.slurm import cluster_name_of, import_sinfo

    if from_json:
        sinfo = _read_json(from_json)
        source = os.path.basename(from_json)
        partitions = Path(partitions_from).read_text(encoding="utf-8") if partitions_from else None
        if partitions_from:
            source += f" and {os.path.basename(partitions_from)}"
        name = cluster or cluster_name_of(sinfo) or "slurm"
    else:
        sinfo = _parse_json(_run(["sinfo", "--json"]), "`sinfo --json`")
        source = "`sinfo --json`"
        if partitions_from:
            partitions = Path(partitions_from).read_text(encoding="utf-8")
            source += f" and {os.path.basename(partitions_from)}"
        else:
            partitions = _run(["scontrol", "show", "partition", "-o"])
            source += " and `scontrol show partition -o`"
        name = cluster or _live_cluster_name() or cluster_name_of(sinfo) or "slurm"
    return import_sinfo(sinfo, partitions, cluster=name, source=source)


def _import_kubernetes(from_json: str | None, pool_label: str | None, cluster: str | None) -> Any:
    try:
        from router.importers.kubernetes import import_nodes
    except ImportError:
        raise LoadError(
            "the kubernetes importer is not available in this version of router",
            hint="import from Slurm, or write the node_pools by hand",
        ) from None
    if from_json:
        data = _read_json(from_json)
    else:
        data = _parse_json(
            _run(["kubectl", "get", "nodes", "-o", "json"]), "`kubectl get nodes -o json`"
        )
    kwargs: dict[str, Any] = {"cluster": cluster or "kubernetes"}
    if pool_label:
        kwargs["pool_label"] = pool_label
    return import_nodes(data, **kwargs)


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
    for note in imported.notes:
        click.echo(f"warning: {note}", err=True)
    for target in imported.targets:
        for i, note in enumerate(target.notes):
            prefix = f"warning: {target.fields['name']}: " if i == 0 else "  "
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
    return f"{len(refs)} {what}, {sum(r.target.nodes for r in refs)} nodes"
