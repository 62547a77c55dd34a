"""Report sections for TextHide: Table 1 (baseline vs intra vs inter) and the m x k sweep."""

from __future__ import annotations

from collections import defaultdict

from ..experiments.huang2020 import PAPER_TABLE1
from .registry import Context, section, table

VARIANTS = ("baseline", "texthide-intra", "texthide-inter")
M_ORDER = ["0", "1", "4", "16", "64", "256", "1024", "4096", "inf"]


def _train(records: list[dict], groups: set[str] | None = None, exclude: set[str] | None = None) -> list[dict]:
    out = [r for r in records if r.get("kind") == "train"]
    if groups is not None:
        out = [r for r in out if r.get("group") in groups]
    if exclude is not None:
        out = [r for r in out if r.get("group") not in exclude]
    return out


@section("texthide_table", "TextHide: baseline vs intra vs inter (paper Table 1)", order=10)
def texthide_table(records: list[dict], ctx: Context) -> str | None:
    runs = _train(records, exclude={"sweep"})
    by_task: dict[str, dict[str, dict]] = defaultdict(dict)
    for r in runs:
        by_task[r["task"]][r["variant"]] = r  # the last file wins for repeated runs
    if not any(len(v) > 1 for v in by_task.values()):
        return None
    rows, drops = [], []
    for task, v in sorted(by_task.items()):
        base = v.get("baseline", {}).get("score")
        cells: list[object] = [task, v.get("baseline", {}).get("metric") or next(iter(v.values()))["metric"], base]
        for var in VARIANTS[1:]:
            r = v.get(var)
            cells += [r["score"] if r else None, f"({r['m']}, {r['k']})" if r else ""]
        if base is not None and "texthide-intra" in v:
            drops.append(base - v["texthide-intra"]["score"])
        paper = PAPER_TABLE1.get(task, {})
        cells += [paper.get(x) for x in VARIANTS]
        rows.append(cells)
    head = ["task", "metric", "baseline", "intra", "(m, k)", "inter", "(m, k)", "paper base", "paper intra", "paper inter"]
    html = table(head, rows)
    if drops:
        html += f"<p>Mean drop of TextHide-intra against the baseline: <b>{sum(drops) / len(drops):.2f}</b> points over {len(drops)} tasks (paper: about 1.9).</p>"
    import matplotlib.pyplot as plt
    import numpy as np

    tasks = sorted(by_task)
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(tasks)), 3.2))
    w = 0.27
    for i, var in enumerate(VARIANTS):
        vals = [by_task[t].get(var, {}).get("score", np.nan) for t in tasks]
        ax.bar(np.arange(len(tasks)) + (i - 1) * w, vals, w, label=var)
    ax.set_xticks(np.arange(len(tasks)), tasks)
    ax.set_ylabel("score (task metric x100)")
    ax.legend(fontsize=8)
    ax.set_title("baseline vs TextHide-intra vs TextHide-inter")
    html += ctx.figure(fig, "texthide_table1", "bar chart of baseline, intra and inter scores per task")
    return html


@section("texthide_sweep", "TextHide: metric against m and k (paper Figure 2)", order=20)
def texthide_sweep(records: list[dict], ctx: Context) -> str | None:
    grids: dict[tuple, dict[tuple[str, int], float]] = defaultdict(dict)
    for r in _train(records, groups={"sweep"}):
        grids[(r["task"], r["inter"])][(str(r["m"]), int(r["k"]))] = r["score"]
    if not grids:
        return None
    import matplotlib.pyplot as plt

    html = ""
    for (task, inter), grid in sorted(grids.items()):
        ms = [m for m in M_ORDER if any(key[0] == m for key in grid)] + sorted({m for m, _ in grid} - set(M_ORDER))
        ks = sorted({k for _, k in grid})
        name = f"{task}{' inter' if inter else ''}"
        rows = [[f"k={k}"] + [grid.get((m, k)) for m in ms] for k in ks]
        html += f"<h3>{name}</h3>" + table(["", *[f"m={m}" for m in ms]], rows)
        fig, ax = plt.subplots(figsize=(5.5, 3.2))
        for k in ks:
            xs = [i for i, m in enumerate(ms) if (m, k) in grid]
            ax.plot(xs, [grid[(ms[i], k)] for i in xs], marker="o", label=f"k={k}")
        ax.set_xticks(range(len(ms)), ms)
        ax.set_xlabel("m (mask pool size)")
        ax.set_ylabel("score")
        ax.set_title(f"{name}: score vs m and k")
        ax.legend(fontsize=8)
        html += ctx.figure(fig, f"sweep_{task}{'_inter' if inter else ''}", f"{name} sweep")
    return html


@section("runs", "All training runs", order=1000)
def all_runs(records: list[dict], ctx: Context) -> str | None:
    runs = _train(records)
    if not runs:
        return None
    rows = [[r["label"], r.get("group", ""), r["mode"], r["score"], r["best_score"], r["n_train"], r["seconds"]] for r in runs]
    return table(["run", "group", "mode", "final score", "best epoch", "train examples", "seconds"], rows)
