"""The DAGER-class attack measured on messages produced by privnlu's own client code (the recipe's engine).

For a seeded joint-mode config (frozen tables, the default), client 0 computes its FedSGD reply for rounds
``1..trials`` on the global model ``W_0`` (exactly what it would send); the attacker gets each message and the
sent model, the auditor scores the sentences against the replayed batch. ``dropout="off"`` sets the client
encoder's dropout to 0 for the measurement (the setting exact inversion assumes); ``"on"`` keeps BERT's 0.1, as
privnlu's client trains. ``noise = z`` clips the message to ``C = 1`` and noises it as ``--local-clip 1
--local-noise z`` would. With client DP-SGD (``cfg.client_dp_epsilon``) the message is the client's DP-SGD
gradient (Poisson sample, per-example clipping, calibrated noise) and the true batch is the round's Poisson sample;
``client_dp_noise`` replaces the calibrated multiplier (``0``: sampling and clipping only, a diagnostic without a
guarantee). Means are over the messages whose sample is not empty (``empty`` counts the others).
"""

from __future__ import annotations

import time

import numpy as np
import torch

from ....rng import SecretGenerator
from .attack import SpanInversionAttack, attacker_encoder, special_ids
from .metrics import score_batch
from ...threat import SPAN_INVERSION_THREAT, AttackerView


def _dropouts(encoder) -> list[torch.nn.Dropout]:
    return [m for m in encoder.modules() if isinstance(m, torch.nn.Dropout)]


def _dp_reply(cfg, rnd: int, arrays, noise_multiplier: float) -> dict:
    """Client 0's client DP-SGD reply for round ``rnd`` as :func:`~privnlu.federated.client.client_update` makes
    it, with the noise multiplier replaced (a diagnostic)."""
    from dataclasses import replace

    from flwr.app import RecordDict

    from ....federated.client import TextHideClient, client_rng
    from ....federated.client_dp import ClientDPRound
    from ....federated.model import tensors_to_record

    client = TextHideClient(cfg, 0, RecordDict(), rnd)
    client.model.load_arrays(arrays)
    dp = ClientDPRound(client, cfg, client_rng(cfg, 0, "client-dp", rnd).words(2))
    dp.plan = replace(dp.plan, noise_multiplier=float(noise_multiplier))
    grads, _, b = dp.gradient()
    return {"gradients": tensors_to_record(grads), "metrics": {"num-examples": b}}


def measure(cfg, *, trials: int, dropout: str = "off", noise: float = 0.0, max_seconds: float = 120.0,
            seed: int = 0, examples: int = 1, client_dp_noise: float | None = None) -> dict:
    """Attack ``trials`` messages of client 0 under ``cfg``; returns the means and one row per message."""
    from flwr.app import RecordDict

    from ....federated.client import _encoder, client_update, replay_batch
    from ....federated.local_noise import add_local_noise
    from ....federated.model import build_model

    client_enc = _encoder(cfg)
    arrays = build_model(cfg, client_enc, init_seed=cfg.experiment_seed).to_arrays()
    sent = {n: a.numpy() for n, a in arrays.items()}
    view = AttackerView(SPAN_INVERSION_THREAT, encoder=attacker_encoder(sent, cfg.model or None))
    attack = SpanInversionAttack(max_seconds=max_seconds, seed=seed)
    special = special_ids(view.encoder.tokenizer)
    drops = _dropouts(client_enc)
    saved = [m.p for m in drops]
    rows = []
    try:
        if dropout == "off":
            for m in drops:
                m.p = 0.0
        for rnd in range(1, trials + 1):
            t0 = time.time()
            if client_dp_noise is None or not cfg.client_dp_epsilon:
                reply = client_update(cfg, 0, RecordDict(), rnd, arrays)  # exactly what client 0 sends in round rnd
            else:
                reply = _dp_reply(cfg, rnd, arrays, client_dp_noise)
            grads = {n: torch.from_numpy(np.array(a.numpy(), copy=True)) for n, a in reply["gradients"].items()}
            if noise:
                grads = add_local_noise(grads, clip=1.0, multiplier=noise, rng=SecretGenerator(seed + rnd, warn=False))
            b = int(reply["metrics"]["num-examples"])
            out = attack.run({n: g.numpy() for n, g in grads.items()}, view, batch_size=b)
            texts, true = replay_batch(cfg, 0, rnd)  # AUDITOR from here on
            row = {"round": rnd, "tokens": sum(len(s) for s in true), "distinct_pairs": len({(t, p) for s in true
                                                                                          for p, t in enumerate(s)}),
                   "rank1": out.get("rank1"), "rank2": out.get("rank2"), "saturated": out.get("saturated"),
                   "recovered": len(out.get("sentence_ids", [])), "certified": sum(out.get("certified", [])),
                   "complete": out.get("complete", True), **score_batch(out.get("sentence_ids", []), true, special),
                   "seconds": round(time.time() - t0, 1)}
            if len(rows) < examples:
                row["examples"] = {"true": texts[:2], "recovered": out.get("sentences", [])[:2]}
            rows.append(row)
    finally:
        for m, p in zip(drops, saved):
            m.p = p
    scored = [r for r in rows if r["sentences"]]
    mean = lambda k: float(np.mean([r[k] for r in scored])) if scored else float("nan")  # noqa: E731
    out = {"batch_size": cfg.batch_size, "scheme": cfg.scheme, "m": cfg.m, "k": cfg.k, "dropout": dropout,
           "noise": noise, "trials": trials, "dim": view.encoder.dim, "rouge1": mean("rouge1"),
           "rouge2": mean("rouge2"), "exact": mean("exact"), "tokens": mean("tokens"), "seconds": mean("seconds"),
           "saturated": sum(bool(r["saturated"]) for r in rows), "rows": rows}
    if cfg.client_dp_epsilon:
        out.update(client_dp_epsilon=cfg.client_dp_epsilon, client_dp_noise=client_dp_noise,
                   empty=len(rows) - len(scored))
    return out
