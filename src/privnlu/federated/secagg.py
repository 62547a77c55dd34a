"""A TEST DOUBLE of secure aggregation: pairwise additive masking with seeds dealt out of band.

No privnlu run uses this module: ``privnlu federated --secagg`` runs Flower's SecAgg+ (:mod:`.secagg_plus`), with
key agreement through the server and Shamir shares that survive a dropout. This is the masking core of SecAgg
(Bonawitz et al. 2017) only, kept for tests and for reading masked replies in captures recorded by earlier
versions (:func:`decode`, :data:`RECORD`; :mod:`privnlu.attacks.gradient.embedding_leak` attacks such replies one
by one and summed):

* every pair of clients ``(i, j)`` shares a secret seed ``s_ij`` (256 bits from
  :class:`~privnlu.rng.SecretGenerator`), dealt out of band (:func:`deal_pair_seeds`, into each node's private
  ``Context.state``), standing in for a key agreement;
* client ``i`` encodes ``(b_i g_i, b_i, b_i loss_i)`` in fixed point (``2^40`` units, int64) and sends, modulo
  ``2^64``, ``y_i = q_i + sum_{j > i} PRG(s_ij, t) - sum_{j < i} PRG(s_ji, t)`` (``PRG`` = SHAKE-256), so that each
  ``y_i`` is uniform and ``sum_i y_i = sum_i q_i`` (:func:`mask_reply`, :func:`unmask_sum`);
* no seed recovery: a missing participant makes the sum undecodable.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, RecordDict

from ..errors import PrivnluError
from ..rng import SecretGenerator

SEEDS_KEY = "privnlu-secagg-pair-seeds"
PARTICIPANTS = "secagg-participants"
RECORD = "secagg"
NUM_EXAMPLES = "__num_examples__"
LOSS_SUM = "__loss_sum__"
SCALE = 2.0 ** 40  # fixed point: |sum of b*g| must stay below 2^23 (int64)


def deal_pair_seeds(node_ids: list[int], states: dict, rng: SecretGenerator | None = None) -> None:
    """Give every pair of nodes a shared 256-bit seed, in each node's private state (the out-of-band setup)."""
    rng = rng or SecretGenerator()
    seeds = {n: {} for n in node_ids}
    for a in node_ids:
        for b in node_ids:
            if a < b:
                s = rng.words(4)
                seeds[a][b] = seeds[b][a] = s
    for n in node_ids:
        peers = sorted(seeds[n])
        states[n][SEEDS_KEY] = ArrayRecord({str(p): Array(seeds[n][p]) for p in peers})


def _pad(seed: np.ndarray, rnd: int, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """``PRG(s, t)`` for one array: SHAKE-256(seed, round, name) as uniform uint64 words."""
    n = int(np.prod(shape)) if shape else 1
    h = hashlib.shake_256(seed.astype("<u8").tobytes() + f"/{rnd}/{name}".encode())
    return np.frombuffer(h.digest(8 * n), dtype="<u8").astype(np.uint64).reshape(shape)


def encode(x: np.ndarray) -> np.ndarray:
    """Fixed point mod 2^64: round(x * 2^40) as int64, reinterpreted as uint64."""
    q = np.rint(np.asarray(x, dtype=np.float64) * SCALE)
    if q.size and np.abs(q).max() >= 2.0 ** 62:
        raise PrivnluError("a value is too large for secure aggregation's fixed-point encoding")
    return q.astype(np.int64).view(np.uint64)


def decode(q: np.ndarray) -> np.ndarray:
    return np.asarray(q, dtype=np.uint64).view(np.int64).astype(np.float64) / SCALE


def mask_reply(grads: dict[str, torch.Tensor], loss: float, b: int, *, node_id: int, participants: list[int],
               rnd: int, state) -> RecordDict:
    """Client side: the masked record ``y_i`` for ``(b g, b, b loss)``; nothing else goes back."""
    if SEEDS_KEY not in state:
        raise PrivnluError("the pairwise-masking test double needs pairwise seeds dealt to the clients "
                           "(deal_pair_seeds)")
    if node_id not in participants:
        raise PrivnluError(f"node {node_id} is not among the round's secure-aggregation participants")
    seeds = {int(p): np.array(a.numpy(), copy=True) for p, a in state[SEEDS_KEY].items()}
    values = {n: g.detach().double().numpy() * b for n, g in grads.items()}
    values[NUM_EXAMPLES] = np.array([float(b)])
    values[LOSS_SUM] = np.array([float(loss) * b])
    out = {}
    for name, v in values.items():
        y = encode(v)
        for peer in participants:
            if peer == node_id:
                continue
            pad = _pad(seeds[peer], rnd, name, v.shape)
            y = y + pad if node_id < peer else y - pad  # uint64 arithmetic wraps mod 2^64
        out[name] = Array(np.ascontiguousarray(y))
    return RecordDict({RECORD: ArrayRecord(out)})


def unmask_sum(records: Iterable[ArrayRecord]) -> dict[str, np.ndarray]:
    """Server side: the sum of the masked records, decoded (the masks cancel only over all participants)."""
    total: dict[str, np.ndarray] = {}
    for rec in records:
        for name, a in rec.items():
            v = np.asarray(a.numpy(), dtype=np.uint64)
            total[name] = v.copy() if name not in total else total[name] + v
    return {n: decode(v) for n, v in total.items()}
