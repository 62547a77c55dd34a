"""Report sections for TextHide: Table 1 (baseline vs intra vs inter), the m x k grid (Figure 2), public corpora
(Table 6), dev learning curves, and the list of all runs.

Every table that reproduces one of the paper's sets the paper's number (:mod:`privnlu.paper_values.huang2020`),
ours and the difference side by side, and says how our setting differs (encoder, data size, steps, frozen or
fine-tuned); the majority-class score is shown where a score could be a constant guess.
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import partial
from pathlib import PurePath

from ..io import repeat_of
from ..paper_values import compare_cells, lookup
from ..paper_values import huang2020 as paper
from ..schemes import from_record
from .content import Content, Figure, Heading, Para, Table, either, html_only, markdown_only
from .registry import plural, section

VARIANTS = ("baseline", "texthide-intra", "texthide-inter")
SHORT = {"baseline": "baseline", "texthide-intra": "intra", "texthide-inter": "inter"}
M_ORDER = ["0", "1", "4", "16", "64", "256", "1024", "4096", "inf"]
NOT_TABLE1 = {"sweep", "figure2", "table5", "table6", "xie2022"}
PAPER_SETTING = ("Paper: BERT-base (12 layers, d = 768) fine-tuned jointly with an MLP head (768, 768, 768), full "
                 "GLUE training sets, hyperparameters chosen on 10% of train, mean of 5 runs.")
#: our metric key of a task's secondary number, beside its primary one
SECONDARY = {"f1_accuracy": "accuracy", "pearson_spearman": "spearman"}
PRIMARY_KEY = {"accuracy": "accuracy", "f1_accuracy": "f1", "matthews": "mcc", "pearson_spearman": "pearson"}
TABLE1_HEAD = ["task", "metric", "our setting", "(m, k)", "steps to the reported epoch b / intra / inter",
               "baseline: paper", "ours", "diff", "intra: paper", "ours", "diff", "inter: paper", "ours", "diff",
               "majority class"]


def record_groups(r: dict) -> set[str]:
    """The recipes a run belongs to: ``groups`` where one run serves several (Figure 2 and Table 6), else ``group``."""
    return set(r.get("groups") or [r.get("group")])


def _train(records: list[dict], groups: set[str] | None = None, exclude: set[str] | None = None) -> list[dict]:
    """Training records in any of ``groups``, without those whose every group is in ``exclude``."""
    out = [r for r in records if r.get("kind") == "train"]
    if groups is not None:
        out = [r for r in out if record_groups(r) & groups]
    if exclude is not None:
        out = [r for r in out if record_groups(r) - exclude]
    return out


def _by_task(records: list[dict]) -> dict[tuple[str, str], dict[str, dict]]:
    """(task, mode) -> variant -> record, for Table 1 (no DP runs, no |x| heads); the last file wins."""
    by_task: dict[tuple[str, str], dict[str, dict]] = defaultdict(dict)
    for r in _train(records, exclude=NOT_TABLE1):
        if from_record(r).formal != "dp" and not r["spec"]["train"].get("abs_input"):
            by_task[(r["task"], r.get("mode", "frozen"))][r["variant"]] = r
    return {t: v for t, v in sorted(by_task.items()) if len(v) > 1}


def metric_value(r: dict | None, key: str) -> float | None:
    """One metric of a run's dev scores x100: the selected epoch's for a selected run, else the last epoch's."""
    if not r:
        return None
    if key == PRIMARY_KEY.get(r["metric"]):
        return r["score"]
    hist = r.get("history") or []
    epoch = (r.get("selection") or {}).get("chosen_epoch")
    ev = hist[epoch - 1]["eval"] if epoch and hist else r["eval"]
    v = next(iter(ev.values())).get(key)
    return 100 * v if v is not None else None


def encoder_name(enc: dict) -> str:
    """A readable model name: the last path part that is not a generic folder name (``model``, ``encoder``);
    an archived record's public name (``all-MiniLM-L6-v2 (packaged, ...)``) loses its parenthesis."""
    parts = [p for p in PurePath(str(enc.get("model", "?"))).parts if p not in ("model", "encoder", "/")]
    name = parts[-1].split(" (")[0] if parts else "?"
    return name.removeprefix("gt_").replace("all_minilm_l6_v2", "all-MiniLM-L6-v2")


def setting(r: dict, n_train: bool = True) -> str:
    """Encoder, pooling, frozen or fine-tuned, training examples: how a run differs from the paper's setting
    (without the number of training examples when ``n_train`` is False, for a table that has a column for it, or
    when the record does not state it)."""
    enc = r.get("encoder") or {}
    name = encoder_name(enc)
    mode = "fine-tuned (joint)" if r.get("mode") == "joint" else "frozen"
    sel = "epoch selected on 10% of train held out" if r.get("selection") else "last epoch"
    return (f"{name} ({enc.get('layers', '?')} layers, d = {enc.get('hidden_size', '?')}, {enc.get('pooling', '?')}), "
            f"{mode}, " + (f"{r['n_train']} train, " if n_train and r.get("n_train") is not None else "") + sel)


def _settings_line(records: list[dict]) -> str:
    """One line naming our setting(s) for a table whose rows leave it out (the training examples are a column)."""
    found = sorted({setting(r, n_train=False) for r in records})
    return ("Our setting: " + "; ".join(found) + ", one run per cell unless a cell lists several.") if found else ""


def _steps(r: dict | None) -> str:
    if not r:
        return "-"
    if "steps" in r:
        return str(r["steps"])
    bs = r["spec"]["train"]["batch_size"]
    return str(len(r.get("history", [])) * -(-r["n_train"] // bs))


def table1_rows(records: list[dict]) -> tuple[list[list[object]], str]:
    """Rows of Table 1 (one per task and metric) and a sentence comparing the mean reductions with the paper's."""
    rows: list[list[object]] = []
    # per variant, one entry a task: (our drop, the paper's row or None, does the task's baseline beat the majority?)
    drops: dict[str, list[tuple[float, str | None, bool]]] = defaultdict(list)
    left_out: list[str] = []
    for (task, mode), v in _by_task(records).items():
        any_run = next(iter(v.values()))
        keys = [PRIMARY_KEY[any_run["metric"]]] + ([SECONDARY[any_run["metric"]]] if any_run["metric"] in SECONDARY else [])
        tv = v.get("texthide-intra") or v.get("texthide-inter")
        point = f"({tv['m']}, {tv['k']})" if tv else "-"
        steps = " / ".join(_steps(v.get(var)) for var in VARIANTS)
        maj = (v.get("baseline") or any_run).get("majority") or {}
        base0 = metric_value(v.get("baseline"), keys[0])
        beats = not (base0 is not None and maj.get("score") is not None and base0 <= maj["score"])
        if not beats:
            left_out.append(f"{task} ({mode})")
        for i, key in enumerate(keys):
            cells: list[object] = [f"{task} ({mode})", key, setting(v.get("baseline") or any_run), point, steps]
            base = metric_value(v.get("baseline"), key)
            for var in VARIANTS:
                ours = metric_value(v.get(var), key)
                cells += compare_cells(ours, paper.table1(task, var, key), digits=2)
                if i == 0 and var != "baseline" and ours is not None and base is not None:
                    row = paper.TASK_ROWS[(task, key)] if task in paper.PRIMARY_METRIC else None
                    drops[f"{var} ({mode})"].append((base - ours, row, beats))
            mcell = maj.get("score") if i == 0 else maj.get(key if key == "accuracy" else "")
            cells.append(mcell if mcell is not None else "-")
            rows.append(cells)
    parts = []
    for var, entries in drops.items():
        parts.append(f"mean reduction of {var}: " + _mean_reduction(var, entries))
        kept = [e for e in entries if e[2]]
        if 0 < len(kept) < len(entries):  # the same mean without the tasks where no cost can be read
            parts[-1] += ", or over the tasks whose baseline beats the majority class: " + _mean_reduction(var, kept)
    if left_out:
        parts.append(f"baseline at or under the majority class (no cost can be read there): {', '.join(left_out)}")
    claim = lookup("huang2020", "Table 1", "mean reduction", "TextHide-intra")
    summary = "; ".join(parts) + (f". The paper states {claim.value} for intra, which is the mean over all 12 numbers "
                                  f"of its Table 1 ({paper.mean_reduction('texthide-intra'):.2f}); over one primary "
                                  f"metric per task it is {paper.mean_reduction('texthide-intra', paper.primary_rows()):.2f}."
                                  if claim else "")
    return rows, summary


def _mean_reduction(var: str, entries: list[tuple[float, str | None, bool]]) -> str:
    """Our mean drop over the tasks of ``entries`` and the paper's over the same tasks (its primary metric)."""
    rows = [row for _, row, _ in entries if row is not None]
    same = paper.mean_reduction(var.split(" ")[0], rows) if rows else None
    return (f"ours {sum(d for d, _, _ in entries) / len(entries):.2f} points over {plural(len(entries), 'task')}"
            + (f" (paper, same tasks, primary metric: {same:.2f})" if same is not None else ""))


def _table1_plot(by_task: dict[tuple[str, str], dict[str, dict]]):
    import matplotlib.pyplot as plt
    import numpy as np

    keys = list(by_task)
    fig, ax = plt.subplots(figsize=(max(5, 1.5 * len(keys)), 3.4))
    w = 0.27
    x = np.arange(len(keys))
    for i, var in enumerate(VARIANTS):
        ax.bar(x + (i - 1) * w, [metric_value(by_task[t].get(var), PRIMARY_KEY[next(iter(by_task[t].values()))["metric"]])
                                 or np.nan for t in keys], w, label=f"ours, {SHORT[var]}")
        pv = [paper.table1(t[0], var) for t in keys]
        ax.scatter(x + (i - 1) * w, [p.value if p else np.nan for p in pv], marker="_", s=200, color="black",
                   label="paper (BERT-base, fine-tuned)" if i == 0 else None, zorder=3)
    maj = [((by_task[t].get("baseline") or {}).get("majority") or {}).get("score", np.nan) for t in keys]
    ax.scatter(x, maj, marker="x", color="red", label="majority class", zorder=3)
    ax.set_xticks(x, [f"{t} ({m})" for t, m in keys], fontsize=8)
    ax.set_ylabel("dev score (task metric x100)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title("TextHide Table 1: ours (bars) vs the paper (black)")
    return fig


@section("texthide_table", "TextHide: baseline vs intra vs inter (paper Table 1)", order=10, kinds=("train",))
def texthide_table(records: list[dict]) -> Content | None:
    """Table 1 per task and mode; in Markdown the setting, the same for every row but the training examples, moves
    under the table."""
    rows, summary = table1_rows(records)
    if not rows:
        return None
    by_task = _by_task(records)
    runs = [r for v in by_task.values() for r in v.values()]
    n_train = {(f"{t} ({m})"): (v.get("baseline") or next(iter(v.values())))["n_train"] for (t, m), v in by_task.items()}
    compact = [row[:2] + [n_train[row[0]]] + row[3:] for row in rows]
    return [either(Table(TABLE1_HEAD, rows),
                   [Table(TABLE1_HEAD[:2] + ["train examples"] + TABLE1_HEAD[3:], compact), Para(_settings_line(runs))]),
            Para(summary), Para(PAPER_SETTING),
            Figure(partial(_table1_plot, by_task), "texthide_table1",
                   "bar chart of baseline, intra and inter per task, paper marked")]


def _m_rank(m: object) -> int:
    return M_ORDER.index(str(m)) if str(m) in M_ORDER else len(M_ORDER)


def _curve_runs(records: list[dict]) -> list[dict]:
    """The runs with a dev curve, by task and mode, then baseline, intra, inter, then m and k in the grid's order."""
    runs = [r for r in _train(records) if r.get("dev_curve") and r.get("group") in ("table1", "table6", "figure2")]
    return sorted(runs, key=lambda r: (r["task"], r.get("mode", "frozen"),
                                       VARIANTS.index(r["variant"]) if r.get("variant") in VARIANTS else len(VARIANTS),
                                       _m_rank(r.get("m")), int(r.get("k") or 0), str((r.get("spec") or {}).get("public"))))


CURVE_HEAD = ["run", "mode", "group", "chosen epoch (held-out 10%)", "epochs", "dev score per epoch"]


def _curve_rows(runs: list[dict]) -> list[list[object]]:
    return [[r["label"] + (f" ({r['spec']['public']})" if r.get("inter") else ""), r.get("mode"), r.get("group"),
             r["selection"]["chosen_epoch"], len(r["dev_curve"]), " ".join(f"{s:.1f}" for s in r["dev_curve"])]
            for r in runs]


CURVE_MD_HEAD = ["run", "mode", "chosen epoch (held-out 10%) / epochs", "first epochs at the majority class",
                 "dev: epoch 1", "dev: chosen epoch", "dev: best epoch (not used)", "dev: last epoch", "majority class"]


def _curve_md_rows(runs: list[dict]) -> list[list[object]]:
    """A learning curve in a few numbers: where it starts, how long it sits at the majority class, the chosen epoch's
    score, the best and the last (the whole curve is in the HTML report)."""
    rows = []
    for r in runs:
        c, e = r["dev_curve"], r["selection"]["chosen_epoch"]
        maj = (r.get("majority") or {}).get("score")
        flat = 0
        while maj is not None and flat < len(c) and abs(c[flat] - maj) < 0.05:
            flat += 1
        best = max(range(len(c)), key=lambda i: c[i])
        rows.append([r["label"] + (f" ({r['spec']['public']})" if r.get("inter") else ""), r.get("mode"), f"{e} / {len(c)}",
                     flat if maj is not None else "-", f"{c[0]:.1f}", f"{c[e - 1]:.1f}", f"{c[best]:.1f} ({best + 1})",
                     f"{c[-1]:.1f}", f"{maj:.2f}" if maj is not None else "-"])
    return rows


def _curves_plot(group: str, task: str, mode: str, rs: list[dict]):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    for r in rs:
        name = r["label"].removeprefix(f"{task}-") + (f" ({r['spec']['public']})" if r.get("inter") else "")
        line, = ax.plot(range(1, len(r["dev_curve"]) + 1), r["dev_curve"], label=name)
        e = r["selection"]["chosen_epoch"]
        ax.plot([e], [r["dev_curve"][e - 1]], marker="o", color=line.get_color())
    maj = (rs[0].get("majority") or {}).get("score")
    if maj is not None:
        ax.axhline(maj, color="grey", linestyle=":", label="majority class")
    ax.set_xlabel("epoch (dot: chosen on held-out train)")
    ax.set_ylabel("dev score")
    ax.set_title(f"{group}: {task}, {mode}")
    ax.legend(fontsize=6)
    return fig


@section("texthide_curves", "TextHide: dev learning curves (epoch chosen on held-out train)", order=15,
         kinds=("train",))
def texthide_curves(records: list[dict]) -> Content | None:
    """The page draws every curve; the docs give each in a few numbers."""
    runs = _curve_runs(records)
    if not runs:
        return None
    groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for r in runs:
        groups[(r["group"], r["task"], r.get("mode", "frozen"))].append(r)
    return [*[Figure(partial(_curves_plot, group, task, mode, rs), f"curves_{group}_{task}_{mode}",
                     f"dev learning curves, {group} {task} {mode}") for (group, task, mode), rs in sorted(groups.items())],
            either(Table(CURVE_HEAD, _curve_rows(runs)),
                   [Table(CURVE_MD_HEAD, _curve_md_rows(runs)),
                    Para("Dev scores of the epochs, one run each; the epoch is chosen on the 10% of train held out, "
                         "never on dev. \"First epochs at the majority class\": how many epochs the run scored exactly "
                         "the majority class before it learned anything (the HTML report draws every curve).")])]


def sweep_grids(records: list[dict]) -> dict[tuple, tuple[list[str], list[int], dict[tuple[str, int], float]]]:
    """(task, inter, mode) -> (m values, k values, scores)."""
    grids: dict[tuple, dict[tuple[str, int], float]] = defaultdict(dict)
    for r in _train(records, groups={"sweep", "figure2"}):
        grids[(r["task"], r["inter"], r.get("mode", "frozen"))][(str(r["m"]), int(r["k"]))] = r["score"]
    out = {}
    for key, grid in sorted(grids.items()):
        ms = [m for m in M_ORDER if any(g[0] == m for g in grid)] + sorted({m for m, _ in grid} - set(M_ORDER))
        out[key] = (ms, sorted({k for _, k in grid}), grid)
    return out


def _grid_rows(ms, ks, grid):
    return ["", *[f"m={m}" for m in ms]], [[f"k={k}"] + [grid.get((m, k), "-") for m in ms] for k in ks]


def _claims(source: str) -> str:
    from ..paper_values import values

    return " ".join(f"\u201c{v.claim}\u201d" for v in values("huang2020", source) if v.claim)


def _grid_setting(records: list[dict], task: str, inter: bool, mode: str) -> str:
    """The setting and the majority class of one grid (its runs share them)."""
    runs = [r for r in _train(records, groups={"sweep", "figure2"})
            if (r["task"], r["inter"], r.get("mode", "frozen")) == (task, inter, mode)]
    sets = sorted({setting(r) for r in runs})
    maj = {(r.get("majority") or {}).get("score") for r in runs} - {None}
    return "; ".join(sets) + (f"; majority class {next(iter(maj)):.2f}" if len(maj) == 1 else "") + "; one run per point"


def _sweep_plot(records: list[dict], task: str, inter: bool, mode: str, ms: list[str], ks: list[int],
                grid: dict[tuple[str, int], float]):
    import matplotlib.pyplot as plt

    name = f"{task}{' inter' if inter else ''}, {mode}"
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    for k in ks:
        xs = [i for i, m in enumerate(ms) if (m, k) in grid]
        ax.plot(xs, [grid[(ms[i], k)] for i in xs], marker="o", label=f"k={k}")
    maj = {(r.get("majority") or {}).get("score") for r in _train(records, groups={"sweep", "figure2"})
           if (r["task"], r["inter"], r.get("mode", "frozen")) == (task, inter, mode)} - {None}
    if len(maj) == 1:  # the majority-class line; points at or below it crossed out
        floor = maj.pop()
        ax.axhline(floor, color="grey", linestyle=":", label="majority class")
        flat = [(i, grid[(m, k)]) for k in ks for i, m in enumerate(ms) if (m, k) in grid and grid[(m, k)] <= floor]
        if flat:
            ax.scatter(*zip(*flat), marker="x", s=60, color="red", zorder=4,
                       label="no useful utility (at or below the majority class)")
    ax.set_xticks(range(len(ms)), ms)
    ax.set_xlabel("m (mask pool size)")
    ax.set_ylabel("score")
    ax.set_title(f"{name}: score vs m and k")
    ax.legend(fontsize=8)
    return fig


@section("texthide_sweep", "TextHide: metric against m and k (paper Figure 2)", order=20, kinds=("train",))
def texthide_sweep(records: list[dict]) -> Content | None:
    grids = sweep_grids(records)
    if not grids:
        return None
    out: list = [html_only(Para(f"The paper's Figure 2 is an image; its text says: {_claims('Figure 2')}"))]
    for (task, inter, mode), (ms, ks, grid) in grids.items():
        name = f"{task}{' inter' if inter else ''}, {mode}"
        out += [either(Heading(3, name), Para(f"{task}{' (inter)' if inter else ''}, {mode} "
                                              f"({_grid_setting(records, task, inter, mode)}); (m, k) = (0, 1) is the "
                                              "baseline:")),
                Table(*_grid_rows(ms, ks, grid)),
                Figure(partial(_sweep_plot, records, task, inter, mode, ms, ks, grid),
                       f"sweep_{task}{'_inter' if inter else ''}_{mode}", f"{name} sweep")]
    return [*out, markdown_only(Para("The paper's Figure 2 (BERT-base fine-tuned, eight GLUE tasks) is an image; its "
                                     f"text says: {_claims('Figure 2')}"))]


TABLE6_HEAD = ["run", "public corpus", "n public", "n private", "paper: acc.", "ours (mean of runs)", "diff",
               "each run", "our setting"]


def table6_rows(records: list[dict]) -> list[list[object]]:
    """One row per (variant, corpus, setting); repeated runs of a cell (the recipe run into several folders) are
    averaged, and each run's score is listed beside the mean."""
    cells: dict[tuple, list[dict]] = defaultdict(list)
    for r in _train(records, groups={"table6"}):
        corpus = r["spec"]["public"] if r["inter"] else "-"
        cells[(VARIANTS.index(r["variant"]), corpus, r["n_train"], setting(r))].append(r)
    rows = []
    for (_, corpus, n_train, our_setting), runs in sorted(cells.items()):
        r = runs[0]
        pv = lookup("huang2020", "Table 6", corpus.upper(), "Acc.") if r["inter"] else None
        if r["variant"] == "baseline":
            pv = lookup("huang2020", "Table 1", "SST-2", "Baseline")
        elif not r["inter"]:
            pv = lookup("huang2020", "Table 1", "SST-2", "TextHide-intra")
        scores = [run["score"] for run in runs]
        rows.append([r["variant"], corpus, r.get("n_public") or "-", n_train,
                     *compare_cells(sum(scores) / len(scores), pv, digits=2),
                     " / ".join(f"{x:.2f}" for x in scores), our_setting])
    return rows


def _table6_note() -> str:
    claim = lookup("huang2020", "Table 6", "all corpora", "Acc.")
    paper = ", ".join(f"{c} {v.value:.1f}" for c in ("QNLI", "QQP", "MNLI") if (v := lookup("huang2020", "Table 6", c, "Acc.")))
    return (f"Paper (Table 6, BERT-base fine-tuned, all 67k SST-2 examples private, (256, 4)): TextHide-inter with "
            f"QNLI (108k), QQP (364k) or MNLI (393k) sentences, unlabelled, as the public corpus: {paper}; its baseline "
            f"and intra rows come from its Table 1. None of its corpora is among ours (qnli-dev is QNLI's dev split, not "
            f"its training set), so our inter rows have no paper cell. The paper: \u201c{claim.claim}\u201d")


@section("texthide_table6", "TextHide-inter with different public corpora (paper Table 6)", order=25,
         kinds=("train",))
def texthide_table6(records: list[dict]) -> Content | None:
    """In Markdown the setting column moves under the table."""
    rows = table6_rows(records)
    if not rows:
        return None
    runs = _train(records, groups={"table6"})
    maj = {(r.get("majority") or {}).get("score") for r in runs} - {None}
    return [either(Table(TABLE6_HEAD, rows),
                   [Table(TABLE6_HEAD[:-1], [row[:-1] for row in rows]),
                    Para(_settings_line(runs) + (f" Majority class: {next(iter(maj)):.2f}." if len(maj) == 1 else ""))]),
            Para(_table6_note())]


# -- Table 5: a second encoder family --------------------------------------------------------------------------------

TABLE5_HEAD = ["encoder", "task", "metric", "train examples", "epochs", "steps b / intra / inter",
               "baseline: paper", "ours", "diff", "intra: paper", "ours", "diff", "inter: paper", "ours", "diff",
               "intra cost: paper", "ours", "inter cost: paper", "ours", "majority class", "each run: b / intra / inter"]


def _table5_runs(records: list[dict]) -> dict[tuple[str, str, str], dict[str, list[dict]]]:
    """(encoder, task, budget) -> variant -> the Table 5 recipe's runs of that cell (one per repeat). The encoder is
    named with its mode where that is not the paper's joint fine-tuning, e.g. ``all-mpnet-base-v2 (frozen)``; runs
    of one encoder at two budgets are two rows, never averaged together."""
    by: dict[tuple[str, str, str], dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in _train(records, groups={"table5"}):
        budget = json.dumps([r.get("n_train"), r.get("budget")], sort_keys=True)
        by[(encoder_name(r.get("encoder") or {}) + _mode_mark(r), r["task"], budget)][r["variant"]].append(r)

    def order(v: dict[str, list[dict]]) -> tuple[bool, int, int]:  # joint (the paper's setting) first, then the
        r = _first(v)                                                # widest encoder, then the largest budget
        return (bool(_mode_mark(r)), -int((r.get("encoder") or {}).get("hidden_size") or 0),
                -int(r.get("n_train") or 0))

    for v in by.values():
        for runs in v.values():
            runs.sort(key=_repeat_index)
    return {k: dict(v) for k, v in sorted(by.items(), key=lambda kv: (kv[0][1], *order(kv[1]), kv[0][0], kv[0][2]))}


def _repeat_index(r: dict) -> int:
    """A run's repeat number, read from its record's file name (``io.repeat_name``)."""
    return repeat_of(PurePath(str(r.get("_source", ""))).stem)


def _mode_mark(r: dict) -> str:
    """``" (frozen)"`` for a run outside the paper's joint fine-tuning, ``""`` for a joint one."""
    mode = r.get("mode", "joint")
    return "" if mode == "joint" else f" ({mode})"


def _first(v: dict[str, list[dict]]) -> dict:
    """The cell's reference run: the baseline's first, else any variant's."""
    return (v.get("baseline") or next(iter(v.values())))[0]


def _mean_metric(runs: list[dict] | None, key: str) -> float | None:
    """The mean of one metric over a cell's runs (None when a run lacks it)."""
    values = [metric_value(r, key) for r in runs or []]
    return sum(values) / len(values) if values and None not in values else None


def _cost(base: float | None, var: float | None, majority: float | None = None) -> str:
    """``base - var`` in points; not read where the variant scores at or under the majority class (it learned
    nothing, so the difference measures the budget, not TextHide)."""
    if base is None or var is None:
        return "-"
    if majority is not None and var <= majority:
        return "none readable (at majority)"
    return f"{base - var:+.2f}"


def table5_rows(records: list[dict]) -> list[list[object]]:
    """Rows of Table 5 (one per encoder, task and metric): the paper's RoBERTa-base cell, ours (the mean of a cell's
    runs) and the difference per variant, the TextHide cost (baseline minus the variant, points) in the paper and
    in ours, and each run's score."""
    rows = []
    for (enc, task, _), v in _table5_runs(records).items():
        any_run = _first(v)
        keys = [PRIMARY_KEY[any_run["metric"]]] + ([SECONDARY[any_run["metric"]]] if any_run["metric"] in SECONDARY else [])
        for key in keys:
            ours = {var: _mean_metric(v.get(var), key) for var in VARIANTS}
            theirs = {var: paper.table5(task, var, key) for var in VARIANTS}
            cells: list[object] = [enc, task, key, any_run["n_train"], (any_run.get("budget") or {}).get("epochs", "-"),
                                   " / ".join(_steps((v.get(var) or [None])[0]) for var in VARIANTS)]
            for var in VARIANTS:
                cells += compare_cells(ours[var], theirs[var], digits=2)
            pv = {var: (theirs[var].value if theirs[var] else None) for var in VARIANTS}
            maj = (any_run.get("majority") or {}).get("score") if key == keys[0] else None
            for var in VARIANTS[1:]:
                cells += [_cost(pv["baseline"], pv[var]), _cost(ours["baseline"], ours[var], maj)]
            cells.append(f"{maj:.2f}" if maj is not None else "-")
            each = [", ".join(f"{x:.2f}" for r in v.get(var) or [] if (x := metric_value(r, key)) is not None) or "-"
                    for var in VARIANTS]
            cells.append(" / ".join(each) if any(len(v.get(var) or []) > 1 for var in VARIANTS) else "one each")
            rows.append(cells)
    return rows


def training_seconds(r: dict) -> float:
    """A training record's seconds, at least the sum of its epochs' (a record that a resumed run wrote before
    privnlu 0.8.5 counted only its last call, and its epoch history bounds the whole run's time from below)."""
    epochs = sum(h.get("seconds") or 0 for h in r.get("history") or [] if isinstance(h, dict))
    return round(max(float(r.get("seconds") or 0), epochs), 2)


def _table5_budget(records: list[dict]) -> str:
    """Each encoder's budget, from its records: examples, epochs, batch, learning rates, dev sentences, minutes, and
    the binomial standard error of the baseline's accuracy, ``sqrt(p (1 - p) / n_dev)``, to read a cost against."""
    out = []
    for (enc, task, _), v in _table5_runs(records).items():
        r = _first(v)
        b = r.get("budget") or {}
        lrs = ", ".join(f"{x:g}" for x in b.get("encoder_lrs") or []) or "-"
        encoder = "encoder frozen" if _mode_mark(r) else f"encoder lr {lrs}"
        runs = [x for cell in v.values() for x in cell]
        secs = sum(training_seconds(x) for x in runs)
        n_eval = r.get("n_eval")
        n_dev = n_eval.get("dev") if isinstance(n_eval, dict) else n_eval
        floor = f" (at least {b['min_texthide_steps']} optimizer steps)" if b.get("min_texthide_steps") else ""
        text = (f"{enc} on {task}: the first {r['n_train']} training examples (10% held out to choose the epoch), "
                f"{plural(b.get('epochs') or 0, 'epoch')}{floor}, batch {b.get('batch_size', '?')}, {encoder}, head lr "
                f"{b.get('head_lr') or 0:g}, the first {n_dev or '?'} dev sentences, {secs / 60:.0f} minutes on 2 "
                f"shared CPU cores for the {plural(len(runs), 'run')}")
        if r.get("metric") == "accuracy" and n_dev and "baseline" in v:
            se = 100 * (r["score"] / 100 * (1 - r["score"] / 100) / n_dev) ** 0.5
            text += (f"; binomial standard error of the baseline's accuracy on these sentences {se:.1f} points, of a "
                     f"difference of two runs about {se * 2 ** 0.5:.1f}")
        out.append(text)
    return "Budget: " + "; ".join(out) + "." if out else ""


TABLE5_NOTE = ("Cost: the baseline minus the variant, points (positive: TextHide loses accuracy). A TextHide cell at or "
               "under the majority class has learned nothing within its budget; its difference to the baseline "
               "measures the budget, not TextHide, and is not read.")
TABLE5_PAPER = ("Paper (Table 5, Appendix B.2): RoBERTa-base (12 layers, d = 768) fine-tuned jointly with an MLP head, "
                "the full SST-2 training set (67k), hyperparameters chosen on 10% of train, mean of 5 runs, "
                "(m, k) = (256, 4). Our second family is all-mpnet-base-v2 (12 layers, d = 768, MPNet pretraining "
                "then sentence-embedding training), not RoBERTa-base: the paper column is the paper's RoBERTa row, "
                "set beside ours for the shape of the result (the cost of intra and inter), not as the same model.")
TABLE5_FROZEN = ("A row marked (frozen) is not the paper's setting: the encoder stays fixed and only the head trains, on "
                 "Table 1's frozen budget (its minutes count the head's training; the encoder's pass over the data "
                 "runs once and is cached). Its paper columns are still the fine-tuned RoBERTa-base row, for reference "
                 "(as in Table 1's frozen table); what it reads is the cost of intra and inter for each family where "
                 "a CPU can resolve it, set against the other family's frozen row.")


def _table5_paper_note(records: list[dict]) -> str:
    frozen = any(_mode_mark(_first(v)) for v in _table5_runs(records).values())
    return TABLE5_PAPER + (" " + TABLE5_FROZEN if frozen else "")


@section("texthide_table5", "TextHide with a second encoder family (paper Table 5)", order=12, kinds=("train",))
def texthide_table5(records: list[dict]) -> Content | None:
    rows = table5_rows(records)
    if not rows:
        return None
    runs = [r for v in _table5_runs(records).values() for cell in v.values() for r in cell]
    return [Table(TABLE5_HEAD, rows), Para(TABLE5_NOTE), markdown_only(Para(_settings_line(runs))),
            Para(_table5_budget(records)), Para(_table5_paper_note(records))]


RUN_HEAD = ["run", "group", "mode", "DP (mechanism, epsilon, calibration)", "eval mask", "|x| head", "reported score",
            "best dev score (any epoch)", "train examples", "seconds"]


def _dp_cell(r: dict) -> str:
    d = r.get("dp")
    if not d:
        return "-"
    if "mechanism" not in d:  # DP-SGD: the model's accounted (epsilon, delta)
        return f"DP-SGD, eps {d['target_epsilon']:g} (accounted {d['epsilon']:.3g}), delta {d['delta']:.2g}"
    acc = d.get("accounted_epsilon")
    accounted = "no epsilon: one noise per batch, not DP" if acc is None else f"accounted {acc:.3g}"
    return f"{d['mechanism']}, eps {d['target_epsilon']:g} ({accounted}), {d['calibration']}"


def run_rows(records: list[dict]) -> list[list[object]]:
    return [[r["label"] + (f" ({r['spec'].get('public')})" if r.get("inter") else ""), r.get("group", ""), r["mode"], _dp_cell(r), r["spec"]["train"].get("eval_mask"),
             r["spec"]["train"].get("abs_input", False), r["score"], r["best_score"], r["n_train"], training_seconds(r)]
            for r in _train(records)]


@section("runs", "All training runs", order=1000, kinds=("train",))
def all_runs(records: list[dict]) -> Content:
    return [Table(RUN_HEAD, run_rows(records))]
