"""The reconstruction attack at scale, as a Markdown table: one row per bench_reconstruction.py JSON.

    PYTHONPATH=src python benchmarks/sparse_scaling_table.py runs/i11s6 [--summary]

Columns: private examples n, encodings, pairs scored (all pairs or a k-NN graph with K neighbours), nmf
iterations / groups per encoding / seeds, the repair pass (session 8: its nmf iterations and how many duplicate
groups it re-seeded; "warm": the kept groups continued from the first pass; session 14: "R x I" for R passes),
the release (session 14: private-sample seed / defender seed; "-" before), then per clustering the lenient, strict
and exact-sentence success and ``claimed`` (originals some group stands for; "-" before session 14), the threads,
wall and CPU seconds of the attack and the process's peak memory. Rows sorted by n, then all pairs first, then K.
``--summary``: one row per setting over its releases, mean and sample standard deviation of each success metric.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def rows(folder: Path) -> list[dict]:
    out = []
    for p in sorted(folder.glob("*.json")):
        d = json.loads(p.read_text())
        if d.get("attack") == "reconstruct-scale":
            out.append({**d, "file": p.name})
    return sorted(out, key=lambda d: (d["n_private"], d["graph_neighbours"] or 0, d["nmf_iters"], d.get("nmf_support") or 32))


def _repair(d: dict, fixed: int | None = None) -> str:
    """The repair: its iterations ("R x I" for R passes), the groups it re-seeded if given, and "warm"."""
    rounds = d.get("nmf_repair_rounds", 1)
    repair = f"{rounds} x {d['nmf_repair_iters']}" if rounds > 1 else str(d.get("nmf_repair_iters", "-"))
    return repair + ("" if fixed is None else f" ({fixed})") + (", warm" if d.get("nmf_repair_start") == "warm" else "")


def _setting(d: dict) -> tuple[str, str, str]:
    pairs = f"k-NN graph, {d['graph_neighbours']}" if d["graph_neighbours"] else "all"
    support = d.get("nmf_support") or 32 if d["graph_neighbours"] else "-"
    nmf = f"{d['nmf_iters']} / {support} / {d.get('nmf_seeds', 'paper-greedy' if d['graph_neighbours'] else 'clique')}"
    return pairs, nmf, _repair(d)


def _pct(v) -> str:
    return "-" if v is None else f"{v:.1f}"


def table(records: list[dict]) -> str:
    head = ("| n | encodings | pairs | nmf iters / support / seeds | repair iters (groups re-seeded) | release | method | "
            "lenient % | strict % | sentence % | claimed % | threads | wall s | CPU s | peak GiB | file |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for d in records:
        pairs, nmf, _ = _setting(d)
        release = f"{d['sample_seed']} / {d['defender_seed']}" if "sample_seed" in d else "-"
        for method, s in d["success"].items():
            fixed = (d.get("repaired_groups") or {}).get(method)
            lines.append(f"| {d['n_private']} | {d['n_encodings']} | {pairs} | {nmf} | {_repair(d, fixed) if fixed is not None else '-'} | "
                         f"{release} | {method} | {s['success_lenient']:.1f} | {s['success_strict']:.1f} | "
                         f"{s['success_sentence']:.1f} | {_pct((d.get('claimed') or {}).get(method))} | "
                         f"{d.get('threads', 1)} | {d['attack_total_seconds']:.0f} | {d['attack_cpu_seconds']:.0f} | "
                         f"{d['peak_rss_gib']:.2f} | {d['file']} |")
    return "\n".join(lines)


def summary(records: list[dict]) -> str:
    """Mean +- sample standard deviation over the releases of each (n, pairs, nmf, repair, method) setting."""
    groups: dict[tuple, list[tuple]] = {}
    for d in records:
        for method, s in d["success"].items():
            key = (d["n_private"], *_setting(d), method)
            groups.setdefault(key, []).append((s["success_lenient"], s["success_strict"], s["success_sentence"],
                                               (d.get("claimed") or {}).get(method)))
    head = "| n | pairs | nmf iters / support / seeds | repair iters | method | releases | lenient % | strict % | sentence % | claimed % |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for (n, pairs, nmf, repair, method), vals in groups.items():
        cells = []
        for col in zip(*vals):
            xs = [v for v in col if v is not None]
            sd = f" +- {statistics.stdev(xs):.1f}" if len(xs) > 1 else ""
            cells.append(f"{statistics.mean(xs):.1f}{sd}" if xs else "-")
        lines.append(f"| {n} | {pairs} | {nmf} | {repair} | {method} | {len(vals)} | {' | '.join(cells)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--summary"]
    found = rows(Path(args[0] if args else "runs/i11s6"))
    print(summary(found) if "--summary" in sys.argv else table(found))
