"""`router explain` in words: the explanation dict (explain.py) as an indented report."""

from __future__ import annotations

from typing import Any

from router.explain.reasons import NOT_A_CANDIDATE


def _tried(lines: list[str], title: str, items: list[dict[str, Any]], hit: str) -> None:
    if not items:
        return
    lines.append(f"{title}:")
    for it in items:
        verdict = hit if it["matched"] else "did not match"
        lines.append(f"  {it['rule']} ({it['source']}): {verdict}")
        for why in it.get("why", []):
            lines.append(f"    {why}")


def render_explanation(doc: dict[str, Any]) -> str:
    name, status = doc["workload"], doc["status"]
    lines = [f"{name}: {status}"]
    _tried(lines, "Deny rules tried", doc.get("deny_rules", []), "MATCHED: denied")
    if status == "denied":
        d = doc["denied"]
        lines.append(f"Denied by {d['rule']} ({d['source']}): {d['message']}")
        return "\n".join(lines) + "\n"
    _tried(lines, "Rules tried", doc.get("rules", []), "matched")
    if status == "unrouted":
        lines.append("No rule matches, so no route applies.")
        return "\n".join(lines) + "\n"
    cands = doc.get("candidates", [])
    chosen = doc.get("placement", {}).get("target")
    lines.append(f"Candidates ({len(cands)}), best first:")
    for c in cands:
        mark = "  <- placed" if c["target"] == chosen else ""
        lines.append(
            f"  {c['target']}: rank {c['rank']} (route at {c['route']}), "
            f"preference {c['pref']}{mark}"
        )
    if not cands:
        lines.append("  none")
    if doc.get("excluded"):
        lines.append("Excluded targets:")
        for e in doc["excluded"]:
            at = f" ({e['source']})" if e.get("source") else ""
            lines.append(f"  {e['target']} (rank {e['rank']}): {e['reason']}{at}")
            for why in e.get("why", []):
                lines.append(f"    {why}")
    if status == "placed":
        _placed(lines, doc["placement"])
    else:
        _unplaced(lines, doc)
    return "\n".join(lines) + "\n"


def _placed(lines: list[str], p: dict[str, Any]) -> None:
    lines.append(f"Placed on {p['target']} (rank {p['rank']}, preference {p['pref']}).")
    if p.get("nodes"):
        lines.append("On the nodes (the plan's node assignment, after everything placed):")
        lines += [f"  {n}" for n in p["nodes"]]
    if p.get("replicas") and p["replicas"]["max"] > p["replicas"]["min"]:
        low, high = p["replicas"]["min"], p["replicas"]["max"]
        lines.append(
            f"Replicas: {low} planned and counted (its min); the HPA may scale it to {high} "
            "(what that needs: plan.json's scale_out)"
        )
    if p["binding"]:
        lines.append("Binding constraints (used == capacity):")
        lines += [f"  {b}" for b in p["binding"]]
    else:
        lines.append("Binding constraints: none; every row it counts against has room:")
        lines += [f"  {r['text']}" for r in p["rows"]]
    if p["got_first_choice"]:
        lines.append("It got its first choice.")
    else:
        lines.append(f"Its first choice was {p['first_choice']}, which had no room:")
        lines += [f"  {b}" for b in p["first_choice_blocked"]]


def _unplaced(lines: list[str], doc: dict[str, Any]) -> None:
    lines.append("Not placed. Minimal reasons:")
    # "not a candidate" reasons are the excluded targets, listed above with their values.
    lines += [f"  {r}" for r in doc["reasons"] if not r.startswith(NOT_A_CANDIDATE)]
    if doc.get("per_target"):
        lines.append("At each candidate, everything in the way:")
        for target, reasons in doc["per_target"].items():
            said = [r.removeprefix(f"{target}: ") for r in reasons]
            lines.append(f"  {target}: " + ("; ".join(said) or "fits"))
    if doc.get("fix"):
        lines.append(f"Smallest change: {doc['fix']}")
    if doc.get("displace"):
        lines.append(f"Or: {doc['displace']['text']}")
