"""`router inventory running slurm|kubernetes`: what already runs → the running-work YAML.

Slurm: live `squeue --json` (with the environment's SLURM_CONF) or a saved copy (`--from`);
Kubernetes: live `kubectl get pods -A -o json` or `--from`. Parsed by router.importers.running.
With `-i INVENTORY` and no `--cluster`, the work is on the inventory's one cluster of that backend
(when it has one); items on nodes the inventory does not name (node_names) are left out with
a warning, and the rest is checked against the nodes as `router plan --running` will (a node
whose work holds more than it has, as on an OverSubscribe=FORCE partition, is a note: the plan
counts it full on that axis). The YAML goes to stdout, or atomically to `-o FILE`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from router.cli.inventory import _parse_json, _read_json, _run, inventory, reports_errors
from router.cli.options import from_option, output_option
from router.errors import LoadError
from router.importers.running import ImportedRunning
from router.output import write_file_atomic


@inventory.command("running")
@click.argument("backend", type=click.Choice(["slurm", "kubernetes"]))
@from_option(
    help="Saved `squeue --json` (slurm) or `kubectl get pods -A -o json` "
    "(kubernetes) instead of asking the live cluster.",
)
@click.option(
    "--cluster",
    help="The inventory's name for the cluster (default: the -i inventory's "
    "one cluster of BACKEND, else Slurm's cluster name from the data; "
    '"kubernetes").',
)
@click.option(
    "-i",
    "--inventory",
    "inventory_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Keep only nodes this inventory names, and check the work fits them.",
)
@output_option()
@reports_errors
def running_command(
    backend: str,
    from_file: str | None,
    cluster: str | None,
    inventory_path: str | None,
    output: str | None,
) -> None:
    """Write the running-work YAML (`running:`) for BACKEND from a cluster or its JSON."""
    from router.importers.running import render_running, running_from_pods, running_from_squeue

    if inventory_path and not cluster:
        cluster = _only_cluster(Path(inventory_path), backend)
    if backend == "slurm":
        data, source = _input(from_file, ["squeue", "--json"])
        imported = running_from_squeue(data, cluster=cluster, source=source)
    else:
        data, source = _input(from_file, ["kubectl", "get", "pods", "-A", "-o", "json"])
        imported = running_from_pods(data, cluster=cluster or "kubernetes", source=source)
    if inventory_path:
        _keep_known(imported, Path(inventory_path))
    text = render_running(imported)
    count, over = _check(text, Path(inventory_path) if inventory_path else None)
    if over:  # said in the YAML too, where the next reader of the file sees it
        imported.notes += over
        text = render_running(imported)
    for note in imported.notes:
        click.echo(f"warning: {note}", err=True)
    if output:
        write_file_atomic(Path(output), text)
        click.echo(f"Wrote {output}: {count}")
    else:
        click.echo(text, nl=False)


def _only_cluster(path: Path, backend: str) -> str | None:
    """The inventory's one cluster of this backend: what the running work is on when
    --cluster is not given (a saved sinfo names no cluster, so its import says "slurm"
    while squeue says Slurm's ClusterName). None when there are several."""
    from router.models import load_inventory

    names = [c.name for c in load_inventory(path).clusters if c.backend == backend]
    return names[0] if len(names) == 1 else None


def _input(from_file: str | None, command: list[str]) -> tuple[Any, str]:
    if from_file:
        return _read_json(from_file), from_file
    what = f"`{' '.join(command)}`"
    return _parse_json(_run(command), what), what


def _keep_known(imported: ImportedRunning, path: Path) -> None:
    """Drop items on nodes the inventory does not name; say how many and where."""
    from router.models import load_inventory

    inv = load_inventory(path)
    names = {(s.cluster, n) for s in inv.node_sets() for n in s.spec.node_names}
    clusters = {c.name for c in inv.clusters}
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    for item in imported.items:
        (kept if (item["cluster"], item["node"]) in names else dropped).append(item)
    if dropped:
        nodes = sorted({f"{i['cluster']}/{i['node']}" for i in dropped})
        unknown = sorted({i["cluster"] for i in dropped} - clusters)
        why = (
            f"cluster {', '.join(unknown)} is not in {path.name} (use --cluster NAME)"
            if unknown
            else f"{path.name} names no such nodes (node_names)"
        )
        shown = ", ".join(nodes[:5]) + (f" and {len(nodes) - 5} more" if len(nodes) > 5 else "")
        imported.notes.append(
            f"{len(dropped)} items on {len(nodes)} nodes left out: {why}: {shown}"
        )
    imported.items = kept


def _check(text: str, inventory_path: Path | None) -> tuple[str, list[str]]:
    """Validate the YAML as `router plan --running` reads it: a summary "3 items on 2 nodes",
    and a note per node whose work holds more than it has (with an inventory)."""
    import yaml
    from pydantic import ValidationError

    from router.models import Running

    try:
        running = Running.model_validate(yaml.safe_load(text))
    except (ValidationError, yaml.YAMLError) as e:
        raise LoadError(f"the running work is not valid (please report this): {e}") from None
    over: list[str] = []
    if inventory_path is not None:
        from router.models import load_inventory
        from router.models.capacity import node_classes, oversubscribed

        # LoadError if an item names no node of the inventory
        over = oversubscribed(node_classes(load_inventory(inventory_path), running))
    nodes = {(i.cluster, i.node) for i in running.running}
    return f"{len(running.running)} items on {len(nodes)} nodes", over
