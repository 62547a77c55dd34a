"""The privacy-utility frontier of an audit: Pareto front, references and a recommendation, from numbers only.

A point is one (scheme, setting) with its utility ``u`` (the task's headline metric, x100, higher is better) and its
leakage ``A``: the advantage over chance of its worst threat (:mod:`privnlu.audit.leakage`; %, 0 = random guessing,
lower is better), where a threat is the released data, the trained model or the wire, each against its own chance
line. Both carry 95 % intervals. Point ``a`` dominates ``b`` when ``A_a <= A_b`` and ``u_a >= u_b`` with at least
one strict inequality; the Pareto front is the set of points no other point dominates. Nothing here knows a
scheme's name: the recommendation's wording is built from the measured points alone.

Two flags come from the intervals, never from a point estimate alone:

* **no useful utility**: the 95 % interval of the score reaches always predicting the majority class (its lower end
  is at or below it). Such a point is never the best utility, never on the front the report rings, and never the
  bottom line's pick, however little it leaks;
* **at chance**: under every threat, the 95 % interval of the advantage reaches 0.

And one from the empirical epsilon: a point whose lower bound on epsilon exceeds its formal epsilon is **refuted**.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..data.metrics import reaches_majority
from ..stats import clopper_pearson as interval
from .leakage import on_scale


#: leakage ceilings (advantage over chance, %) the recommendation answers for
DEFAULT_CEILINGS = (1.0, 5.0, 20.0)


@dataclass(frozen=True)
class Point:
    """What the frontier needs of one audit point (intervals are 95 %; ``None``: not measured)."""

    label: str  # e.g. "d_chi sequence-rep, eta = 12.3"
    utility: float
    leak: float  # advantage over chance of the worst threat, %
    guarantee: str = ""  # e.g. "(8, 1e-05)-DP per example", "none", "eta = 12.3 (metric DP)"
    threat: str = "release"  # the worst threat: "release" (the data as released), "model" or "wire"
    keyless: float | None = None  # the keyless |x~| head's utility (an attacker's classifier with no key), if measured
    leak_ci: tuple[float, float] | None = None
    utility_ci: tuple[float, float] | None = None
    rate: float | None = None  # the worst threat's re-identification share, %
    chance: float | None = None  # its chance line, %
    attack: str = ""
    at_chance: bool | None = None  # every threat's interval reaches its chance line
    empirical_epsilon: float | None = None  # 95 % lower bound, the largest over the threats
    formal_epsilon: float | None = None

    @classmethod
    def from_record(cls, rec: dict) -> "Point":
        """The point of an audit record; records made before the common scale get it from their rate and line."""
        keyless = (rec.get("own_leakage") or {}).get("keyless_abs_head")
        worst = rec["reid"]
        scale = {k: worst[k] for k in ("chance", "advantage", "advantage_ci95", "at_chance") if k in worst}
        if "advantage" not in scale:
            scale = on_scale(worst["rate"], worst["ci95"], worst.get("random_guess", rec["random_guess_reid"]))
        threats = (rec.get("threats") or {}).values()
        at_chance = all(t.get("at_chance", scale["at_chance"]) for t in threats) if threats else scale["at_chance"]
        u_ci = rec.get("utility_ci95")
        eps = [t["empirical_epsilon"]["epsilon_lb"] for t in threats if t.get("empirical_epsilon")]
        return cls(f"{rec['scheme_title']}, {rec['setting']}" if rec.get("setting") else rec["scheme_title"],
                   float(rec["utility"]), float(scale["advantage"]), short_guarantee(rec["guarantee"]),
                   worst.get("threat", "release"), None if keyless is None else float(keyless),
                   tuple(scale["advantage_ci95"]), tuple(u_ci) if u_ci else None, float(worst["rate"]),
                   float(scale["chance"]), worst.get("attack", ""), at_chance, max(eps) if eps else None,
                   rec["guarantee"].get("epsilon"))

    @property
    def scheme(self) -> str:
        """The scheme's part of the label (before the setting)."""
        return self.label.split(",")[0]


def short_guarantee(g: dict) -> str:
    """A guarantee in a few words: "(8, 1e-05)-DP", "eta = 12.3 (metric DP)" or "none" (the record's ``text``
    gives the accountant and its parameters)."""
    if g.get("kind") == "dp" and g.get("epsilon") is not None and g.get("delta") is not None:
        return f"({g['epsilon']:.3g}, {g['delta']:.2g})-DP per {g.get('unit', 'example')}"
    if g.get("kind") == "metric-dp" and g.get("eta") is not None:
        return f"eta = {g['eta']:.3g} (metric DP, no (epsilon, delta))"
    if g.get("kind") == "none":
        return "none"
    return str(g.get("text", "none"))


def useful(p: Point, chance_utility: float | None) -> bool:
    """Whether ``p``'s utility is above always predicting the majority class: the lower end of its 95 % interval
    (the score itself where no interval was measured) is above it; unknown majority: assumed useful."""
    return chance_utility is None or not reaches_majority(p.utility, p.utility_ci, chance_utility)


def at_chance(p: Point) -> bool:
    """Whether no threat's leakage is distinguishable from random guessing (every 95 % interval reaches 0)."""
    if p.at_chance is not None:
        return p.at_chance
    return (p.leak_ci[0] if p.leak_ci is not None else p.leak) <= 0.0


def refuted(p: Point) -> bool:
    """Whether the empirical epsilon's lower bound exceeds the point's formal epsilon."""
    return p.formal_epsilon is not None and p.empirical_epsilon is not None and p.empirical_epsilon > p.formal_epsilon


#: how every table, plot and sentence names a point whose score interval reaches the majority class
NO_USEFUL_UTILITY = "no useful utility"


#: how the recommendation names a threat
THREAT_WORDS = {"release": "through the released data", "model": "through the trained model (membership inference)",
                "wire": "from the federated traffic"}


def dominates(a: Point, b: Point) -> bool:
    return a.leak <= b.leak and a.utility >= b.utility and (a.leak < b.leak or a.utility > b.utility)


def pareto_front(points: Sequence[Point]) -> list[Point]:
    """The non-dominated points, by increasing leakage (ties in both numbers are all kept)."""
    front = [p for p in points if not any(dominates(q, p) for q in points)]
    return sorted(front, key=lambda p: (p.leak, -p.utility))


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


def _ci(ci: tuple[float, float] | None) -> str:
    return f"95 % CI {_fmt(ci[0])} to {_fmt(ci[1])}" if ci is not None else "no interval recorded"


def utility_words(p: Point, baseline: Point | None, metric: str) -> str:
    """"it keeps U % of the non-private utility (u metric, 95 % CI ..., against b without privacy)"."""
    ci = f", {_ci(p.utility_ci)}" if p.utility_ci is not None else ""
    if baseline is None:
        return f"it scores {_fmt(p.utility)} {metric}{ci}"
    return (f"it keeps {_pct(p.utility, baseline.utility)} of the non-private utility ({_fmt(p.utility)} {metric}{ci}, "
            f"against {_fmt(baseline.utility)} without privacy)")


def leakage_words(p: Point) -> str:
    """What the strongest attack achieves against its chance line, on the common scale."""
    attack = f" ({p.attack})" if p.attack else ""
    rate = (f"re-identifies {_fmt(p.rate)} % of the private sentences against a chance line of {_fmt(p.chance)} %"
            if p.rate is not None and p.chance is not None else "leaks")
    verdict = ", no better than random guessing" if at_chance(p) else ""
    return (f"the strongest attack we ran{attack} {rate} {THREAT_WORDS.get(p.threat, p.threat)}{verdict} "
            f"(advantage over chance {_fmt(p.leak)} %, {_ci(p.leak_ci)})")


def bottom_line(points: Sequence[Point], *, baseline: Point | None, metric: str,
                chance_utility: float | None = None) -> str:
    """One plain sentence a non-expert can act on: which setting, at what cost, what the strongest attack achieves
    against its chance line, and the formal guarantee.

    The pick: among the privatized points with useful utility, the most useful one at chance under every threat;
    else the least-leaking useful one on the common scale (said to leak); else none.
    """
    private = [p for p in points if baseline is None or p is not baseline]
    chance = f" (always guessing the majority class scores {_fmt(chance_utility)})" if chance_utility is not None else ""
    if baseline is not None and not useful(baseline, chance_utility):
        return (f"Bottom line: even without privacy the model scores {_fmt(baseline.utility)} {metric}, not clearly "
                f"better than always guessing the majority class{chance}; no scheme can be recommended on this data: get "
                "more or better-labelled data, or another encoder, before choosing a privatization.")
    ok = [p for p in private if useful(p, chance_utility)]
    if not ok:
        return (f"Bottom line: no privatized setting we measured is clearly better than always guessing the majority "
                f"class{chance}; none of them is usable on this data as audited.")
    safe = [p for p in ok if at_chance(p)]
    pick = max(safe, key=lambda p: (p.utility, -p.leak)) if safe else min(ok, key=lambda p: (p.leak, -p.utility))
    tail = f"{utility_words(pick, baseline, metric)}; {leakage_words(pick)}; formal guarantee: {pick.guarantee or 'none'}"
    if safe:
        return f"Bottom line: use {pick.label}; {tail}."
    return (f"Bottom line: no useful setting we measured keeps every attack at chance; the least leaking useful one is "
            f"{pick.label}; {tail}: treat the data as exposed.")


def red_flags(points: Sequence[Point]) -> list[str]:
    """One sentence per point whose empirical epsilon exceeds its formal claim."""
    return [f"Red flag: the attacks on {p.label} give an empirical epsilon of at least {p.empirical_epsilon:.2f} (95 % "
            f"lower bound), above its formal epsilon of {p.formal_epsilon:g}: the claim is refuted at that confidence, "
            "so the implementation or its accounting is wrong; do not rely on this guarantee."
            for p in points if refuted(p)]


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


def recommend(points: Sequence[Point], *, baseline: Point | None, metric: str,
              ceilings: Sequence[float] = DEFAULT_CEILINGS, chance_utility: float | None = None) -> list[str]:
    """Plain-language sentences computed from the measured points: the red flags, then :func:`bottom_line`.

    Then the keyless-attacker warnings (:func:`keyless_warnings`), then for each leakage ceiling ``c`` (advantage
    over chance, %): the best-utility point with ``leak <= c`` among the points with useful utility and its cost
    against ``baseline`` (no privacy); when only points with no useful utility stay under ``c``, that is said
    instead; when none qualifies, the point with the lowest leakage. Then the only scheme that is both useful and at
    chance, if one alone is; the points at chance under every threat; and the points with no useful utility.
    """
    private = [p for p in points if baseline is None or p is not baseline]
    if not private:
        return ["No privatized setting was measured, so there is nothing to recommend."]
    out = red_flags(points)
    out.append(bottom_line(points, baseline=baseline, metric=metric, chance_utility=chance_utility))
    out += keyless_warnings(points, metric)
    majority = f"the majority class ({_fmt(chance_utility)})" if chance_utility is not None else ""
    for c in sorted(ceilings):
        under = [p for p in private if p.leak <= c]
        ok = [p for p in under if useful(p, chance_utility)]
        if ok:
            best = max(ok, key=lambda p: (p.utility, -p.leak))
            cost = ""
            if baseline is not None:
                gap = baseline.utility - best.utility
                cost = (f", {_fmt(gap)} points below no privacy ({_fmt(baseline.utility)})" if gap > 0 else
                        f", no worse than no privacy ({_fmt(baseline.utility)})")
            out.append(f"Leakage at most {c:g} % above chance: the best utility is {_fmt(best.utility)} {metric} "
                       f"from {best.label} (advantage {_fmt(best.leak)} % {THREAT_WORDS.get(best.threat, best.threat)}, "
                       f"its worst threat; formal guarantee: {best.guarantee}){cost}.")
        elif under:
            top = max(under, key=lambda p: (p.utility, -p.leak))
            out.append(f"Leakage at most {c:g} % above chance: {NO_USEFUL_UTILITY}; the interval of every setting that "
                       f"gets there reaches always predicting {majority} (the highest, {top.label}, scores "
                       f"{_fmt(top.utility)} {metric}).")
        else:
            low = min(private, key=lambda p: (p.leak, -p.utility))
            out.append(f"Leakage at most {c:g} % above chance: no measured setting gets there; the lowest is "
                       f"{_fmt(low.leak)} % from {low.label} ({_fmt(low.utility)} {metric}"
                       f"{'' if useful(low, chance_utility) else ', ' + NO_USEFUL_UTILITY}).")
    good = [p for p in private if chance_utility is not None and useful(p, chance_utility) and at_chance(p)]
    if good and len({p.scheme for p in good}) == 1:
        best = max(good, key=lambda p: p.utility)
        out.append(f"Only {best.scheme} gives both useful utility and leakage at chance under every measured threat: "
                   f"best {best.label} at {_fmt(best.utility)} {metric}, formal guarantee: {best.guarantee}.")
    level = [p for p in private if at_chance(p)]
    if level:
        best = max(level, key=lambda p: p.utility)
        flag = "" if useful(best, chance_utility) else f" ({NO_USEFUL_UTILITY}: its interval reaches {majority})"
        out.append(f"{len(level)} of {len(private)} privatized settings are at chance under every threat (each "
                   f"attack's 95 % interval reaches its chance line); the most useful of them is {best.label} at "
                   f"{_fmt(best.utility)} {metric}{flag}.")
    unusable = [p for p in private if not useful(p, chance_utility)]
    if unusable:
        out.append(f"{NO_USEFUL_UTILITY.capitalize()} (the 95 % interval of the score reaches always predicting "
                   f"{majority}), whatever they leak: {'; '.join(f'{p.label} ({_fmt(p.utility)})' for p in unusable)}.")
    return out
