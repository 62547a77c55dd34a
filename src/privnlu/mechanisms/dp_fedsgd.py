"""Client-level DP accounting for DP-FedSGD: settings checks, epsilon spent, and the noise for a target.

``T`` rounds of the Gaussian mechanism with noise multiplier ``z`` compose to one Gaussian with multiplier
``z / sqrt(T)``; the accountant is Google's ``dp-accounting`` (PLD, :mod:`privnlu.accounting`'s ``pld``). :mod:`.dp`
wraps a strategy with it.
"""

from __future__ import annotations

import math

from .. import accounting
from ..errors import require
from .dp import check_privacy_params


def check_dp_settings(*, clipping_norm: float, noise_multiplier: float, delta: float) -> None:
    """One-line errors for bad DP settings (before anything runs)."""
    require(math.isfinite(clipping_norm) and clipping_norm > 0, f"the DP clipping norm must be > 0, not {clipping_norm}")
    require(math.isfinite(noise_multiplier) and noise_multiplier > 0,
            f"the DP noise multiplier must be > 0, not {noise_multiplier}")
    require(0 < delta < 1, f"the DP delta must be in (0, 1), not {delta}")


def epsilon_spent(noise_multiplier: float, rounds: int, delta: float) -> float:
    """Client-level epsilon at ``delta`` after ``rounds`` Gaussian releases with multiplier ``z`` (dp-accounting PLD)."""
    if rounds == 0:
        return 0.0
    return accounting.epsilon(rounds_event(noise_multiplier, rounds), delta, "pld")


def rounds_event(noise_multiplier: float, rounds: int):
    """The DP event of ``rounds`` Gaussian releases with multiplier ``z`` (every client in every round)."""
    return accounting.gaussian_event(noise_multiplier, None, rounds)


def noise_multiplier_for(epsilon: float, delta: float, rounds: int) -> float:
    """The multiplier ``z`` whose ``rounds``-fold composition is (epsilon, delta)-DP.

    A composition of ``T`` Gaussians with multiplier ``z`` is one Gaussian with multiplier
    ``z / sqrt(T)``, so ``z = sigma(epsilon, delta) sqrt(T)`` with the analytic Gaussian
    calibration (Balle & Wang 2018, ``dp_accounting.get_sigma_gaussian``).
    """
    check_privacy_params(epsilon, delta)
    require(rounds >= 1, f"rounds must be >= 1, not {rounds}")
    start = accounting.analytic_gaussian_sigma(epsilon, delta) * math.sqrt(rounds)
    # the accountant's pessimistic estimate may sit a hair above the analytic value: z is raised until within
    return accounting.noise_for(epsilon, delta, lambda z: rounds_event(z, rounds), "pld", start=start,
                                min_raise=1e-9)
