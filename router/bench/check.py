"""`router bench --check`: how `router check` grows with the policy.

A seeded policy of N rules (`--rules`), as platform repositories grow them: rules on kinds
and teams that do not overlap, rules on labels, GPU thresholds, fallback routes, options, a
shadowed rule every 50, a few deny rules and quotas; the inventory is the bench platform of
size S (10 targets), or `--partitions P` Slurm partitions for a wide inventory. Stages, in
wall seconds: parse (text to syntax tree), check (names and types), analyze (the analyses
of router.assure.analysis, with their witnesses). The findings are counted by code, so a run
shows that the analyses still find what they should (the shadowed rules).
"""

from __future__ import annotations

import random
import time
from typing import Any

from router.bench.generator import generate
from router.language import ast, check_policy
from router.language.parser import parse_text  # the parser: a kept tree would time the cache
from router.models import Inventory

_KINDS = ("training", "batch", "inference", "notebook")


def policy_text(rules: int, seed: int = 0) -> str:
    """A policy of `rules` rules (plus a catch-all), 3 deny rules and 3 quotas."""
    rng = random.Random(f"check:{rules}:{seed}")
    out = ["policy bench", "let big = 8", ""]
    whens: list[str] = []
    for k in range(3):
        out += [f"deny d{k}:", f'  when kind == "banned{k}" and gpus > {k + 1}',
                f'  because "kind banned{k} is retired"', ""]  # fmt: skip
    for i in range(rules):
        form = i % 5
        if i % 50 == 49:  # the same condition as an earlier rule: unreachable, with a witness
            out += [f"rule r{i}:", f"  when {whens[i - 49]}", "  route slurm", ""]
            whens.append(whens[i - 49])
            continue
        if form == 0:
            g = rng.choice([1, 2, 4, 8])
            when = f'kind == "k{i}" and gpus >= {g}'
            route = 'route slurm with qos = "normal" where gpus_per_node >= workload.gpus_per_node'
        elif form == 1:
            when = f'team == "t{i}" and kind == "{rng.choice(_KINDS)}"'
            route = f'route kubernetes with queue = "q{i}"'
        elif form == 2:
            when = f'labels.app == "a{i}"'
            route = "route any prefer lower cost"
        elif form == 3:
            when = f'kind == "k{i}" and duration > {rng.randint(1, 48)}h'
            route = "route slurm where max_time >= workload.duration else route kubernetes"
        else:
            when = f'kind == "k{i}" and gpus >= big and gpu_type in ["h100", "a100"]'
            route = "route slurm with exclusive where gpu_type == workload.gpu_type"
        whens.append(when)
        out += [f"rule r{i}:", f"  when {when}", f"  {route}", ""]
    out += ["rule rest:", "  route any prefer lower cost", ""]
    for k in range(3):
        out += [f"quota q{k}:", f'  for team == "t{k * 5 + 1}"', f"  limit gpus <= {16 * (k + 1)}",
                ""]  # fmt: skip
    return "\n".join(out)


def _wide_inventory(partitions: int) -> dict[str, Any]:
    parts = [{"name": f"p{i:05d}", "nodes": 4, "gpus_per_node": (0, 4, 8)[i % 3],
              "gpu_type": ("none", "a100", "h100")[i % 3], "cpus_per_node": 64,
              "memory_per_node": "512GiB", "max_time": f"{24 * (1 + i % 3)}h"}
             for i in range(partitions)]  # fmt: skip
    for p in parts:
        if p["gpus_per_node"] == 0:
            del p["gpu_type"]
    return {"clusters": [{"name": "wide", "backend": "slurm", "partitions": parts},
                         {"name": "k8s", "backend": "kubernetes",
                          "node_pools": [{"name": "cpu", "nodes": 4, "cpus_per_node": 32,
                                          "memory_per_node": "128GiB"}]}]}  # fmt: skip


def run_check(rules: int, seed: int = 0, partitions: int = 0) -> dict[str, Any]:
    """Time `router check`'s stages on a generated policy of `rules` rules."""
    from router.assure.analysis import analyze

    text = policy_text(rules, seed)
    data = _wide_inventory(partitions) if partitions else generate("S", seed).inventory
    inventory = Inventory.model_validate(data)
    parse_text("rule warm: route any", "warm.route")  # the parser is built once per process
    t0 = time.perf_counter()
    raw = parse_text(text, "bench.route")
    t1 = time.perf_counter()
    policy = check_policy(_as_policy(parse_text(text, "bench.route")))
    t2 = time.perf_counter()
    findings = analyze(policy, inventory, _as_policy(raw))
    t3 = time.perf_counter()
    codes: dict[str, int] = {}
    for f in findings:
        codes[f.code] = codes.get(f.code, 0) + 1
    return {
        "rules": rules, "targets": len(inventory.targets()), "seed": seed,
        "lines": text.count("\n") + 1,
        "seconds": {"parse": round(t1 - t0, 4), "check": round(t2 - t1, 4),
                    "analyze": round(t3 - t2, 4), "total": round(t3 - t0, 4)},
        "findings": dict(sorted(codes.items())),
        "witnesses": sum(1 for f in findings if f.witness is not None),
    }  # fmt: skip


def _as_policy(pf: ast.PolicyFile) -> ast.Policy:
    """One parsed file as a Policy, as parse_files gathers the statements of several."""
    policy = ast.Policy(pf.name, [pf])
    for st in pf.statements:
        buckets: dict[type, list[Any]] = {
            ast.Let: policy.lets, ast.Deny: policy.denies, ast.Rule: policy.rules,
            ast.Quota: policy.quotas, ast.Spread: policy.spreads,
        }  # fmt: skip
        buckets.get(type(st), policy.checks).append(st)
    return policy
