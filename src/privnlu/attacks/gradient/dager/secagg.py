"""The DAGER-class attack on what a SecAgg+ server sees: the decoded aggregate of N clients' FedSGD messages.

For a seeded joint-mode config with ``cfg.clients = N``, every client computes its reply for rounds ``1..trials``
on ``W_0`` (:func:`~privnlu.federated.client.client_update`, exactly what it sends); the aggregate is built as
Flower's SecAgg+ decodes it (:func:`secagg_aggregate`: each client's ``b_i g_i / W`` clipped to ``[-c, c]`` and
stochastically rounded to ``T`` levels, summed, dequantized, divided by ``sum_i b_i / W``), or exactly
(``quantized=False``: the attacker's best case, a sum with no quantization error). The attacker gets the
aggregate, the sent model and the declared number of examples; the auditor scores the recovered sentences against
the union of the N clients' replayed batches. ``N = 1`` is the plain message (SecAgg+ needs two clients). On a
quantized aggregate the attacker reads each span's rank above the quantization noise
(:func:`~.span.rank_above_noise`): it knows the protocol adds it.
The client encoder's dropout is off (the setting exact inversion assumes: the attacker's best case).
"""

from __future__ import annotations

import time

import numpy as np

from .attack import SpanInversionAttack, attacker_encoder, special_ids
from .measure import _dropouts
from .metrics import score_batch
from ...threat import SPAN_INVERSION_THREAT, AttackerView


def secagg_aggregate(grads: list[dict[str, np.ndarray]], sizes: list[int], *, max_weight: float, seed: int,
                     clip: float | None = None, levels: int | None = None) -> dict[str, np.ndarray]:
    """The example-weighted mean gradient as SecAgg+ decodes it (the masks cancel; the quantization stays)."""
    from ....federated.secagg_plus import CLIPPING_RANGE, QUANTIZATION_RANGE

    c, t = float(clip or CLIPPING_RANGE), int(levels or QUANTIZATION_RANGE)
    rng = np.random.default_rng(seed)
    ratios = [b / max_weight for b in sizes]
    out: dict[str, np.ndarray] = {}
    for name in grads[0]:
        total = np.zeros(np.shape(grads[0][name]), dtype=np.float64)
        for g, r in zip(grads, ratios):
            x = (np.clip(np.asarray(g[name], dtype=np.float64) * r, -c, c) + c) * (t / (2 * c))
            q = np.ceil(x)
            q -= rng.random(q.shape) < q - x  # stochastic rounding: unbiased
            total += q * (2 * c / t) - c
        out[name] = (total / sum(ratios)).astype(np.float32)
    return out


def exact_aggregate(grads: list[dict[str, np.ndarray]], sizes: list[int]) -> dict[str, np.ndarray]:
    """The example-weighted mean gradient with no quantization (the attacker's best case)."""
    n = float(sum(sizes))
    return {k: (sum(np.asarray(g[k], dtype=np.float64) * b for g, b in zip(grads, sizes)) / n).astype(np.float32)
            for k in grads[0]}


def measure_aggregate(cfg, *, trials: int, quantized: bool = True, max_seconds: float = 120.0, seed: int = 0) -> dict:
    """Attack ``trials`` aggregates of ``cfg.clients`` clients' messages; the means and one row per aggregate."""
    from flwr.app import RecordDict

    from ....federated.client import _encoder, client_update, replay_batch
    from ....federated.model import build_model

    client_enc = _encoder(cfg)
    arrays = build_model(cfg, client_enc, init_seed=cfg.experiment_seed).to_arrays()
    sent = {n: a.numpy() for n, a in arrays.items()}
    view = AttackerView(SPAN_INVERSION_THREAT, encoder=attacker_encoder(sent, cfg.model or None))
    quantize = quantized and cfg.clients >= 2
    attack = SpanInversionAttack(max_seconds=max_seconds, seed=seed, noise_floor=quantize)
    special = special_ids(view.encoder.tokenizer)
    drops = _dropouts(client_enc)
    saved = [m.p for m in drops]
    rows = []
    try:
        for m in drops:
            m.p = 0.0
        for rnd in range(1, trials + 1):
            t0 = time.time()
            grads, sizes = [], []
            for c in range(cfg.clients):  # exactly what each client sends in round rnd
                reply = client_update(cfg, c, RecordDict(), rnd, arrays)
                grads.append({n: np.array(a.numpy(), copy=True) for n, a in reply["gradients"].items()})
                sizes.append(int(reply["metrics"]["num-examples"]))
            agg = (secagg_aggregate(grads, sizes, max_weight=float(cfg.batch_size), seed=seed + rnd) if quantize
                   else exact_aggregate(grads, sizes))
            del grads
            out = attack.run(agg, view, batch_size=sum(sizes))
            true: list[list[int]] = []  # AUDITOR from here on: the union of the clients' batches
            texts: list[str] = []
            for c in range(cfg.clients):
                t, ids = replay_batch(cfg, c, rnd)
                texts += t
                true += ids
            rows.append({"round": rnd, "tokens": sum(len(s) for s in true),
                         "distinct_pairs": len({(t, p) for s in true for p, t in enumerate(s)}),
                         "rank1": out.get("rank1"), "rank2": out.get("rank2"), "saturated": out.get("saturated"),
                         "recovered": len(out.get("sentence_ids", [])), "certified": sum(out.get("certified", [])),
                         "complete": out.get("complete", True), **score_batch(out.get("sentence_ids", []), true, special),
                         "seconds": round(time.time() - t0, 1)})
    finally:
        for m, p in zip(drops, saved):
            m.p = p
    mean = lambda k: float(np.mean([r[k] for r in rows])) if rows else float("nan")  # noqa: E731
    return {"clients": cfg.clients, "batch_size": cfg.batch_size, "quantized": quantize, "noise_floor": quantize,
            "dropout": "off",
            "trials": trials, "dim": view.encoder.dim, "rouge1": mean("rouge1"), "rouge2": mean("rouge2"),
            "exact": mean("exact"), "tokens": mean("tokens"), "distinct_pairs": mean("distinct_pairs"),
            "seconds": mean("seconds"), "saturated": sum(bool(r["saturated"]) for r in rows), "rows": rows}
