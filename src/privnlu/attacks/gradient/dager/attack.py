"""The DAGER-class attack on one captured client message, and on every message of a wire capture.

The attacker holds the message (its arrays and declared ``num-examples``), the model the server sent that round,
and the public encoder (architecture, tokenizer, embedding tables): :data:`~privnlu.attacks.threat.SPAN_INVERSION_THREAT`.
Ground truth (the replayed batch of a seeded in-process run) is used only by :func:`audit_capture_spans`'s scoring.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np
import torch

from ....errors import PrivnluError
from .span import gradient_span, layer_gradient, token_candidates
from .search import recover_sentences
from ...threat import Attack, AttackerView, Grant, SPAN_INVERSION_THREAT

ENCODER_PREFIX = "encoder."


def attacker_encoder(sent: Mapping[str, np.ndarray | torch.Tensor], model: str | None = None):
    """The attacker's copy of the client's encoder: the public model (tables, tokenizer) with every encoder
    weight the server sent loaded over it."""
    from ....models import load_encoder

    enc = load_encoder(model or None)
    own = dict(enc.named_parameters())
    got = {n[len(ENCODER_PREFIX):]: torch.as_tensor(np.array(a, copy=True)) for n, a in sent.items()
           if n.startswith(ENCODER_PREFIX)}
    if not got:
        raise PrivnluError("the span attack needs the encoder the server sent: this capture's model has no encoder "
                           "weights (frozen mode sends none, and its messages carry no encoder gradient)")
    unknown = sorted(set(got) - set(own))
    if unknown:
        raise PrivnluError(f"the sent model does not match --model's architecture (e.g. '{unknown[0]}')")
    with torch.no_grad():
        for n, t in got.items():
            if own[n].shape != t.shape:
                raise PrivnluError(f"the sent model does not match --model's architecture ('{n}' has shape "
                                   f"{tuple(t.shape)}, not {tuple(own[n].shape)})")
            own[n].copy_(t.to(own[n].dtype))
    return enc.eval()


class SpanInversionAttack(Attack):
    """Per-layer span tests, then the sentence search (:mod:`.span`, :mod:`.search`)."""

    name = "span inversion (DAGER-class)"
    requires = frozenset({Grant.ENCODER})

    def __init__(self, *, max_positions: int = 128, max_seconds: float = 120.0, seed: int = 0,
                 noise_floor: bool = False) -> None:
        """``noise_floor``: the message carries dense noise (a SecAgg+ aggregate's quantization error): each span's
        rank is read above the noise bulk of its spectrum (:func:`~.span.rank_above_noise`)."""
        self.max_positions, self.max_seconds, self.seed = max_positions, max_seconds, seed
        self.noise_floor = noise_floor

    def run(self, grads: Mapping[str, np.ndarray | torch.Tensor], view: AttackerView, batch_size: int) -> dict:
        """``grads``: one message's gradient arrays; ``view.encoder``: :func:`attacker_encoder`'s copy."""
        self.check(view)
        enc = view.need("encoder")
        t0 = time.time()
        cands = token_candidates(grads, enc, max_positions=self.max_positions, noise_floor=self.noise_floor)
        g2 = layer_gradient(grads, 1)
        if cands is None or g2 is None:
            return {"applicable": False, "reason": "no first- and second-layer attention gradients in the message"}
        span2 = gradient_span(g2, noise_floor=self.noise_floor)
        out: dict = {"applicable": True, "noise_floor": self.noise_floor, "rank1": cands.span.rank, "rank2": span2.rank, "dim": cands.span.dim,
                     "saturated": cands.span.saturated or span2.saturated, "threshold1": cands.threshold,
                     "candidates": [len(c) for c in cands.ids[:cands.length]], "sentence_ids": [], "sentences": [],
                     "certified": []}
        if not out["saturated"] and cands.length:
            rec = recover_sentences(cands, span2, enc, batch_size=max(int(batch_size), 1), seed=self.seed,
                                    max_seconds=self.max_seconds)
            tok = enc.tokenizer
            out.update({"sentence_ids": [f.ids for f in rec.sentences],
                        "sentences": [tok.decode(f.ids, skip_special_tokens=True) for f in rec.sentences],
                        "certified": [f.certified for f in rec.sentences], "complete": rec.complete,
                        "searches": {str(L): v for L, v in rec.searches.items()}})
        out["seconds"] = round(time.time() - t0, 2)
        return out


def special_ids(tokenizer) -> set[int]:
    return {i for i in (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id) if i is not None}


def audit_capture_spans(capture, *, model: str | None = None, truth_cfg=None, rounds: set[int] | None = None,
                        node: int | None = None, max_seconds: float = 120.0, log=lambda s: None) -> list[dict]:
    """Run :class:`SpanInversionAttack` on every plain gradient of a capture: each client's message, or under SecAgg+
    the decoded aggregate (node 0; the attacker targets the union of the summed clients' sentences). The model the
    server sent in that round is the attacker's copy; with ``truth_cfg`` (a seeded in-process run) the auditor
    scores each entry's sentences against the replayed batch (an aggregate: the union of ``configs.secagg.nodes``'
    batches)."""
    from .metrics import score_batch
    from ..embedding_leak import entry_truth

    attacks = {nf: SpanInversionAttack(max_seconds=max_seconds, noise_floor=nf) for nf in (False, True)}
    encoders: dict[int, object] = {}
    rows = []
    for e in capture.received:
        if e.get("type") != "train" or "error" in e or "gradients" not in e.get("arrays", {}):
            continue
        rnd = e["round"]
        if (rounds and rnd not in rounds) or (node is not None and e["node_id"] != node):
            continue
        if rnd not in encoders:
            sent = [s for s in capture.sent if s["round"] == rnd and "arrays" in s]
            if not sent:
                raise PrivnluError(f"the capture holds no model sent in round {rnd}")
            encoders[rnd] = attacker_encoder(next(iter(sent[0]["arrays"].values())), model)
        view = AttackerView(SPAN_INVERSION_THREAT, encoder=encoders[rnd])
        b = int(e.get("metrics", {}).get("metrics", {}).get("num-examples", 0)) or 1
        agg = e.get("configs", {}).get("secagg")  # a SecAgg+ aggregate carries its quantization noise
        out = attacks[bool(agg)].run(e["arrays"]["gradients"], view, batch_size=b)
        row = {"round": rnd, "node_id": e["node_id"], "batch_size": b, **out}
        if agg:  # a SecAgg+ aggregate: its sentences are the union of the listed clients' batches
            row["aggregate_of"] = [int(n) for n in agg.get("nodes", [])]
        if truth_cfg is not None and out.get("applicable"):
            texts, ids = entry_truth(truth_cfg, e)
            row["true_sentences"] = texts
            row["score"] = score_batch(out["sentence_ids"], ids, special_ids(encoders[rnd].tokenizer))
        log(span_line(row))
        rows.append(row)
    return rows


def span_line(row: dict) -> str:
    """One line per attacked message."""
    who = (f"aggregate of {len(row['aggregate_of'])} clients" if row.get("aggregate_of") else f"node {row['node_id']}")
    head = f"round {row['round']} {who}: "
    if not row.get("applicable"):
        return head + f"span attack not applicable ({row.get('reason', '')})"
    if row["saturated"]:
        return head + (f"span saturated (rank {row['rank1']} of d = {row['dim']}): more token slots than the hidden "
                       "size, nothing recovered")
    sc = row.get("score")
    score = (f"; ROUGE-1 {sc['rouge1']:.2f}, ROUGE-2 {sc['rouge2']:.2f}, exact {sc['exact']:.2f}" if sc else "")
    first = row["sentences"][0] if row["sentences"] else ""
    return (head + f"{len(row['sentences'])} of {row['batch_size']} sentences recovered "
            f"({sum(row['certified'])} certified; ranks {row['rank1']}/{row['rank2']} of {row['dim']}){score}: "
            f"\"{first[:80]}\"")
