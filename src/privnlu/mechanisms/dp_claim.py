"""A received DP instance encoding guarantee is checked, never taken on trust.

A DP instance encoding record (a train record's ``dp``, an attack condition's ``dp_calibration``, a payload's or a
model folder's ``dp``: a :class:`~privnlu.mechanisms.dp.Calibration`'s JSON) states its ``accounted_epsilon`` beside
the mechanism it came from: the noise kind, clip and clip norm, noise scale, dimension, largest mixing weight, the
encodings per example (``participations``) and delta. :func:`verify_dp_ie` rebuilds the mechanism from those
fields, recomputes the epsilon of ``participations`` compositions with privnlu's own accountant
(:func:`~privnlu.mechanisms.dp.composed_epsilon`, as calibration did) and refuses, in one line naming where the
record came from:

* a field that is missing, not a finite number, or out of range (:data:`RANGES`), or a name not one privnlu writes;
* fewer encodings per example than the release's own ``k``, ``inter`` and epochs make (where the caller knows
  them: :func:`least_participations`);
* a stated sensitivity or noise multiplier that its own clip, noise and dimension do not give;
* a claimed ``accounted_epsilon`` below the recomputation by more than :data:`TOLERANCE` (relative);
* ``valid_dp_guarantee`` where the calibration is the paper's, or the epsilon exceeds the target;
* a finite epsilon for the per-batch noise reading (no finite epsilon holds there).

Results are remembered per process.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from ..choices import DP_CALIBRATIONS, DP_MECHANISMS, NOISE_READINGS
from ..errors import PrivnluError, require
from ..params import MAX_EPSILON, MIN_DELTA, checked_number

#: how far (relative) a claimed epsilon may sit below the recomputation (the accountants' own discretisation)
TOLERANCE = 0.01
#: the most encodings per example privnlu accounts (:data:`privnlu.mechanisms.dp.MAX_PARTICIPATIONS`)
MAX_PARTICIPATIONS = 10 ** 9
#: (low, high, low included, high included, whole number) of each numeric field
RANGES: dict[str, tuple[float, float, bool, bool, bool]] = {
    "clip": (0.0, 1e12, False, True, False), "noise": (0.0, 1e12, False, True, False),
    "dim": (1, 10 ** 7, True, True, True), "max_weight": (0.0, 1.0, False, True, False),
    "participations": (1, MAX_PARTICIPATIONS, True, True, True), "delta": (MIN_DELTA, 1.0, True, False, False),
    "accounted_epsilon": (0.0, math.inf, False, False, False),  # the paper's calibration accounts above 1000
    "target_epsilon": (0.0, MAX_EPSILON, False, True, False)}


def _name(block: dict, name: str, where: str, choices: tuple[str, ...], default: str | None = None) -> str:
    v = block.get(name, default)
    require(v in choices, f"{where}: DP instance encoding field '{name}' is {str(v)[:40]!r}, not one of "
                          f"{', '.join(choices)}")
    return str(v)


def _f(block: dict, name: str, where: str) -> float:
    return checked_number(block, name, where, "DP instance encoding", RANGES[name])


def is_dp_ie(block: Any) -> bool:
    """Whether a ``dp`` block is a DP instance encoding calibration (it names a noise mechanism)."""
    return isinstance(block, dict) and block.get("method") is None and block.get("mechanism") in DP_MECHANISMS


def least_participations(k: Any, epochs: Any, inter: Any = False) -> int:
    """Encodings per example a release of ``k``-mixing over ``epochs`` passes makes (``ceil(k/2)`` per pass with a
    public corpus); 1 where ``k`` or ``epochs`` is not a positive whole number (the record's schema says so)."""
    ok = all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (k, epochs))
    return (math.ceil(k / 2) if inter else k) * epochs if ok else 1


def verify_dp_ie(cal: Any, *, where: str, least: int = 1) -> float | None:
    """Recompute a DP instance encoding calibration's epsilon and refuse a claim below it (see the module
    docstring); returns the claimed epsilon, verified (``None`` for the per-batch reading, which claims none).
    ``least``: the encodings per example the release's own ``k`` and epochs make (:func:`least_participations`)."""
    from .dp import make_mechanism

    require(isinstance(cal, dict), f"{where}: the DP instance encoding record is {type(cal).__name__}, not an object")
    kind = _name(cal, "mechanism", where, DP_MECHANISMS)
    clip_norm = _name(cal, "clip_norm", where, ("l1", "l2"))
    reading = _name(cal, "noise_reading", where, NOISE_READINGS, "per-encoding")
    f = {k: _f(cal, k, where) for k in ("clip", "noise", "dim", "participations", "delta")}
    max_weight = _f(cal, "max_weight", where) if "max_weight" in cal else 1.0
    mech = make_mechanism(kind, clip=f["clip"], noise=f["noise"], dim=int(f["dim"]), clip_norm=clip_norm,
                          max_weight=max_weight)
    for name, value in (("sensitivity", mech.sensitivity), ("noise_multiplier", mech.noise_multiplier)):
        if name in cal:
            stated = checked_number(cal, name, where, "DP instance encoding", (0.0, math.inf, False, False, False))
            require(abs(stated - value) <= TOLERANCE * value,
                    f"{where}: DP instance encoding field '{name}' is {stated:.4g}, but its clip, noise and dimension "
                    f"give {value:.4g}")
    require(f["participations"] >= least,
            f"{where}: DP instance encoding field 'participations' is {int(f['participations'])}, fewer than the "
            f"{least} encodings per example the release's k and epochs make")
    eps = cal.get("accounted_epsilon")
    if reading == "per-batch":
        require(eps is None and not cal.get("valid_dp_guarantee"),
                f"{where}: a per-batch noise record claims an epsilon ({str(eps)[:40]}); one noise vector per batch "
                "gives no finite epsilon")
        return None
    claim = _f(cal, "accounted_epsilon", where)
    n, delta = int(f["participations"]), f["delta"]
    recomputed = recompute(kind, mech.noise_multiplier, n, delta, where)
    require(claim >= recomputed * (1 - TOLERANCE),
            f"{where}: the claimed DP instance encoding epsilon {claim:.4g} is below {recomputed:.4g}, the epsilon its "
            f"own mechanism gives ({kind} noise {f['noise']:.4g}, clip {f['clip']:g} ({clip_norm}), dimension "
            f"{int(f['dim'])}, {n} encodings per example, delta {delta:g}); refusing a guarantee the release does not "
            "have")
    if cal.get("valid_dp_guarantee"):
        calibration = _name(cal, "calibration", where, DP_CALIBRATIONS)
        target = _f(cal, "target_epsilon", where)
        require(calibration == "correct" and claim <= target * (1 + TOLERANCE),
                f"{where}: DP instance encoding field 'valid_dp_guarantee' is true, but the calibration is "
                f"{calibration} with epsilon {claim:.4g} for the target {target:g}")
    return claim


def recompute(kind: str, z: float, n: int, delta: float, where: str) -> float:
    """:func:`~privnlu.mechanisms.dp.composed_epsilon` (:mod:`privnlu.accounting`'s ``tightest`` accountant, as
    calibration uses it), or one line (naming ``where``) if it cannot be computed."""
    try:
        return _recompute(kind, z, n, delta)
    except (OverflowError, ZeroDivisionError, ValueError, FloatingPointError, MemoryError, PrivnluError) as exc:
        why = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise PrivnluError(f"{where}: cannot verify the DP instance encoding epsilon of {kind} noise multiplier "
                           f"{z:.4g}, {n} encodings per example, delta {delta:g} ({why})") from None


@functools.lru_cache(maxsize=1024)
def _recompute(kind: str, z: float, n: int, delta: float) -> float:
    from .dp import composed_epsilon

    return composed_epsilon(kind, z, n, delta)


__all__ = ["TOLERANCE", "is_dp_ie", "least_participations", "verify_dp_ie"]
