"""The privacy-utility audit (``privnlu audit``): the frontier leads the report, then every point and examples."""

from __future__ import annotations

from collections import defaultdict
from functools import partial

from ..audit.frontier import (NO_USEFUL_UTILITY, Point, at_chance, pareto_front, recommend, refuted, short_guarantee,
                              useful)
from ..schemes import canonical, get, names
from .content import Bullets, Content, Figure, Heading, Para, Table, either, html_only, note
from .markup import Markup, join
from .registry import section

HEAD = ["scheme", "setting", "utility (95 % CI)", "leakage: advantage over chance, % (95 % CI)", "worst threat",
        "empirical epsilon", "formal guarantee", "s"]
DETAIL_HEAD = ["scheme", "setting", "released data: re-identified % vs chance", "model: AUC; TPR at 1 / 0.1 % FPR; "
               "re-identified % vs chance", "empirical epsilon by threat", "own leakage"]
MARKERS = dict(zip(names(), "o^vsDPX*"))
COLORS = dict(zip(names(), ("#222222", "#1f77b4", "#17becf", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")))


def scheme_of(r: dict) -> str:
    """An audit point's canonical scheme name (points written before the registry use older names)."""
    return canonical(r["scheme"], warn=False)


def audits(records: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """Audit points (records of kind "audit") grouped by (task, mode), in scheme order."""
    out: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in records:
        out[(r["task"], r.get("mode", "frozen"))].append(r)
    order = {s: i for i, s in enumerate(names())}

    def key(r: dict) -> tuple:
        p = r.get("point", {})
        return (order.get(scheme_of(r), 99), p.get("epsilon") or 0, p.get("target") or 0, str(p.get("m", "")), r["reid"]["rate"])

    return {k: sorted(v, key=key) for k, v in out.items()}


def _own(r: dict) -> str:
    o = r.get("own_leakage", {})
    parts = []
    if "token_survival" in o:
        parts.append(f"token survival {100 * o['token_survival']:.1f} %")
    if "keyless_abs_head" in o:
        beats = f", beats the owner's {r['utility']:.1f}" if o["keyless_abs_head"] > r["utility"] else ""
        parts.append(f"keyless abs(x~) head {o['keyless_abs_head']:.1f}{beats}")
    if "reconstruction_success" in o:
        parts.append(f"reconstruction {o['reconstruction_success']:.0f} % ({o['reconstruction_method']})")
    return "; ".join(parts) or "-"


def _tpr(x: float | None) -> str:
    return "unresolved" if x is None else f"{100 * x:.1f}"


def _chance(t: dict) -> float:
    return float(t.get("chance", t.get("random_guess", 0.0)))


def _threat_of(r: dict, name: str) -> dict | None:
    t = (r.get("threats") or {}).get(name)
    if t is None and not r.get("threats") and name == "release":
        return r["reid"]  # a record made before threats were recorded: its one threat
    return t


def _threat(r: dict, name: str) -> str:
    """One threat's figures against its own chance line, or "-" where it does not apply (or was not measured)."""
    t = _threat_of(r, name)
    if t is None:
        return "-"
    against = f"{t['rate']:.1f} vs {_chance(t):.1f}"
    if name == "model":
        tpr = t.get("tpr_at_fpr", {})
        return f"AUC {t['auc']:.3f}; {_tpr(tpr.get('0.01'))} / {_tpr(tpr.get('0.001'))}; {against}"
    return against


def attacks_note(recs: list[dict]) -> str:
    """The attack behind each threat's figures, once for the table (the cells stay short)."""
    seen = {f"{name}: {t['attack']}" for r in recs for name in ("release", "model")
            if (t := _threat_of(r, name)) is not None and t.get("attack")}
    return "Attacks: " + "; ".join(sorted(seen)) + "." if seen else ""


def utility_cell(r: dict) -> str:
    """The utility with its 95 % interval, flagged when the interval reaches always predicting the majority class."""
    chance = r.get("chance_utility")
    ci = r.get("utility_ci95")
    text = f"{r['utility']:.2f}" + (f" ({ci[0]:.1f}-{ci[1]:.1f})" if ci else "")
    if not useful(Point.from_record(r), chance):
        return f"{text} ({NO_USEFUL_UTILITY}: majority class {chance:.2f})"
    return text


def leakage_cell(p: Point) -> str:
    """The point's advantage over chance and its interval; "at chance" when every threat's interval reaches 0."""
    ci = f" ({p.leak_ci[0]:.1f} to {p.leak_ci[1]:.1f})" if p.leak_ci else ""
    return f"{p.leak:.1f}{ci}" + (", at chance" if at_chance(p) else "")


def epsilon_cell(p: Point) -> str:
    """The largest empirical epsilon over the threats; flagged when it refutes the formal claim."""
    if p.empirical_epsilon is None:
        return "not measured"
    return f">= {p.empirical_epsilon:.2f}" + (f", REFUTES the formal {p.formal_epsilon:g}" if refuted(p) else "")


def _epsilons(r: dict) -> str:
    parts = [f"{name} {t['empirical_epsilon']['epsilon_lb']:.2f}" for name, t in (r.get("threats") or {}).items()
             if t.get("empirical_epsilon")]
    return ", ".join(parts) or "-"


def guarantee_notes(recs: list[dict]) -> list[str]:
    """The full text of each distinct formal guarantee, numbered in order of first use (the table cites them)."""
    texts: list[str] = []
    for r in recs:
        t = r["guarantee"]["text"]
        if t not in texts:
            texts.append(t)
    return texts


def rows(recs: list[dict]) -> list[list[object]]:
    """The compact table: one short line per cell; the guarantee's full text is a numbered note."""
    notes = guarantee_notes(recs)
    points = [Point.from_record(r) for r in recs]
    return [[r["scheme_title"], r.get("setting") or "-", utility_cell(r), leakage_cell(p), p.threat, epsilon_cell(p),
             f"{short_guarantee(r['guarantee'])} [{notes.index(r['guarantee']['text']) + 1}]", f"{r['seconds']:.0f}"]
            for r, p in zip(recs, points)]


def detail_rows(recs: list[dict]) -> list[list[object]]:
    """Each threat against its own chance line, the empirical epsilon by threat, and the scheme's own figures."""
    return [[r["scheme_title"], r.get("setting") or "-", _threat(r, "release"), _threat(r, "model"), _epsilons(r),
             _own(r)] for r in recs]


def red_flags_first(advice: list[str]) -> tuple[list[str], list[str]]:
    """(the red flags the recommendation opens with, the rest: the bottom line first)."""
    n = sum(1 for a in advice if a.startswith("Red flag"))
    return advice[:n], advice[n:]


def analysis(recs: list[dict]) -> tuple[list[Point], list[Point], Point | None, list[str]]:
    """(points, Pareto front, no-privacy point, recommendation sentences) of one audit; the front is taken over
    the points with useful utility only (their score's interval above the majority class)."""
    points = [Point.from_record(r) for r in recs]
    base = next((p for p, r in zip(points, recs) if get(scheme_of(r), warn=False).release == "none"), None)
    metric = recs[0]["metric"]
    chance = recs[0].get("chance_utility")
    advice = recommend(points, baseline=base, metric=metric, chance_utility=chance)
    return points, pareto_front([p for p in points if useful(p, chance)]), base, advice


def summary(recs: list[dict]) -> str:
    r0 = recs[0]
    n = r0["reid"]["n_private"]
    schemes = len({r["scheme"] for r in recs})
    lines = sorted({f"{name} {_chance(t):.2f} %" for r in recs for name, t in (r.get("threats") or {}).items()})
    lines = lines or [f"release {r0['random_guess_reid']:.2f} %"]
    return (f"{len(recs)} {'point' if len(recs) == 1 else 'points'} over {schemes} {'scheme' if schemes == 1 else 'schemes'} "
            f"on {r0['task']} ({r0['mode']} encoder, {r0['n_train']} training examples, utility = {r0['metric']} x 100 on "
            f"dev, with its 95 % interval). Leakage: each threat (the released data, the trained model) names {n} "
            "private training sentences among its own candidates, and is put on one scale, its advantage over its own "
            "chance line, 100 (rate - chance) / (100 - chance): 0 is random guessing, 100 names every private sentence. "
            f"Chance lines: {', '.join(lines)}. A point's leakage is its "
            "worst threat; the empirical epsilon is a 95 % lower bound from the attacks' true and false positives.")


#: the legend entry of the points whose score interval reaches the majority class
NO_USEFUL_LABEL = f"{NO_USEFUL_UTILITY} (interval reaches the majority class)"


def frontier_axes(recs: list[dict]):
    """The frontier plot of one audit (a matplotlib figure): every point, the Pareto front of the useful points
    ringed and joined, the points with no useful utility crossed out, the random-guess and majority-class lines."""
    import matplotlib.pyplot as plt

    points, front, _, _ = analysis(recs)
    chance = recs[0].get("chance_utility")
    fig, ax = plt.subplots(figsize=(8.5, 5.2))
    seen = set()
    for r, p in zip(recs, points):
        s = scheme_of(r)
        xerr = [[p.leak - p.leak_ci[0]], [p.leak_ci[1] - p.leak]] if p.leak_ci else None
        yerr = [[p.utility - p.utility_ci[0]], [p.utility_ci[1] - p.utility]] if p.utility_ci else None
        ax.errorbar(p.leak, p.utility, xerr=xerr, yerr=yerr, fmt="none", ecolor=COLORS.get(s, "k"), alpha=0.35,
                    lw=1, zorder=2)
        ax.scatter(p.leak, p.utility, marker=MARKERS.get(s, "o"), s=70, color=COLORS.get(s, "k"), zorder=3, alpha=0.85,
                   edgecolor="white", linewidth=0.6, label=None if s in seen else r["scheme_title"])
        seen.add(s)
    ax.plot([p.leak for p in front], [p.utility for p in front], "-", color="#888", lw=1.5, zorder=2,
            drawstyle="steps-post")
    ax.scatter([p.leak for p in front], [p.utility for p in front], s=200, facecolor="none", edgecolor="#888", lw=1.5,
               zorder=2, label="Pareto front (ringed, joined)")
    ax.axvline(0.0, color="#555", ls="--", lw=1, label="random guessing (every threat's chance line)")
    flat = [p for p in points if not useful(p, chance)]
    if flat:
        ax.scatter([p.leak for p in flat], [p.utility for p in flat], marker="x", s=150, color="#d62728", lw=2,
                   zorder=4, label=NO_USEFUL_LABEL)
    if chance is not None:
        ax.axhline(chance, color="#555", ls=":", lw=1, label="majority class (utility)")
    ax.set_xlabel("leakage: advantage over chance under the worst threat (%, 0 = random guessing; 95 % CI bars)")
    ax.set_ylabel(f"utility: {recs[0]['metric']} on dev (x100; 95 % CI bars)")
    low = min([0.0] + [p.leak_ci[0] if p.leak_ci else p.leak for p in points])
    ax.set_xlim(min(-5.0, low - 3), 103)
    ax.grid(alpha=0.3)
    ax.set_title(f"{recs[0]['task']}: privacy-utility frontier")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=9, frameon=False)  # outside the axes: covers no data
    return fig


def examples(recs: list[dict]) -> Content:
    """For each scheme, its highest-utility setting's examples: private sentence, what was released, what was recovered."""
    best: dict[str, dict] = {}
    for r in recs:
        name = scheme_of(r)
        if r.get("examples") and (name not in best or r["utility"] > best[name]["utility"]):
            best[name] = r
    parts = []
    for s in names():
        if s not in best:
            continue
        r = best[s]
        rows_ = [[e["private"], e["released"], e["recovered"], "yes" if e["recovered"].strip() == e["private"].strip() else "no"]
                 for e in r["examples"]]
        parts += [Heading(4, get(s).title + (f", {r['setting']}" if r.get("setting") else "")),
                  Table(["private sentence", "what the attacker gets", "what the attacker names", "exact"], rows_,
                        cls="text")]
    return parts


@section("audit", "Privacy-utility audit: which privatization, at what cost", order=0, kinds=("audit",))
def audit_section(records: list[dict]) -> Content:
    """Per (task, mode): red flags and the bottom line first, the frontier, every point and threat, the notes."""
    groups = audits(records)
    parts: list = []
    for (task, mode), recs in sorted(groups.items()):
        _, front, _, advice = analysis(recs)
        flags, rest = red_flags_first(advice)
        notes = guarantee_notes(recs)
        parts += [
            html_only(Heading(3, f"{task} ({mode})") if len(groups) > 1 else None),
            *[either(Para(f, cls="red-flag"), Para(f"**{f}**")) for f in flags],
            either(Para(join(Markup("<strong>"), rest[0], Markup("</strong>")), cls="bottom-line"),
                   Para(f"**{task} ({mode})**: {rest[0]}")),
            Para(summary(recs)),
            html_only(Figure(partial(frontier_axes, recs), f"audit_frontier_{task}_{mode}",
                             f"utility against leakage (advantage over chance) on {recs[0]['task']}"),
                      Heading(4, "Recommendation (computed from the points above)"), Bullets(rest[1:]),
                      Heading(4, "Every point")),
            Table(HEAD, rows(recs), cls="text"),
            html_only(Heading(4, "Every threat against its own chance line")),
            Table(DETAIL_HEAD, detail_rows(recs), cls="text"),
            note(attacks_note(recs)),
            either(note("Formal guarantees: " + " ".join(f"[{i}] {t}" for i, t in enumerate(notes, 1))),
                   [Para("\n".join(f"[{i}] {t}" for i, t in enumerate(notes, 1))),
                    Para(f"Pareto front (points with useful utility): {'; '.join(p.label for p in front) or 'none'}."),
                    Bullets(rest[1:])]),
            note(NOTE),
            html_only(Heading(4, "What the attacker recovers"), examples(recs))]
    return parts


#: what the table's columns mean
NOTE = ("Utility: the 95 % interval over the dev examples (Clopper-Pearson for accuracy, a bootstrap for F1 and MCC); "
        "no useful utility when it reaches always predicting the majority class. Re-identification: one name per "
        "released item (per recovered group for the reconstruction attack), or the top n of membership inference; "
        "each threat against its own chance line, and on the common scale as its advantage over it, with the 95 % "
        "Clopper-Pearson interval over the private sentences; at chance when every threat's interval reaches 0. "
        "Empirical epsilon: a 95 % lower bound on epsilon, ln((1 - delta - FNR) / FPR) at the upper ends of "
        "Clopper-Pearson intervals of the attacks' false-negative and false-positive rates over the private sentences "
        "and the non-members of the task's own data; an estimate from one seeded draw of candidates, which refutes a "
        "formal epsilon below it. Formal guarantees: DP instance encoding is accounted per example over the whole "
        "training release with dp-accounting; d_chi's eta bounds the output distributions by exp(eta d) with d the "
        "embedding distance, it is not an (epsilon, delta) guarantee.")
