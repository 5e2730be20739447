"""The plan for people: a text table for logs, a rich table for a terminal, and markdown
for a pull request. With a previous plan (`doc["diff"]`, see router.plan.diff) each also
shows the changes and ends with the diff's summary line ("Plan: 3 to add, ...").

Plain text has no colour and no terminal-width wrapping, so it is the same bytes on every
machine; `render_rich` is only used when stdout is a terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from router.models.placement import MPI_LAUNCHER_CPUS, MPI_LAUNCHER_MEMORY
from router.plan.diff import change_line, diff_summary_line
from router.quantity import format_memory

if TYPE_CHECKING:
    from rich.console import Console


def _resources(p: dict[str, Any]) -> str:
    """`2× 8 h100, 96 cpu, 1TiB excl`: per node (or per replica), times nodes or replicas."""
    r = p["resources"]
    times = ""
    if "replicas" in r:
        low, high = r["replicas"]["min"], r["replicas"]["max"]
        times = f"{low}× " if low == high else f"{low}-{high}× "
    elif r["nodes"] > 1:
        times = f"{r['nodes']}× "
    gpu = r.get("gpu_type") or "gpu"
    if r.get("mig"):  # slices of one profile, not whole GPUs: `1 a100 1g.10gb`
        gpu = f"{gpu} {r['mig']}"
    parts = [f"{r['gpus_per_node']} {gpu}"] if r["gpus_per_node"] else []
    # An MPIJob's per-node numbers keep room for its launcher: shown as deployed, workers
    # and one launcher.
    less = (MPI_LAUNCHER_CPUS, MPI_LAUNCHER_MEMORY) if r.get("mpi_launcher") else (0, 0)
    parts += [
        f"{r['cpus_per_node'] - less[0]} cpu",
        format_memory(r["memory_per_node_mib"] - less[1]),
    ]
    text = times + ", ".join(parts) + (" excl" if r["exclusive"] else "")
    if r.get("mpi_launcher"):
        text += f" + launcher {MPI_LAUNCHER_CPUS} cpu, {format_memory(MPI_LAUNCHER_MEMORY)}"
    return text


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header).rstrip(), fmt.format(*("-" * w for w in widths)).rstrip()]
    lines += [fmt.format(*r).rstrip() for r in rows]
    return lines


def totals(doc: dict[str, Any]) -> str:
    s = doc["summary"]
    return (
        f"{s['placed']} placed, {s['denied']} denied, {s['unrouted']} unrouted, "
        f"{s['unplaced']} unplaced of {s['workloads']} workloads."
    )


def summary_line(doc: dict[str, Any]) -> str:
    """The one line `--quiet` prints: the diff's summary with a previous plan, else totals."""
    if doc.get("diff") is not None:
        return diff_summary_line(doc["diff"])
    return f"Plan: {totals(doc)}"


def _groups(doc: dict[str, Any]) -> list[tuple[tuple[str, str], list[dict[str, Any]]]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for p in doc["placements"]:
        groups.setdefault((p["backend"], p["cluster"]), []).append(p)
    return sorted(groups.items())


def _rule(p: dict[str, Any]) -> str:
    return str(p["rule"]) + (f" (fallback {p['rank']})" if p["rank"] else "")


def _diff_lines(diff: dict[str, Any]) -> list[str]:
    if not diff["changes"]:
        return [f"No changes against {diff['against']}."]
    return [
        f"Changes against {diff['against']}:",
        *("  " + change_line(c) for c in diff["changes"]),
    ]


def solver_line(doc: dict[str, Any]) -> str:
    s = doc["solver"]
    lp = s["lp_bound"]
    lp_text = f", LP bound {lp:g}" if lp is not None else ""
    return (
        f"Solver: {s['status']}, objective {s['objective']}, bound {s['bound']}, "
        f"gap {100 * s['gap']:.2f}%{lp_text} (seed {s['seed']})"
    )


def scale_out_lines(doc: dict[str, Any]) -> list[str]:
    """One line per target whose services at max replicas would need more nodes than it has;
    the plan counts min replicas, so this informs and never blocks."""
    out = []
    # "has" is the nodes the plan counts (a pool's max_nodes, the autoscaler's ceiling, where
    # it has one), so that "needs 2 more" is not read as beyond the nodes running now.
    has = {t["id"]: t["nodes"]["capacity"] for t in doc.get("targets", [])}
    for row in doc.get("scale_out", []):
        if row["more_nodes"]:
            n, s = row["more_nodes"], row["services"]
            least = row.get("more_nodes_least", n)
            counted = f"has {has[row['target_id']]}, " if row["target_id"] in has else ""
            # Where checks between the two counts were undecided: both, never more than shown.
            many = f"{least}-{n}" if least < n else f"{n}"
            out.append(
                f"scale-out to max: {row['target_id']} needs {many} more node"
                f"{'s' if n != 1 else ''} ({counted}{s} service{'s' if s != 1 else ''} at "
                f"{row['replicas_max']} replicas, planned at {row['replicas_min']})"
            )
    return out


def render_text(doc: dict[str, Any]) -> str:
    out: list[str] = []
    for (backend, cluster), items in _groups(doc):
        out.append(f"{backend} / {cluster}")
        rows = [[p["workload"], p["kind"], p["target"], _resources(p), _rule(p)] for p in items]
        out += [
            "  " + line
            for line in _table(rows, ["WORKLOAD", "KIND", "TARGET", "RESOURCES", "RULE"])
        ]
        out.append("")
    out += _problems(doc)
    scaling = scale_out_lines(doc)
    out += [*scaling, ""] if scaling else []
    diff = doc.get("diff")
    if diff is None:
        out.append(summary_line(doc))
        out.append(solver_line(doc))
    else:
        out += [
            *_diff_lines(diff),
            "",
            f"Totals: {totals(doc)}",
            solver_line(doc),
            diff_summary_line(diff),
        ]
    return "\n".join(out) + "\n"


def _problems(doc: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for d in doc["denied"]:
        out.append(f"denied    {d['workload']}: {d['message']} ({d['rule']}, {d['rule_source']})")
    for section in ("unrouted", "unplaced"):
        for u in doc[section]:
            out.append(f"{section:<9} {u['workload']}:")
            out += [f"            - {r}" for r in u["reasons"]]
    if out:
        out.append("")
    return out


_STYLE = {"+": "green", "~": "yellow", "-": "red", "!": "bold red", "*": "cyan"}


def render_rich(doc: dict[str, Any], console: Console) -> None:
    """The plan as rich tables, one per backend and cluster, for a terminal."""
    from rich.table import Table
    from rich.text import Text

    diff = doc.get("diff")
    symbol = {c["workload"]: c["symbol"] for c in diff["changes"]} if diff else {}
    for (backend, cluster), items in _groups(doc):
        table = Table(title=f"{backend} / {cluster}", title_justify="left", title_style="bold")
        if diff:
            table.add_column("", width=1)
        for name in ("workload", "kind", "target", "resources", "rule"):
            table.add_column(name, no_wrap=name == "workload")
        for p in items:
            cells = [p["workload"], p["kind"], p["target"], _resources(p), _rule(p)]
            if diff:
                mark = symbol.get(p["workload"], "")
                cells.insert(0, Text(mark, style=_STYLE.get(mark, "")))
            table.add_row(*cells)
        console.print(table)
    for line in _problems(doc):
        console.print(Text(line, style="red" if line and not line[0].isspace() else ""))
    for line in scale_out_lines(doc):
        console.print(Text(line, style="yellow"))
    if diff is None:
        console.print(Text(summary_line(doc), style="bold"))
        console.print(Text(solver_line(doc), style="dim"))
        return
    for i, line in enumerate(_diff_lines(diff)):
        mark = line.strip()[:1] if i else ""
        console.print(Text(line, style=_STYLE.get(mark, "bold" if not i else "")))
    console.print()
    console.print(Text(f"Totals: {totals(doc)}"))
    console.print(Text(solver_line(doc), style="dim"))
    console.print(Text(diff_summary_line(diff), style="bold"))


def _cell(text: Any) -> str:
    """A markdown table cell: pipes escaped, no line breaks."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(doc: dict[str, Any]) -> str:
    diff = doc.get("diff")
    out = [f"### router plan: {doc.get('policy') or 'policy'}", ""]
    if diff is None:
        out += [f"**{summary_line(doc)}**", ""]
    else:
        out += [f"**{diff_summary_line(diff)}** (against `{diff['against']}`)", ""]
        if diff["changes"]:
            out += ["| | workload | from | to | rule |", "|---|---|---|---|---|"]
            out += [
                f"| `{c['symbol']}` | `{_cell(c['workload'])}` | {_cell(c['from'])} | "
                f"{_cell(c['to'])} | {_rule_md(c)} |"
                for c in diff["changes"]
            ]
            out.append("")
        else:
            out += ["No changes.", ""]
    rows = [
        f"| `{p['workload']}` | {p['kind']} | {p['backend']} | {p['cluster']} | {p['target']} | "
        f"{_resources(p)} | `{p['rule']}` |"
        for p in doc["placements"]
    ]
    table = (
        [
            "| workload | kind | backend | cluster | target | resources | rule |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
        ]
        if rows
        else []
    )
    if diff is None:
        out += table
    elif table:
        out += [
            f"<details><summary>All placements: {totals(doc)}</summary>",
            "",
            *table,
            "</details>",
            "",
        ]
    problems = (
        [
            f"- denied `{d['workload']}`: {_cell(d['message'])} (`{d['rule']}`)"
            for d in doc["denied"]
        ]
        + [
            f"- unrouted `{u['workload']}`: {_cell('; '.join(u['reasons']))}"
            for u in doc["unrouted"]
        ]
        + [
            f"- unplaced `{u['workload']}`: {_cell('; '.join(u['reasons']))}"
            for u in doc["unplaced"]
        ]
    )
    if problems:
        out += ["<details><summary>Not placed</summary>", "", *problems, "", "</details>", ""]
    scaling = scale_out_lines(doc)
    out += [*(f"- {_cell(line)}" for line in scaling), ""] if scaling else []
    out.append(f"<sub>{solver_line(doc)}</sub>")
    return "\n".join(out) + "\n"


def _rule_md(c: dict[str, Any]) -> str:
    if not c.get("rule"):
        return ""
    text = f"`{_cell(c['rule'])}`"
    if c.get("previous_rule"):
        text += f" (was `{_cell(c['previous_rule'])}`)"
    if c.get("changed"):
        text += f" changed: {', '.join(c['changed'])}"
    return text
