"""Secure aggregation (in-process, pairwise additive masking): the server sees only the sum of the clients' gradients.

This is NOT Flower's SecAgg+ (``SecAggPlusWorkflow`` / ``secaggplus_mod``): in flwr 1.41 that workflow
runs on the legacy ``LegacyContext`` / ``FitIns`` API, not on the Message-API strategies privnlu's
ServerApp uses. It is the masking core of SecAgg (Bonawitz et al. 2017), honestly reduced:

* every pair of clients ``(i, j)`` shares a secret seed ``s_ij`` (256 bits from
  :class:`~privnlu.rng.SecretGenerator`). Here the seeds are *dealt out of band* when the in-process
  clients are created (:func:`deal_pair_seeds`, kept in each node's private ``Context.state``,
  never in a message), standing in for SecAgg's Diffie-Hellman key agreement through the server;
* each round client ``i`` encodes ``(b_i g_i, b_i, b_i loss_i)`` in fixed point (``2^40`` units, int64)
  and sends, modulo ``2^64``,

      y_i = q_i + sum_{j > i} PRG(s_ij, t) - sum_{j < i} PRG(s_ji, t)

  over the round's participants (the server announces them), ``PRG`` = SHAKE-256. Each ``y_i`` on its own is
  uniformly distributed (one-time pad), and ``sum_i y_i = sum_i q_i`` (mod ``2^64``) because every mask
  appears once with each sign;
* the server adds the replies and decodes ``sum_i b_i g_i / sum_i b_i``, the FedSGD average.

Not implemented: SecAgg's Shamir shares of the seeds, so a participant that drops out makes the round's
sum undecodable; that round is skipped (the model stays ``W_t``). Malicious servers (announcing
different participant lists, or a list of one) are out of scope, as in SecAgg's honest-but-curious model.

What it protects: no single client's gradient is visible, to the server or on the wire. What it does
not: the *sum* is revealed, and the embedding-gradient leak of the sum is the union of all
participants' token sets (see docs/design/federated.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
from flwr.serverapp import Grid

from ..errors import PrivnluError
from ..rng import SecretGenerator
from .strategy import TextHideFedSGD

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
        raise PrivnluError("secure aggregation needs pairwise seeds dealt to the clients; only --backend inprocess "
                           "deals them (Flower's SecAgg+ key agreement is not wired in)")
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


class SecAggFedSGD(TextHideFedSGD):
    """FedSGD whose server sees only ``sum_i y_i``: the clients' masked records, added and decoded."""

    expected: list[int] = []

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid) -> Iterable[Message]:
        msgs = list(super().configure_train(server_round, arrays, config, grid))
        self.expected = sorted(m.metadata.dst_node_id for m in msgs)
        for m in msgs:
            m.content[self.configrecord_key][PARTICIPANTS] = list(self.expected)
        return msgs

    def aggregate_train(self, server_round: int, replies: Iterable[Message]):
        ok = [r for r in replies if not r.has_error() and RECORD in r.content.array_records]
        got = sorted(r.metadata.src_node_id for r in ok)
        self.last_train_metrics = None
        if not ok or got != self.expected:
            import warnings

            warnings.warn(f"secure aggregation: round {server_round + self.round_offset} has replies from "
                          f"{len(got)} of {len(self.expected)} participants; without SecAgg+'s seed recovery the "
                          "masks do not cancel, so the round is skipped", RuntimeWarning, stacklevel=2)
            return None, None
        total = unmask_sum(r.content[RECORD] for r in ok)
        n = total.pop(NUM_EXAMPLES)[0]
        loss = total.pop(LOSS_SUM)[0] / n
        self.apply_gradient({k: torch.from_numpy(v / n).float() for k, v in total.items()})
        self.last_train_metrics = MetricRecord({"num-examples": int(round(n)), "train-loss": float(loss)})
        return self.arrays(), self.last_train_metrics
