"""A received DP-SGD guarantee is checked, never taken on trust.

A DP-SGD record (a run record's ``dp`` block, a model folder's ``privnlu.json`` ``privacy.dp``: a
:class:`~privnlu.training.dp_sgd.DPSGDResult`'s JSON) states its epsilon beside the mechanism it came from: the
noise multiplier, the Poisson sampling rate, the number of steps, delta and the accountant. :func:`verify_dp_sgd`
recomputes epsilon from those parameters with the record's own accountant (Opacus's PRV or RDP, as training did,
through :mod:`privnlu.accounting`)
and refuses, in one line naming where the record came from:

* a field that is missing, not a finite number, or out of range (:data:`RANGES`);
* a claimed epsilon (``epsilon``, and ``accounted_epsilon`` where present) below the recomputation by more than
  :data:`TOLERANCE` (relative): the parameters give less privacy than the record says;
* parameters the accountant cannot account for (it overflows, or its discretisation does not fit
  :data:`MAX_PRV_POINTS` points even on a coarser mesh).

Where Opacus's default mesh would need more than :data:`MAX_PRV_POINTS` points (a long run: about 100,000 steps),
the PRV accountant runs on a coarser mesh that fits, and the claim is compared with that mesh's *lower* bound on
epsilon, so a run's own (finer) accounting is never refused for the coarser check, while a claim below the lower
bound is still below the true epsilon.

The RDP accountant runs first: it is cheap and a valid upper bound, so a claim at or above it is sound without the
PRV accountant's convolution. Results are remembered per process.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from .. import accounting
from ..errors import PrivnluError, require
from ..params import MAX_EPSILON, MIN_DELTA, checked_number, plural

#: how far (relative) a claimed epsilon may sit below the recomputation (the accountants' own discretisation)
TOLERANCE = 0.01
#: the most points of the PRV accountant's discretised domain a check may use (about 170 bytes each)
MAX_PRV_POINTS = 4_000_000
#: (low, high, low included, high included) of each numeric field; below a noise multiplier of 0.01 no run has an
#: epsilon privnlu accepts (at most 1000)
RANGES: dict[str, tuple[float, float, bool, bool]] = {
    "epsilon": (0.0, MAX_EPSILON, False, True), "delta": (MIN_DELTA, 1.0, True, False),
    "noise_multiplier": (0.01, 1e4, True, True), "sample_rate": (0.0, 1.0, False, True),
    "steps": (1, 10 ** 8, True, True)}
ACCOUNTANTS = ("prv", "rdp")


def _field(dp: dict, name: str, where: str, rng: tuple[float, float, bool, bool] | None = None) -> float:
    """``dp[name]``: a finite number in its range, or one line naming ``where`` and the field."""
    return checked_number(dp, name, where, "DP-SGD", (*(rng or RANGES[name]), name == "steps"))


def check_fields(dp: Any, where: str) -> dict:
    """The record's numbers, checked for type and range (see the module docstring); no accounting."""
    require(isinstance(dp, dict), f"{where}: the DP-SGD record is {type(dp).__name__}, not an object")
    accountant = dp.get("accountant")
    require(accountant in ACCOUNTANTS, f"{where}: DP-SGD field 'accountant' is {str(accountant)[:40]!r}, not one "
                                       f"of {', '.join(ACCOUNTANTS)}")
    out = {k: _field(dp, k, where) for k in ("epsilon", "delta", "noise_multiplier", "sample_rate", "steps")}
    for extra, rng in (("accounted_epsilon", RANGES["epsilon"]), ("target_epsilon", RANGES["epsilon"]),
                       ("clip", (0.0, 1e12, False, True))):
        if dp.get(extra) is not None:
            out[extra] = _field(dp, extra, where, rng)
    return {**out, "steps": int(out["steps"]), "accountant": accountant}


def verify_dp_sgd(dp: Any, *, where: str) -> float:
    """Recompute a DP-SGD record's epsilon and refuse a claim below it (see the module docstring); returns the
    claimed epsilon, verified. ``where`` names the record in the error (a file, a folder)."""
    f = check_fields(dp, where)
    z, q, steps, delta, accountant = f["noise_multiplier"], f["sample_rate"], f["steps"], f["delta"], f["accountant"]
    claim = min(f["epsilon"], f.get("accounted_epsilon", math.inf))
    mechanism = (f"noise multiplier {z:.4g}, sampling rate {q:.4g}, {plural(steps, 'step')}, delta {delta:g}, "
                 f"{accountant} accountant")
    rdp = accounted_epsilon(z, q, steps, delta, "rdp", where)
    if claim >= rdp * (1 - TOLERANCE):  # RDP is an upper bound: the claim is sound
        return claim
    recomputed = rdp if accountant == "rdp" else accounted_epsilon(z, q, steps, delta, "prv", where)
    require(claim >= recomputed * (1 - TOLERANCE),
            f"{where}: the claimed DP-SGD epsilon {claim:.4g} is below {recomputed:.4g}, the epsilon its own "
            f"mechanism gives ({mechanism}); refusing a guarantee the model does not have")
    return claim


def accounted_epsilon(z: float, q: float, steps: int, delta: float, accountant: str, where: str = "") -> float:
    """Opacus's epsilon after ``steps`` Poisson-sampled Gaussian steps (noise multiplier ``z``, rate ``q``) at
    ``delta``; one line (naming ``where``) if the accountant cannot compute it within bounds."""
    try:
        return _accounted(z, q, steps, delta, accountant)
    except (OverflowError, ZeroDivisionError, ValueError, FloatingPointError, MemoryError, PrivnluError) as exc:
        why = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise PrivnluError(f"{where or 'DP-SGD'}: cannot verify the DP-SGD epsilon of noise multiplier {z:.4g}, "
                           f"sampling rate {q:.4g}, {plural(steps, 'step')}, delta {delta:g} ({why})") from None


@functools.lru_cache(maxsize=256)
def _accounted(z: float, q: float, steps: int, delta: float, accountant: str) -> float:
    """:mod:`privnlu.accounting`'s ``opacus-prv`` (on a mesh of at most :data:`MAX_PRV_POINTS` points) or
    ``opacus-rdp`` accountant."""
    options = {"max_points": MAX_PRV_POINTS} if accountant == "prv" else {}
    eps = accounting.epsilon(accounting.gaussian_event(z, q, steps), delta, f"opacus-{accountant}", **options)
    if not math.isfinite(eps):
        raise ValueError("not finite")
    return eps


def is_dp_sgd(dp: Any) -> bool:
    """Whether a ``dp`` block is DP-SGD's (``"method": "dp-sgd"``)."""
    return isinstance(dp, dict) and dp.get("method") == "dp-sgd"


__all__ = ["MAX_PRV_POINTS", "TOLERANCE", "accounted_epsilon", "check_fields", "is_dp_sgd", "verify_dp_sgd"]
