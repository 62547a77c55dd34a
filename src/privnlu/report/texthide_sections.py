"""Report sections for TextHide: Table 1 (baseline vs intra vs inter) and the m x k sweep."""

from __future__ import annotations

from collections import defaultdict

from .registry import Context, md_table, plural, section, table

VARIANTS = ("baseline", "texthide-intra", "texthide-inter")
M_ORDER = ["0", "1", "4", "16", "64", "256", "1024", "4096", "inf"]
TABLE1_HEAD = ["task", "metric", "n train", "baseline", "2nd metric", "intra", "2nd metric", "(m, k)", "drop", "inter", "2nd metric", "(m, k)", "drop"]


def _train(records: list[dict], groups: set[str] | None = None, exclude: set[str] | None = None) -> list[dict]:
    out = [r for r in records if r.get("kind") == "train"]
    if groups is not None:
        out = [r for r in out if r.get("group") in groups]
    if exclude is not None:
        out = [r for r in out if r.get("group") not in exclude]
    return out


def _by_task(records: list[dict]) -> dict[str, dict[str, dict]]:
    by_task: dict[str, dict[str, dict]] = defaultdict(dict)
    for r in _train(records, exclude={"sweep", "xie2022"}):
        if not r["spec"]["train"].get("abs_input"):
            by_task[r["task"]][r["variant"]] = r  # the last file wins for repeated runs
    return {t: v for t, v in by_task.items() if len(v) > 1}


def _secondary(r: dict | None) -> str:
    """The task's other metric, e.g. MRPC accuracy beside F1 (F1 rewards an all-positive guess)."""
    if not r:
        return ""
    metrics = next(iter(r["eval"].values()))
    other = {"f1_accuracy": "accuracy", "pearson_spearman": "spearman"}.get(r["metric"])
    return f"{other[:3]} {100 * metrics[other]:.2f}" if other else ""


def table1_rows(records: list[dict]) -> tuple[list[list[object]], str]:
    """Rows of Table 1 and a sentence with the mean drop of each variant against the baseline."""
    rows: list[list[object]] = []
    drops: dict[str, list[float]] = defaultdict(list)
    for task, v in sorted(_by_task(records).items()):
        base = v.get("baseline", {}).get("score")
        any_run = next(iter(v.values()))
        cells: list[object] = [task, any_run["metric"], any_run["n_train"], base, _secondary(v.get("baseline"))]
        for var in VARIANTS[1:]:
            r = v.get(var)
            drop = base - r["score"] if (r and base is not None) else None
            if drop is not None:
                drops[var].append(drop)
            cells += [r["score"] if r else None, _secondary(r), f"({r['m']}, {r['k']})" if r else "", drop]
        rows.append(cells)
    summary = "; ".join(f"mean drop of {var} against the baseline: {sum(d) / len(d):.2f} points over {plural(len(d), 'task')}"
                        for var, d in drops.items() if d)
    return rows, summary


def texthide_table_md(records: list[dict]) -> str | None:
    rows, summary = table1_rows(records)
    return md_table(TABLE1_HEAD, rows) + f"\n\n{summary} (paper, intra: about 1.9)." if rows else None


@section("texthide_table", "TextHide: baseline vs intra vs inter (paper Table 1)", order=10, markdown=texthide_table_md)
def texthide_table(records: list[dict], ctx: Context) -> str | None:
    rows, summary = table1_rows(records)
    if not rows:
        return None
    html = table(TABLE1_HEAD, rows) + f"<p>{summary} (paper, intra: about 1.9).</p>"
    import matplotlib.pyplot as plt
    import numpy as np

    by_task = _by_task(records)
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
    return html + ctx.figure(fig, "texthide_table1", "bar chart of baseline, intra and inter scores per task")


def sweep_grids(records: list[dict]) -> dict[tuple, tuple[list[str], list[int], dict[tuple[str, int], float]]]:
    grids: dict[tuple, dict[tuple[str, int], float]] = defaultdict(dict)
    for r in _train(records, groups={"sweep"}):
        grids[(r["task"], r["inter"])][(str(r["m"]), int(r["k"]))] = r["score"]
    out = {}
    for key, grid in sorted(grids.items()):
        ms = [m for m in M_ORDER if any(g[0] == m for g in grid)] + sorted({m for m, _ in grid} - set(M_ORDER))
        out[key] = (ms, sorted({k for _, k in grid}), grid)
    return out


def _grid_rows(ms, ks, grid):
    return ["k \\ m", *[f"m={m}" for m in ms]], [[f"k={k}"] + [grid.get((m, k)) for m in ms] for k in ks]


def texthide_sweep_md(records: list[dict]) -> str | None:
    parts = []
    for (task, inter), (ms, ks, grid) in sweep_grids(records).items():
        parts.append(f"{task}{' (inter)' if inter else ''}:\n\n" + md_table(*_grid_rows(ms, ks, grid)))
    return "\n\n".join(parts) or None


@section("texthide_sweep", "TextHide: metric against m and k (paper Figure 2)", order=20, markdown=texthide_sweep_md)
def texthide_sweep(records: list[dict], ctx: Context) -> str | None:
    grids = sweep_grids(records)
    if not grids:
        return None
    import matplotlib.pyplot as plt

    html = ""
    for (task, inter), (ms, ks, grid) in grids.items():
        name = f"{task}{' inter' if inter else ''}"
        html += f"<h3>{name}</h3>" + table(*_grid_rows(ms, ks, grid))
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


RUN_HEAD = ["run", "group", "mode", "eval mask", "|x| head", "final score", "best epoch", "train examples", "seconds"]


def run_rows(records: list[dict]) -> list[list[object]]:
    return [[r["label"], r.get("group", ""), r["mode"], r["spec"]["train"].get("eval_mask"), r["spec"]["train"].get("abs_input", False),
             r["score"], r["best_score"], r["n_train"], r["seconds"]] for r in _train(records)]


@section("runs", "All training runs", order=1000, markdown=lambda recs: md_table(RUN_HEAD, run_rows(recs)) if run_rows(recs) else None)
def all_runs(records: list[dict], ctx: Context) -> str | None:
    rows = run_rows(records)
    return table(RUN_HEAD, rows) if rows else None
