"""The privacy-utility frontier of an audit: Pareto front, references and a recommendation, from numbers only.

A point is one (scheme, setting) with its utility ``u`` (the task's headline metric, x100, higher is better)
and its sentence re-identification rate ``r`` (%, lower is better) under its worst threat (the released data, the
trained model, or the wire), which the point names. Point ``a`` dominates ``b`` when
``r_a <= r_b`` and ``u_a >= u_b`` with at least one strict inequality; the Pareto front is the set of points
no other point dominates. Nothing here knows a scheme's name: the recommendation's wording is built from the
measured points alone.

A point whose utility is at or below always predicting the majority class has **no useful utility**: it is never
the best utility, never on the front the report rings, and the bottom line never recommends it, however little it
leaks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..stats import clopper_pearson as interval


#: re-identification ceilings (%) the recommendation answers for
DEFAULT_CEILINGS = (1.0, 5.0, 20.0)
#: points above the majority class (utility) and above random guessing (leakage) that count as a difference
USEFUL_MARGIN = 5.0


@dataclass(frozen=True)
class Point:
    """What the frontier needs of one audit point."""

    label: str  # e.g. "d_chi sequence-rep, eta = 12.3"
    utility: float
    reid: float
    guarantee: str = ""  # e.g. "epsilon = 8 per example", "none", "eta = 12.3 (metric DP)"
    threat: str = "release"  # the worst threat: "release" (the data as released), "model" or "wire"
    keyless: float | None = None  # the keyless |x~| head's utility (an attacker's classifier with no key), if measured

    @classmethod
    def from_record(cls, rec: dict) -> "Point":
        keyless = (rec.get("own_leakage") or {}).get("keyless_abs_head")
        return cls(f"{rec['scheme_title']}, {rec['setting']}" if rec.get("setting") else rec["scheme_title"],
                   float(rec["utility"]), float(rec["reid"]["rate"]), rec["guarantee"]["text"],
                   rec["reid"].get("threat", "release"), None if keyless is None else float(keyless))

    @property
    def scheme(self) -> str:
        """The scheme's part of the label (before the setting)."""
        return self.label.split(",")[0]


def useful(p: Point, chance_utility: float | None) -> bool:
    """Whether ``p`` scores above always predicting the majority class (unknown majority: assumed useful)."""
    return chance_utility is None or p.utility > chance_utility


#: how every table, plot and sentence names a point at or below the majority class
NO_USEFUL_UTILITY = "no useful utility"


#: how the recommendation names a threat
THREAT_WORDS = {"release": "through the released data", "model": "through the trained model (membership inference)",
                "wire": "from the federated traffic"}


def dominates(a: Point, b: Point) -> bool:
    return a.reid <= b.reid and a.utility >= b.utility and (a.reid < b.reid or a.utility > b.utility)


def pareto_front(points: Sequence[Point]) -> list[Point]:
    """The non-dominated points, by increasing re-identification (ties in both numbers are all kept)."""
    front = [p for p in points if not any(dominates(q, p) for q in points)]
    return sorted(front, key=lambda p: (p.reid, -p.utility))


def clopper_pearson(hits: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact two-sided binomial interval for a rate ``hits / n``, in % (:func:`privnlu.stats.clopper_pearson`)."""
    if n <= 0:
        return (0.0, 100.0)
    lo, hi = interval(hits, n, level)
    return (100 * float(lo), 100 * float(hi))


def _fmt(x: float) -> str:
    return f"{x:.1f}"


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f} %" if whole > 0 else "n/a"


def bottom_line(points: Sequence[Point], *, baseline: Point | None, random_reid: float, metric: str,
                chance_utility: float | None = None) -> str:
    """One plain sentence a non-expert can act on: which setting to use, what it keeps, what the attack recovers.

    The pick: among the privatized points with useful utility, the most useful one whose leakage is within
    :data:`USEFUL_MARGIN` points of random guessing; else the least-leaking useful one (said to leak); else none.
    """
    private = [p for p in points if baseline is None or p is not baseline]
    chance = f" (always guessing the majority class scores {_fmt(chance_utility)})" if chance_utility is not None else ""
    if baseline is not None and not useful(baseline, chance_utility):
        return (f"Bottom line: even without privacy the model scores {_fmt(baseline.utility)} {metric}, no better than "
                f"always guessing the majority class{chance}; no scheme can be recommended on this data: get more "
                "or better-labelled data, or another encoder, before choosing a privatization.")
    ok = [p for p in private if useful(p, chance_utility)]
    if not ok:
        return (f"Bottom line: no privatized setting we measured beats always guessing the majority class{chance}; "
                "none of them is usable on this data as audited.")
    safe = [p for p in ok if p.reid <= random_reid + USEFUL_MARGIN]
    pick = max(safe, key=lambda p: (p.utility, -p.reid)) if safe else min(ok, key=lambda p: (p.reid, -p.utility))
    keeps = f"; it keeps {_pct(pick.utility, baseline.utility)} of the non-private utility" if baseline else ""
    what = (f"{_fmt(pick.utility)} {metric} against {_fmt(baseline.utility)} without privacy" if baseline
            else f"{_fmt(pick.utility)} {metric}")
    attack = (f"the strongest attack we ran re-identifies {_fmt(pick.reid)} % of the private sentences "
              f"{THREAT_WORDS.get(pick.threat, pick.threat)} (random guessing: {_fmt(random_reid)} %)")
    if safe:
        return f"Bottom line: use {pick.label}{keeps} ({what}), and {attack}."
    return (f"Bottom line: no useful setting we measured keeps the attacker near random guessing; the least leaking "
            f"useful one is {pick.label}{keeps} ({what}), and {attack}: treat the data as exposed.")


def keyless_warnings(points: Sequence[Point], metric: str) -> list[str]:
    """One sentence per scheme whose keyless |x~| head beats the owner's own head at some setting."""
    out, seen = [], set()
    for p in sorted(points, key=lambda p: p.utility - (p.keyless or 0)):  # largest advantage first
        if p.keyless is None or p.keyless <= p.utility or p.scheme in seen:
            continue
        seen.add(p.scheme)
        out.append(f"Warning for {p.scheme}: an attacker with no key trains a classifier on the released encodings "
                   f"(the keyless |x| head) that scores {_fmt(p.keyless)} {metric} on plain sentence representations, "
                   f"more than the owner's own {_fmt(p.utility)} at {p.label}: the release teaches the task, and the "
                   "labels' signal, to anyone who holds it, key or not.")
    return out


def recommend(points: Sequence[Point], *, baseline: Point | None, random_reid: float, metric: str,
              ceilings: Sequence[float] = DEFAULT_CEILINGS, chance_utility: float | None = None) -> list[str]:
    """Plain-language sentences computed from the measured points, opening with :func:`bottom_line`.

    Then the keyless-attacker warnings (:func:`keyless_warnings`), then for each ceiling ``c``: the best-utility
    point with ``reid <= c`` among the points with useful utility (above ``chance_utility``, always predicting the
    majority class) and its cost against ``baseline`` (no privacy); when only points with no useful utility stay
    under ``c``, that is said instead; when none qualifies, the point with the lowest re-identification. A final
    sentence names the points that are indistinguishable from random guessing (``reid <= random_reid``), if any.
    """
    private = [p for p in points if baseline is None or p is not baseline]
    if not private:
        return ["No privatized setting was measured, so there is nothing to recommend."]
    out = [bottom_line(points, baseline=baseline, random_reid=random_reid, metric=metric, chance_utility=chance_utility)]
    out += keyless_warnings(points, metric)
    majority = f"the majority class ({_fmt(chance_utility)})" if chance_utility is not None else ""
    for c in sorted(ceilings):
        under = [p for p in private if p.reid <= c]
        ok = [p for p in under if useful(p, chance_utility)]
        if ok:
            best = max(ok, key=lambda p: (p.utility, -p.reid))
            cost = ""
            if baseline is not None:
                gap = baseline.utility - best.utility
                cost = (f", {_fmt(gap)} points below no privacy ({_fmt(baseline.utility)})" if gap > 0 else
                        f", no worse than no privacy ({_fmt(baseline.utility)})")
            out.append(f"At most {c:g} % re-identification: the best utility is {_fmt(best.utility)} {metric} "
                       f"from {best.label} ({_fmt(best.reid)} % re-identified {THREAT_WORDS.get(best.threat, best.threat)}, "
                       f"its worst threat; formal guarantee: {best.guarantee}){cost}.")
        elif under:
            top = max(under, key=lambda p: (p.utility, -p.reid))
            out.append(f"At most {c:g} % re-identification: {NO_USEFUL_UTILITY}; every setting that gets there scores at "
                       f"or below always predicting {majority} (the highest, {top.label}, scores {_fmt(top.utility)} "
                       f"{metric}).")
        else:
            low = min(private, key=lambda p: (p.reid, -p.utility))
            out.append(f"At most {c:g} % re-identification: no measured setting gets there; the lowest is "
                       f"{_fmt(low.reid)} % from {low.label} ({_fmt(low.utility)} {metric}"
                       f"{'' if useful(low, chance_utility) else ', ' + NO_USEFUL_UTILITY}).")
    good = [p for p in private if chance_utility is not None and p.utility > chance_utility + USEFUL_MARGIN
            and p.reid <= random_reid + USEFUL_MARGIN]
    if good and len({p.scheme for p in good}) == 1:
        best = max(good, key=lambda p: p.utility)
        out.append(f"Only {best.scheme} gives both useful utility (more than {USEFUL_MARGIN:g} points above "
                   f"the majority class) and leakage within {USEFUL_MARGIN:g} points of random guessing under every "
                   f"measured threat: best {best.label} at {_fmt(best.utility)} {metric}, formal guarantee: "
                   f"{best.guarantee}.")
    chance = [p for p in private if p.reid <= random_reid]
    if chance:
        best = max(chance, key=lambda p: p.utility)
        flag = "" if useful(best, chance_utility) else f" ({NO_USEFUL_UTILITY}: at or below {majority})"
        out.append(f"{len(chance)} of {len(private)} privatized settings are no better for the attacker than random "
                   f"guessing ({_fmt(random_reid)} %); the most useful of them is {best.label} at {_fmt(best.utility)} "
                   f"{metric}{flag}.")
    unusable = [p for p in private if not useful(p, chance_utility)]
    if unusable:
        out.append(f"{NO_USEFUL_UTILITY.capitalize()} (at or below always predicting {majority}), whatever they "
                   f"leak: {'; '.join(f'{p.label} ({_fmt(p.utility)})' for p in unusable)}.")
    return out
