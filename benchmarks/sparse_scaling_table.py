"""The reconstruction attack at scale, as a Markdown table: one row per bench_reconstruction.py JSON.

    PYTHONPATH=src python benchmarks/sparse_scaling_table.py runs/i11s6

Columns: private examples n, encodings, pairs scored (all pairs or a k-NN graph with K neighbours), nmf
iterations / groups per encoding / seeds, the repair pass (session 8: its nmf iterations and how many duplicate
groups it re-seeded; "warm": the kept groups continued from the first pass), then per clustering the lenient, strict and exact-sentence success, the threads, wall and
CPU seconds of the attack and the process's peak memory. Rows sorted by n, then all pairs first, then K.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def rows(folder: Path) -> list[dict]:
    out = []
    for p in sorted(folder.glob("*.json")):
        d = json.loads(p.read_text())
        if d.get("attack") == "reconstruct-scale":
            out.append({**d, "file": p.name})
    return sorted(out, key=lambda d: (d["n_private"], d["graph_neighbours"] or 0, d["nmf_iters"], d.get("nmf_support") or 32))


def table(records: list[dict]) -> str:
    head = ("| n | encodings | pairs | nmf iters / support / seeds | repair iters (groups re-seeded) | method | "
            "lenient % | strict % | sentence % | threads | wall s | CPU s | peak GiB | file |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for d in records:
        pairs = f"k-NN graph, {d['graph_neighbours']}" if d["graph_neighbours"] else "all"
        support = d.get("nmf_support") or 32 if d["graph_neighbours"] else "-"
        nmf = f"{d['nmf_iters']} / {support} / {d.get('nmf_seeds', 'paper-greedy' if d['graph_neighbours'] else 'clique')}"
        for method, s in d["success"].items():
            fixed = (d.get("repaired_groups") or {}).get(method)
            repair = f"{d['nmf_repair_iters']} ({fixed})" if "nmf_repair_iters" in d and fixed is not None else "-"
            repair += ", warm" if d.get("nmf_repair_start") == "warm" else ""
            lines.append(f"| {d['n_private']} | {d['n_encodings']} | {pairs} | {nmf} | {repair} | {method} | "
                         f"{s['success_lenient']:.1f} | {s['success_strict']:.1f} | {s['success_sentence']:.1f} | "
                         f"{d.get('threads', 1)} | {d['attack_total_seconds']:.0f} | {d['attack_cpu_seconds']:.0f} | "
                         f"{d['peak_rss_gib']:.2f} | {d['file']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(rows(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/i11s6"))))
