"""Report section for DP instance encoding utility (Xie & Hong 2022, Figure 1): score against epsilon.

Every DP run (the ``xie2022`` recipe or ``train --scheme dp``) is a point of a curve named by its mechanism,
calibration, scheme (``dp-ie``: the paper's, no sign mask; ``dp-ie-masked``: with TextHide's masks), queries
(clean or noisy) and mode (frozen or fine-tuned). CoLA is shown in accuracy, as the paper plots it, and in MCC.
The paper's Figure 1 is an image: its values are not available, only the claims of its text, printed beside.
Repeats of a point (the recipe run into several folders) are averaged, each run listed beside the mean.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from functools import partial

from ..paper_values import values
from ..schemes import from_record
from .content import Content, Figure, Heading, Para, Table, either, html_only, markdown_only
from .markup import Markup, join
from .registry import section
from .texthide_sections import encoder_name

Curve = dict[float, tuple[list[dict], float]]  # target epsilon -> (the runs, accounted epsilon)


def _metrics(task: str) -> tuple[str, ...]:
    return ("accuracy", "mcc") if task == "cola" else ("accuracy",) if task in ("sst2", "tweets") else ("score",)


def metric_of(r: dict, key: str) -> float | None:
    ev = next(iter((r.get("eval") or {}).values()), {})
    if key in ev:
        return 100 * ev[key]
    return r["score"] if key == "score" or r.get("metric", "accuracy") == "accuracy" else None


def curve_name(r: dict) -> str:
    d = r["dp"]
    sp = (r.get("spec") or {}).get("dp") or {}
    scheme = r.get("dp_scheme") or ("dp-ie" if str(r["m"]) == "0" else "dp-ie-masked")
    cal = "paper (not DP)" if d["calibration"] == "paper" else "correct"
    if d.get("noise_reading") == "per-batch":  # Algorithm 1 as printed: its own curve, never mixed with sound ones
        cal += ", one noise per batch (not DP)"
    q = "noisy queries" if sp.get("noisy_queries", True) else "clean queries"
    return f"{d['mechanism']}, {cal}, {scheme} (m={r['m']}, k={r['k']}), {q}, {r.get('mode', 'frozen')}"


def mean_of(runs: list[dict], key: str) -> float | None:
    """The metric averaged over the repeats of one point (None where the runs lack it)."""
    vals = [metric_of(r, key) for r in runs]
    return None if None in vals else statistics.mean(vals)  # type: ignore[type-var]


#: in the Markdown form a cell lists at most this many repeats; beyond, it gives the mean and the count, and the
#: table of repeated points lists each run (a docs page cannot hold nine runs in each of eight columns)
INLINE_RUNS = 3


def cell(runs: list[dict], key: str, inline: int | None = None) -> object:
    """One run: its score; repeats: ``mean (run 1 / run 2 / ...)``, so the spread is never hidden (with ``inline``
    and more runs than that: ``mean (n runs)``, each run then listed in the table of repeated points)."""
    mu = mean_of(runs, key)
    if len(runs) == 1 or mu is None:
        return mu
    if inline is not None and len(runs) > inline:
        return f"{mu:.2f} ({len(runs)} runs)"
    return f"{mu:.2f} ({' / '.join(f'{metric_of(r, key):.2f}' for r in runs)})"


def _curves(records: list[dict]) -> dict[tuple, tuple[dict[str, list[dict]], dict[str, Curve]]]:
    """Per (task, train examples, epochs): reference runs (baseline, TextHide) and one curve per DP configuration,
    repeats kept together; runs of different budgets are never averaged."""
    refs: dict[tuple, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    curves: dict[tuple, dict[str, Curve]] = defaultdict(lambda: defaultdict(dict))
    for r in records:
        where = (r["task"], r.get("n_train", 0), (r.get("spec") or {}).get("train", {}).get("epochs", 0))
        scheme = from_record(r)
        if scheme.formal == "dp" and scheme.release == "per-batch" and r.get("dp"):  # DP-IE (DP-SGD: its own section)
            point = curves[where][curve_name(r)].setdefault(float(r["dp"]["target_epsilon"]),
                                                             ([], r["dp"]["accounted_epsilon"]))
            point[0].append(r)
        elif r.get("group") == "xie2022":
            name = "baseline" if scheme.release == "none" else f"TextHide ({r['m']}, {r['k']})"
            refs[where][f"{name}, {r.get('mode', 'frozen')}"].append(r)
    return {w: (dict(refs[w]), dict(sorted(curves[w].items()))) for w in sorted(curves)}


def _majority(refs: dict[str, list[dict]], curves: dict[str, Curve], key: str) -> float | None:
    some = next(iter(refs.values()), None) or next(iter(next(iter(curves.values())).values()))[0]
    return (some[0].get("majority") or {}).get("accuracy" if key == "accuracy" else "score")


def _noise(r: dict) -> float | None:
    return (r.get("dp") or {}).get("noise")


def _rows(task: str, refs: dict[str, list[dict]], curves: dict[str, Curve],
          inline: int | None = None) -> tuple[list[str], list[list[object]]]:
    eps = sorted({e for c in curves.values() for e in c})
    head = ["run", "metric", *[f"eps={e:g}" for e in eps]]
    rows: list[list[object]] = []
    for key in _metrics(task):
        for name, runs in sorted(refs.items()):
            rows.append([name, key, *[cell(runs, key, inline)] * len(eps)])
        for name, c in curves.items():
            rows.append([name, key, *[cell(c[e][0], key, inline) if e in c else "-" for e in eps]])
        maj = _majority(refs, curves, key)
        if maj is not None:
            rows.append(["majority class", key, *[maj] * len(eps)])
    for name, c in curves.items():
        rows.append([name, "accounted epsilon", *[("none (one noise per batch: not DP)" if c[e][1] is None else
                                                   f"{c[e][1]:.3g}") if e in c else "-" for e in eps]])
    for name, c in curves.items():  # the noise each point adds, where the records state it
        if all(_noise(c[e][0][0]) is not None for e in c):
            label = "noise sigma per coordinate" if name.startswith("gaussian") else "noise scale b per coordinate"
            rows.append([name, label, *[f"{_noise(c[e][0][0]):.3g}" if e in c else "-" for e in eps]])
    return head, rows


def _at_majority(task: str, refs: dict[str, list[dict]], curves: dict[str, Curve]) -> str:
    """The reference runs (baseline, TextHide) that score at or below the majority class, stated as a fact."""
    notes = []
    for key in _metrics(task):
        maj = _majority(refs, curves, key)
        if maj is None:
            continue
        for name, runs in sorted(refs.items()):
            mu = mean_of(runs, key)
            if mu is not None and mu <= maj + 1e-9:
                notes.append(f"{name}, {key} {mu:.2f} ({'at' if abs(mu - maj) < 1e-9 else 'below'} the majority "
                             f"class's {maj:.2f})")
    return ("Reference runs at or below the majority class: " + "; ".join(notes) + ".") if notes else ""


REPEATS_HEAD = ["run", "epsilon", "metric", "runs", "mean", "sd", "min", "max", "runs above the majority class",
                "each run"]


def _repeat_rows(task: str, refs: dict[str, list[dict]], curves: dict[str, Curve]) -> list[list[object]]:
    """The points run more than once: how far their repeats spread, and how many left the majority class."""
    points = [(name, "-", runs) for name, runs in sorted(refs.items())]
    points += [(name, f"{e:g}", c[e][0]) for name, c in curves.items() for e in sorted(c)]
    rows: list[list[object]] = []
    for key in _metrics(task):
        maj = _majority(refs, curves, key)
        for name, eps, runs in points:
            vals = [metric_of(r, key) for r in runs]
            if len(runs) < 2 or None in vals:
                continue
            above = "-" if maj is None else f"{sum(v > maj + 1e-9 for v in vals)} of {len(vals)}"
            rows.append([name, eps, key, len(vals), statistics.mean(vals), statistics.stdev(vals), min(vals), max(vals),
                         above, " / ".join(f"{v:.2f}" for v in vals)])
    return rows


def _setting(curves: dict[str, Curve]) -> str:
    r = next(iter(next(iter(curves.values())).values()))[0][0]
    enc = r.get("encoder") or {}
    mode = r.get("mode", "frozen")
    text = (f"Ours: {encoder_name(enc)} ({enc.get('layers', '?')} layers), {mode}, "
            f"{r['n_train']} train examples, {r['spec']['train']['epochs']} epochs, last epoch reported. Paper: BERT "
            "(d = 768) features, MLP head (768, 768, 768), full CoLA and SST-2.")
    if mode == "joint":
        text += (" Joint: the encoder is fine-tuned with gradients of the clean private inputs, so no run of this "
                 "table carries a DP guarantee, whatever its calibration; the accounted epsilon is that of the "
                 "noise for a fixed encoder.")
    return text


def _claims() -> str:
    claims = [v.claim.rstrip(".") for v in values("xie2022", "Figure 1") if v.claim]
    return "; ".join(f"({i}) {c}" for i, c in enumerate(claims, 1)) + "."


#: fixed prose with inline emphasis: markup in the page (``Markup(NOTE)``), Markdown emphasis in the docs
NOTE = ("<em>correct</em>: noise calibrated per example for all k x epochs encodings of the run (the accounted "
        "epsilon is the target). <em>paper</em>: Theorems 3 and 4 per encoding, as privnlu reads them; it is "
        "<strong>not a valid DP guarantee</strong>: the 'accounted epsilon' rows give the epsilon each release really "
        "has. Clipping: L2 norm C = 1 for the Gaussian and for the paper's Laplace, L1 norm C = 1 for the correct "
        "Laplace (the norm of its sensitivity). Noise rows: the Gaussian's sigma or the Laplace's scale b (standard "
        "deviation b sqrt 2) per coordinate of the clipped representation. The paper's Figure 1 is an image without values; the claims of its text "
        "(privnlu.paper_values): ")


def _plot(task: str, refs: dict[str, list[dict]], curves: dict[str, Curve], key: str):
    """One metric of one task against epsilon: a curve per DP configuration, the reference runs as lines."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.4))
    for i, (name, c) in enumerate(curves.items()):
        es = sorted(c)
        ax.plot(es, [mean_of(c[e][0], key) for e in es], marker="o", color=f"C{i}",
                linestyle="--" if "paper" in name else "-", label=name)
        dots = [(e, metric_of(r, key)) for e in es if len(c[e][0]) > 1 for r in c[e][0]]
        if dots:  # each repeat, around the mean
            ax.scatter(*zip(*dots), s=8, color=f"C{i}", alpha=0.5)
    for j, (name, runs) in enumerate(sorted(refs.items())):
        ax.axhline(mean_of(runs, key), color=f"C{len(curves) + j}", linestyle=":", label=name)
    maj = _majority(refs, curves, key)
    if maj is not None:
        ax.axhline(maj, color="grey", linestyle="-.", label="majority class")
        means = [(e, mean_of(c[e][0], key)) for c in curves.values() for e in sorted(c)]
        flat = [(e, v) for e, v in means if v is not None and v <= maj]
        if flat:  # at or below always guessing the majority class: crossed out, named in the legend
            ax.scatter(*zip(*flat), marker="x", s=70, color="red", zorder=4,
                       label="no useful utility (at or below the majority class)")
    ax.set_xscale("log")
    ax.set_xlabel("target epsilon")
    ax.set_ylabel(f"dev {key}")
    ax.set_title(f"{task}: {key} vs epsilon")
    ax.legend(fontsize=6)
    return fig


@section("dp_utility", "DP instance encoding: utility against epsilon (Xie & Hong 2022, Figure 1)", order=60,
         kinds=("train",))
def dp_utility(records: list[dict]) -> Content | None:
    data = _curves(records)
    if not data:
        return None
    notes = Para(join(Markup(NOTE), _claims()))
    out: list = [html_only(notes)]
    for (task, n_train, epochs), (refs, curves) in data.items():
        note = _at_majority(task, refs, curves)
        out += [either(Heading(3, task), Para(f"{task}:")),
                either(Table(*_rows(task, refs, curves)), Table(*_rows(task, refs, curves, INLINE_RUNS))),
                Para(_setting(curves) + (f" {note}" if note else ""))]
        if reps := _repeat_rows(task, refs, curves):
            out += [either(Para("The points run more than once:"), Para(f"{task}, the points run more than once:")),
                    Table(REPEATS_HEAD, reps)]
        out += [html_only(Figure(partial(_plot, task, refs, curves, key), f"dp_utility_{task}_{n_train}x{epochs}_{key}",
                                 f"{task} {key} against epsilon")) for key in _metrics(task)]
    return [*out, markdown_only(notes)]
