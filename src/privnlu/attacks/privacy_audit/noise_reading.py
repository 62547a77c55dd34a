"""Empirical check of the two readings of DP instance encoding's noise draw (:data:`~privnlu.mechanisms.dp.NOISE_READINGS`).

Algorithm 1 of Xie & Hong 2022, as printed, draws one noise vector ``N`` per batch (line 7) and adds it to every
encoding of the batch (line 11). Then two encodings of one batch differ by a noise-free amount: with ``k = 1`` and
no mask, ``e_1 - e_2 = clip(x_1) - clip(x_2)``. The audit releases a batch of two examples with the real
:class:`~privnlu.mechanisms.dp.DPTextHide`, neighbouring batches differing in the first one (``x_1 = C v`` or
``-C v`` on the clipping boundary, :func:`~.mechanism.boundary_direction`; ``x_2 = 0``), and tests
them apart with the statistic ``<e_1 - e_2, u>``, ``u = v / ||v||_2``: the threshold distinguisher and its 95 %
Clopper-Pearson lower bound on epsilon of :mod:`privnlu.attacks.privacy_audit.mechanism`.

* per encoding (fresh noise): ``<e_1 - e_2, u> = +-C ||v||_2 + <z_1 - z_2, u>``; the bound stays below the claim;
* per batch: ``<e_1 - e_2, u> = +-C ||v||_2`` exactly, the two hypotheses never overlap, and the bound reaches the
  audit's power (:func:`~.mechanism.max_certifiable_epsilon`) whatever the noise: more draws raise it
  without limit, i.e. no finite epsilon holds.

One draw is one :meth:`~privnlu.mechanisms.dp.DPTextHide.hide` call (one batch), so the per-batch reading draws
its noise once per trial, as it would per training batch.
"""

from __future__ import annotations

import numpy as np
import torch

from ...errors import require
from ...rng import SecretGenerator
from .mechanism import AuditResult, _result, boundary_direction, check_work

#: draws per hypothesis at most (one hide call each: the audit is a Python loop)
MAX_READING_DRAWS = 1_000_000


def audit_noise_reading(calibration, *, noise: str, draws: int = 20_000, rng: SecretGenerator) -> AuditResult:
    """Audit one batch of two encodings under ``calibration`` (:class:`~privnlu.mechanisms.dp.Calibration` for
    ``k = 1``, one pass) with noise drawn ``noise`` (``per-encoding`` or ``per-batch``), against its target epsilon."""
    from ...mechanisms.dp import DPTextHide, check_noise_reading

    check_noise_reading(noise)
    require(4 <= draws <= MAX_READING_DRAWS, f"draws must be in [4, {MAX_READING_DRAWS}], not {draws}")
    mech = calibration.mechanism
    check_work(draws, mech.dim, encodings=2)
    hider = DPTextHide(0, 1, dim=mech.dim, rng=rng, mechanism=mech, noise=noise)
    v = boundary_direction(mech)
    u = (v / v.norm()).double()
    y = torch.zeros(2, 1)
    stats = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # thousands of two-row calls: thread hand-offs would cost more than the work
    try:
        for sign in (1.0, -1.0):
            batch = torch.stack([sign * mech.clip * v, torch.zeros_like(v)])
            out = np.empty(draws)
            for t in range(draws):
                e = hider.hide(batch, y).x.double()  # encoding i holds example i (pi_1 is the identity; k = 1)
                out[t] = float((e[0] - e[1]) @ u)
            stats[sign] = out
    finally:
        torch.set_num_threads(threads)
    accounted = {"accounted_epsilon": calibration.epsilon} if np.isfinite(calibration.epsilon) else {}
    details = {"mechanism": mech.to_json(), "calibration": calibration.calibration, "noise_reading": noise, **accounted,
               "batch": "2 examples, k = 1, no mask; x_1 = +-C v on the clipping boundary, x_2 = 0",
               "statistic": "<e_1 - e_2, u>, u = v / ||v||_2 (the noise cancels in the difference when it is drawn "
                            "once per batch)"}
    return _result(f"dp-{mech.kind}-{calibration.calibration}-{noise}", calibration.target_epsilon, calibration.delta,
                   stats[1.0], stats[-1.0], details)
