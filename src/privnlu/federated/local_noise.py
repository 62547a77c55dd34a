"""Whole-update Gaussian noise (measurement knob): a client perturbs its own gradient before it leaves the device.

    g~_c = clip_C(g_c) + N(0, (z C)^2 I)        on every coordinate of every array sent

(the clipping of :func:`~.dp.clip_gradient`, all arrays together, then dense Gaussian noise from the
client's :class:`~privnlu.rng.SecretGenerator`). Unlike server-side DP-FedSGD (``--dp-clip``), whose
noise is added after the server has received the raw gradients, this noise is on the wire. It must be
dense: noise added only to the non-zero rows would still show which rows (which token ids) are non-zero.
No DP guarantee is claimed for it, and it is not a privacy option: ``privnlu federated`` refuses
``--local-noise`` and points to ``--client-dp-epsilon`` (:mod:`.client_dp`, client-side DP-SGD with per-example
clipping and accounting). It stays a measurement knob (the config fields ``local_clip``/``local_noise``) that the
attack recipes use to show what whole-update noise on the wire does to an attack.
"""

from __future__ import annotations

import torch

from ..rng import SecretGenerator
from .dp import clip_gradient


def add_local_noise(grads: dict[str, torch.Tensor], *, clip: float, multiplier: float,
                    rng: SecretGenerator) -> dict[str, torch.Tensor]:
    """``clip_C(g) + N(0, (z C)^2 I)``, dense over every coordinate."""
    clipped, _ = clip_gradient(grads, clip)
    std = multiplier * clip
    return {n: g + std * rng.normal(tuple(g.shape), dtype=g.dtype) for n, g in clipped.items()}
