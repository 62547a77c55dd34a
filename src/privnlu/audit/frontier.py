"""The privacy-utility frontier of an audit: Pareto front, references and a recommendation, from numbers only.

A point is one (scheme, setting) with its utility ``u`` (the task's headline metric, x100, higher is better)
and its sentence re-identification rate ``r`` (%, lower is better) under its worst threat (the released data, the
trained model, or the wire), which the point names. Point ``a`` dominates ``b`` when
``r_a <= r_b`` and ``u_a >= u_b`` with at least one strict inequality; the Pareto front is the set of points
no other point dominates. Nothing here knows a scheme's name: the recommendation's wording is built from the
measured points alone.
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

    @classmethod
    def from_record(cls, rec: dict) -> "Point":
        return cls(f"{rec['scheme_title']}, {rec['setting']}" if rec.get("setting") else rec["scheme_title"],
                   float(rec["utility"]), float(rec["reid"]["rate"]), rec["guarantee"]["text"],
                   rec["reid"].get("threat", "release"))


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


def recommend(points: Sequence[Point], *, baseline: Point | None, random_reid: float, metric: str,
              ceilings: Sequence[float] = DEFAULT_CEILINGS, chance_utility: float | None = None) -> list[str]:
    """Plain-language sentences, one per re-identification ceiling, computed from the measured points.

    For each ceiling ``c``: the best-utility point with ``reid <= c`` and its cost against ``baseline`` (no
    privacy), or, when none qualifies, the point with the lowest re-identification; a utility at or below
    ``chance_utility`` (always predicting the majority class) is called out. A final sentence names the points
    that are indistinguishable from random guessing (``reid <= random_reid``), if any.
    """
    private = [p for p in points if baseline is None or p is not baseline]
    if not private:
        return ["No privatized setting was measured, so there is nothing to recommend."]
    out = []
    for c in sorted(ceilings):
        ok = [p for p in private if p.reid <= c]
        if ok:
            best = max(ok, key=lambda p: (p.utility, -p.reid))
            cost = ""
            if baseline is not None:
                gap = baseline.utility - best.utility
                cost = (f", {_fmt(gap)} points below no privacy ({_fmt(baseline.utility)})" if gap > 0 else
                        f", no worse than no privacy ({_fmt(baseline.utility)})")
            useless = ""
            if chance_utility is not None and best.utility <= chance_utility:
                useless = f"; that is no better than always predicting the majority class ({_fmt(chance_utility)})"
            out.append(f"At most {c:g} % re-identification: the best utility is {_fmt(best.utility)} {metric} "
                       f"from {best.label} ({_fmt(best.reid)} % re-identified {THREAT_WORDS.get(best.threat, best.threat)}, "
                       f"its worst threat; formal guarantee: {best.guarantee}){cost}{useless}.")
        else:
            low = min(private, key=lambda p: (p.reid, -p.utility))
            out.append(f"At most {c:g} % re-identification: no measured setting gets there; the lowest is "
                       f"{_fmt(low.reid)} % from {low.label} ({_fmt(low.utility)} {metric}).")
    useful = [p for p in private if chance_utility is not None and p.utility > chance_utility + USEFUL_MARGIN
              and p.reid <= random_reid + USEFUL_MARGIN]
    if useful and len({p.label.split(",")[0] for p in useful}) == 1:
        best = max(useful, key=lambda p: p.utility)
        out.append(f"Only {best.label.split(',')[0]} gives both useful utility (more than {USEFUL_MARGIN:g} points above "
                   f"the majority class) and leakage within {USEFUL_MARGIN:g} points of random guessing under every "
                   f"measured threat: best {best.label} at {_fmt(best.utility)} {metric}, formal guarantee: "
                   f"{best.guarantee}.")
    chance = [p for p in private if p.reid <= random_reid]
    if chance:
        best = max(chance, key=lambda p: p.utility)
        out.append(f"{len(chance)} of {len(private)} privatized settings are no better for the attacker than random "
                   f"guessing ({_fmt(random_reid)} %); the most useful of them is {best.label} at {_fmt(best.utility)} {metric}.")
    return out
