"""The plan for people: a text table for the terminal and markdown for a pull request."""

from __future__ import annotations

from typing import Any

from router.quantity import format_memory


def _resources(p: dict[str, Any]) -> str:
    """`2× 8 h100, 96 cpu, 1TiB excl`: per node (or per replica), times nodes or replicas."""
    r = p["resources"]
    times = ""
    if "replicas" in r:
        times = f"{r['replicas']['min']}-{r['replicas']['max']}× "
    elif r["nodes"] > 1:
        times = f"{r['nodes']}× "
    parts = [f"{r['gpus_per_node']} {r.get('gpu_type') or 'gpu'}"] if r["gpus_per_node"] else []
    parts += [f"{r['cpus_per_node']} cpu", format_memory(r["memory_per_node_mib"])]
    return times + ", ".join(parts) + (" excl" if r["exclusive"] else "")


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    lines = [fmt.format(*header).rstrip(), fmt.format(*("-" * w for w in widths)).rstrip()]
    lines += [fmt.format(*r).rstrip() for r in rows]
    return lines


def summary_line(doc: dict[str, Any]) -> str:
    s = doc["summary"]
    return (f"Plan: {s['placed']} placed, {s['denied']} denied, {s['unrouted']} unrouted, "
            f"{s['unplaced']} unplaced of {s['workloads']} workloads.")


def solver_line(doc: dict[str, Any]) -> str:
    s = doc["solver"]
    lp = s["lp_bound"]
    lp_text = f", LP bound {lp:g}" if lp is not None else ""
    return (f"Solver: {s['status']}, objective {s['objective']}, bound {s['bound']}, "
            f"gap {100 * s['gap']:.2f}%{lp_text} (seed {s['seed']})")


def render_text(doc: dict[str, Any]) -> str:
    out: list[str] = []
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for p in doc["placements"]:
        groups.setdefault((p["backend"], p["cluster"]), []).append(p)
    for (backend, cluster), items in sorted(groups.items()):
        out.append(f"{backend} / {cluster}")
        rows = [
            [p["workload"], p["kind"], p["target"], _resources(p),
             p["rule"] + (f" (fallback {p['rank']})" if p["rank"] else "")]
            for p in items
        ]
        out += ["  " + line for line in _table(rows, ["WORKLOAD", "KIND", "TARGET",
                                                       "RESOURCES", "RULE"])]
        out.append("")
    for d in doc["denied"]:
        out.append(f"denied    {d['workload']}: {d['message']} ({d['rule']}, {d['rule_source']})")
    for section in ("unrouted", "unplaced"):
        for u in doc[section]:
            out.append(f"{section:<9} {u['workload']}:")
            out += [f"            - {r}" for r in u["reasons"]]
    if doc["denied"] or doc["unrouted"] or doc["unplaced"]:
        out.append("")
    out.append(summary_line(doc))
    out.append(solver_line(doc))
    return "\n".join(out) + "\n"


def render_markdown(doc: dict[str, Any]) -> str:
    out = [f"### router plan: {doc.get('policy') or 'policy'}", "", f"**{summary_line(doc)}**", ""]
    rows = [
        f"| `{p['workload']}` | {p['kind']} | {p['backend']} | {p['cluster']} | {p['target']} | "
        f"{_resources(p)} | `{p['rule']}` |"
        for p in doc["placements"]
    ]
    if rows:
        out += ["| workload | kind | backend | cluster | target | resources | rule |",
                "|---|---|---|---|---|---|---|", *rows, ""]
    problems = (
        [f"- denied `{d['workload']}`: {d['message']} (`{d['rule']}`)" for d in doc["denied"]]
        + [f"- unrouted `{u['workload']}`: {'; '.join(u['reasons'])}" for u in doc["unrouted"]]
        + [f"- unplaced `{u['workload']}`: {'; '.join(u['reasons'])}" for u in doc["unplaced"]]
    )
    if problems:
        out += ["<details><summary>Not placed</summary>", "", *problems, "", "</details>", ""]
    out.append(f"<sub>{solver_line(doc)}</sub>")
    return "\n".join(out) + "\n"
