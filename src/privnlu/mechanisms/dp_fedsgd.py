"""Client-level DP accounting for DP-FedSGD: settings checks, epsilon spent, and the noise for a target.

``T`` rounds of the Gaussian mechanism with noise multiplier ``z`` compose to one Gaussian with multiplier
``z / sqrt(T)``; the accountant is Google's ``dp-accounting`` (PLD). :mod:`.dp` wraps a strategy with it.
"""

from __future__ import annotations

import math

from ..errors import require
from .dp import check_privacy_params, pld_epsilon


def check_dp_settings(*, clipping_norm: float, noise_multiplier: float, delta: float) -> None:
    """One-line errors for bad DP settings (before anything runs)."""
    require(math.isfinite(clipping_norm) and clipping_norm > 0, f"the DP clipping norm must be > 0, not {clipping_norm}")
    require(math.isfinite(noise_multiplier) and noise_multiplier > 0,
            f"the DP noise multiplier must be > 0, not {noise_multiplier}")
    require(0 < delta < 1, f"the DP delta must be in (0, 1), not {delta}")


def epsilon_spent(noise_multiplier: float, rounds: int, delta: float) -> float:
    """Client-level epsilon at ``delta`` after ``rounds`` Gaussian releases with multiplier ``z`` (dp-accounting PLD)."""
    import dp_accounting

    if rounds == 0:
        return 0.0
    event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(noise_multiplier), rounds)
    return pld_epsilon(event, delta, loss_scale=noise_multiplier ** -2)


def noise_multiplier_for(epsilon: float, delta: float, rounds: int) -> float:
    """The multiplier ``z`` whose ``rounds``-fold composition is (epsilon, delta)-DP.

    A composition of ``T`` Gaussians with multiplier ``z`` is one Gaussian with multiplier
    ``z / sqrt(T)``, so ``z = sigma(epsilon, delta) sqrt(T)`` with the analytic Gaussian
    calibration (Balle & Wang 2018, ``dp_accounting.get_sigma_gaussian``).
    """
    import dp_accounting

    check_privacy_params(epsilon, delta)
    require(rounds >= 1, f"rounds must be >= 1, not {rounds}")
    z = float(dp_accounting.get_sigma_gaussian(epsilon, delta)) * math.sqrt(rounds)
    for _ in range(30):  # the accountant's pessimistic estimate may sit a hair above the analytic value: raise z
        spent = epsilon_spent(z, rounds, delta)
        if spent <= epsilon:
            break
        z *= 1 + max(spent / epsilon - 1, 1e-9)
    return z
