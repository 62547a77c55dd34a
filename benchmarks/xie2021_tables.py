"""Markdown tables for docs/results_attacks.md from the issue 11 results JSONs (paper / ours / difference).

    PYTHONPATH=src python benchmarks/xie2021_tables.py runs/i11
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from privnlu import paper_values as pv
from privnlu.attacks.leakage import METRICS
from privnlu.paper_values.huang2020_search import CONDITION_COLUMNS, METRIC_ROWS, source
from privnlu.paper_values.xie2021 import TASK_ROWS, table1_column
from privnlu.report.registry import md_table


def _spread(vals: list[float]) -> str:
    if len(vals) == 1:
        return f"{vals[0]:.1f}"
    return f"{statistics.mean(vals):.1f} ± {statistics.stdev(vals):.1f} (n={len(vals)})"


def reconstruction(recs: list[dict]) -> str:
    cells: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    pair: dict[tuple, list[str]] = {}
    seen: set[tuple] = set()
    for r in recs:
        for cname, c in r["conditions"].items():
            key = (r["task"], cname, c["m"], c["k"])
            if (key, r.get("experiment_seed")) in seen:
                continue  # the same release attacked by two recipes (Table 1's (1, 4) is Figure 1's m = 1): once
            seen.add((key, r.get("experiment_seed")))
            for m, v in c["methods"].items():
                for metric in ("success_lenient", "success_strict", "success_sentence", "purity"):
                    if v.get(metric) is not None:
                        cells[key + (m,)][metric].append(v[metric])
            for net, acc in (c.get("pair_accuracy") or {}).items():
                p = pv.lookup("xie2021", "Section 4.2", "pair network", "accuracy")
                pair[key + (net, r.get("experiment_seed"))] = [
                    *pv.compare_cells(100 * acc["heldout"], p), f"{100 * acc['train']:.1f}",
                    f"{100 * acc['release']['balanced_accuracy']:.1f}"]
    rows = []
    for key in sorted(cells):
        task, cname, m, k, meth = key
        d = cells[key]
        paper = pv.lookup("xie2021", "Table 1", TASK_ROWS.get(task, task), table1_column(int(k))) if str(m) == "1" else None
        mean = statistics.mean(d["success_lenient"])
        p, o, diff = pv.compare_cells(mean, paper)
        rows.append([task, f"({m}, {k})", meth, p, _spread(d["success_lenient"]), diff,
                     _spread(d["success_strict"]) if d["success_strict"] else "-",
                     _spread(d["success_sentence"]) if d["success_sentence"] else "-", f"{statistics.mean(d['purity']):.2f}"])
    out = md_table(["task", "(m, k)", "method", "paper (Table 1)", "lenient %", "diff", "strict %", "sentence %", "purity"], rows)
    prow = [[k[0], f"({k[2]}, {k[3]})", "paper's vanilla MLP" if k[4] == "mlp" else "privnlu factorised", k[5], *v]
            for k, v in sorted(pair.items(), key=lambda kv: tuple(str(x) for x in kv[0]))]
    out += "\n\n" + md_table(["task", "(m, k)", "network", "seed", "paper %", "held-out %", "diff", "train %", "real release %"], prow)
    return out


def leakage(r: dict) -> str:
    src = source(3 if r["attack"] == "search" else 8, r["task"])
    conds = [c for c in r["conditions"] if c in CONDITION_COLUMNS]
    rows = []
    for m in METRICS:
        row = [m]
        for c in conds:
            row += pv.compare_cells(r["conditions"][c]["metrics"].get(m), pv.lookup("huang2020", src, METRIC_ROWS[m], CONDITION_COLUMNS[c]))
        rows.append(row)
    out = f"{r['task']} ({src}; {r['n_queries']} queries, corpus {r.get('corpus')} of {r.get('corpus_size')})\n\n"
    out += md_table(["metric"] + [f"{c} {w}" for c in conds for w in ("paper", "ours", "diff")], rows)
    ex = []
    for c, v in r["conditions"].items():
        for e in v.get("examples", []):
            ex.append([e["query_number"], e["query"], e["query_label"], c, e["retrieved"], e["retrieved_label"], "yes" if e["exact"] else "no"])
    ex.sort(key=lambda x: (x[0], list(r["conditions"]).index(x[3])))
    return out + "\n\n" + md_table(["query #", "query", "label", "condition", "retrieved", "label", "exact"], ex)


def scaling(recs: list[dict]) -> str:
    rows = []
    for r in sorted(recs, key=lambda r: r["n_private"]):
        for m, s in r["success"].items():
            rows.append([r["task"], r["n_private"], r["n_encodings"], r.get("graph_neighbours") or "all pairs", m,
                         s.get("success_lenient"), s.get("success_strict"), s.get("success_sentence"), r["purity"][m],
                         r["attack_total_seconds"], r.get("attack_cpu_seconds"), r["peak_rss_gib"]])
    return md_table(["task", "n", "encodings", "graph", "method", "lenient %", "strict %", "sentence %", "purity", "wall s",
                     "CPU s", "peak GiB"], rows)


def main() -> None:
    recs = [json.loads(p.read_text()) for p in sorted(Path(sys.argv[1]).glob("*.json"))]
    rec = [r for r in recs if r.get("attack") == "reconstruct"]
    if rec:
        print("## reconstruction\n\n" + reconstruction(rec) + "\n")
    sc = [r for r in recs if r.get("attack") == "reconstruct-scale"]
    if sc:
        print("## scaling\n\n" + scaling(sc) + "\n")
    for r in recs:
        if r.get("attack") in ("search", "invert"):
            print(f"## {r['attack']}\n\n" + leakage(r) + "\n")


if __name__ == "__main__":
    main()
