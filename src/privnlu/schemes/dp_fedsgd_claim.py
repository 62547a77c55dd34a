"""A received federated DP guarantee is checked, never taken on trust.

Two blocks of a ``privnlu federated`` record (and of its model folder's ``privnlu.json``, ``federated``) state an
epsilon beside the mechanism it came from:

* ``dp`` (``dp_fedsgd`` in a model folder), DP-FedSGD's :meth:`~.dp.DPFedSGD.report`: ``releases`` Gaussian
  mechanisms with noise multiplier ``noise_multiplier`` at ``delta``. :func:`verify_dp_fedsgd` recomputes the
  client-level epsilon with :func:`~privnlu.mechanisms.dp_fedsgd.epsilon_spent` (dp-accounting PLD through
  :mod:`privnlu.accounting`, as the run did);
* ``client_dp``, client-side DP-SGD's :func:`~.client_dp.client_dp_report`: each client's Poisson-subsampled
  Gaussian steps. :func:`verify_client_dp` recomputes every client's epsilon from its noise multiplier, sampling
  rate, steps and delta (:func:`~privnlu.schemes.dp_sgd_claim.verify_dp_sgd`, Opacus's PRV accountant, as the run
  calibrated it), and refuses a block epsilon or delta below its worst client's.

Each refuses in one line naming where the record came from: a field that is missing, not a finite number, or out of
range, or a claimed epsilon below the recomputation by more than :data:`TOLERANCE` (relative).
"""

from __future__ import annotations

import functools
import math
from typing import Any

from ..errors import PrivnluError, require
from ..params import MAX_EPSILON, MIN_DELTA, checked_number
from .dp_sgd_claim import verify_dp_sgd

#: how far (relative) a claimed epsilon may sit below the recomputation (the accountant's own discretisation)
TOLERANCE = 0.01
#: the most clients a ``client_dp`` block may list
MAX_CLIENTS = 100_000
#: (low, high, low included, high included, whole number) of each numeric field of a DP-FedSGD block
RANGES: dict[str, tuple[float, float, bool, bool, bool]] = {
    "noise_multiplier": (0.01, 1e4, True, True, False), "clipping_norm": (0.0, 1e12, False, True, False),
    "num_sampled_clients": (1, 10 ** 6, True, True, True), "releases": (0, 10 ** 8, True, True, True),
    "delta": (MIN_DELTA, 1.0, True, False, False), "epsilon": (0.0, math.inf, True, False, False)}


def is_dp_fedsgd(block: Any) -> bool:
    """Whether a ``dp`` block is DP-FedSGD's (it counts its noisy ``releases``)."""
    return isinstance(block, dict) and "releases" in block and block.get("method") is None


def verify_dp_fedsgd(dp: Any, *, where: str) -> float:
    """Recompute a DP-FedSGD block's client-level epsilon and refuse a claim below it; returns the claim."""
    require(isinstance(dp, dict), f"{where}: the DP-FedSGD record is {type(dp).__name__}, not an object")
    f = {k: checked_number(dp, k, where, "DP-FedSGD", rng) for k, rng in RANGES.items()}
    z, rounds, delta, claim = f["noise_multiplier"], int(f["releases"]), f["delta"], f["epsilon"]
    recomputed = _spent(z, rounds, delta, where)
    require(claim >= recomputed * (1 - TOLERANCE),
            f"{where}: the claimed DP-FedSGD epsilon {claim:.4g} is below {recomputed:.4g}, the epsilon its own "
            f"mechanism gives (noise multiplier {z:.4g}, {rounds} noisy rounds, delta {delta:g}); refusing a "
            "guarantee the model does not have")
    return claim


def _spent(z: float, rounds: int, delta: float, where: str) -> float:
    try:
        return _epsilon_spent(z, rounds, delta)
    except (OverflowError, ZeroDivisionError, ValueError, FloatingPointError, MemoryError, PrivnluError) as exc:
        why = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise PrivnluError(f"{where}: cannot verify the DP-FedSGD epsilon of noise multiplier {z:.4g}, {rounds} "
                           f"rounds, delta {delta:g} ({why})") from None


@functools.lru_cache(maxsize=256)
def _epsilon_spent(z: float, rounds: int, delta: float) -> float:
    from ..mechanisms.dp_fedsgd import epsilon_spent

    return epsilon_spent(z, rounds, delta)


def verify_client_dp(block: Any, *, where: str) -> float:
    """Recompute every client's epsilon of a ``client_dp`` block (client DP-SGD) and refuse a claim below it, or a
    block epsilon or delta below its worst client's; returns the block's epsilon."""
    require(isinstance(block, dict), f"{where}: the client DP-SGD record is {type(block).__name__}, not an object")
    clients = block.get("clients")
    require(isinstance(clients, list) and 0 < len(clients) <= MAX_CLIENTS,
            f"{where}: client DP-SGD field 'clients' is not a list of 1 to {MAX_CLIENTS:,} clients")
    accountant = block.get("accountant", "prv")
    eps, deltas = [], []
    for i, c in enumerate(clients):
        require(isinstance(c, dict), f"{where}: client DP-SGD field 'clients[{i}]' is not an object")
        eps.append(verify_dp_sgd({**c, "accountant": accountant}, where=f"{where}: client {i}"))
        deltas.append(float(c["delta"]))
    claim = checked_number(block, "epsilon", where, "client DP-SGD", (0.0, MAX_EPSILON, False, True, False))
    delta = checked_number(block, "delta", where, "client DP-SGD", (MIN_DELTA, 1.0, True, False, False))
    require(claim >= max(eps) * (1 - TOLERANCE) and delta >= max(deltas) * (1 - TOLERANCE),
            f"{where}: the client DP-SGD guarantee ({claim:.4g}, {delta:g}) is smaller than its worst client's "
            f"({max(eps):.4g}, {max(deltas):g})")
    return claim


__all__ = ["TOLERANCE", "is_dp_fedsgd", "verify_client_dp", "verify_dp_fedsgd"]
