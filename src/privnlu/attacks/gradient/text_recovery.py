"""Sentences from a federated joint-mode gradient: token set, ordering, linking (TAG / LAMP spirit, simplified).

Step 1 and 2 are :mod:`.embedding_leak` (the token set from the word table's non-zero rows; the tokens at
each position by matching the word table's rows to the position table's). Step 3, for batches of more than
one sentence, links the per-position tokens into sentences by *gradient matching on the input embeddings*:
a local search over the candidate batch (which slot token goes to which sentence, and each sentence's
label), each candidate scored by

    D(x', y') = (||dL/dE_word[S](x', y') - G_word[S]||^2 + ||dL/dE_pos[:L](x', y') - G_pos[:L]||^2)
                / (||G_word[S]||^2 + ||G_pos[:L]||^2)

computed with the global model ``W_t`` the server sent (the attacker's own copy, eval mode: the client's
dropout masks are unknown to it), restricted to the recovered tokens ``S`` and the ``L`` used positions.
This is our simplification, not TAG's or LAMP's algorithm: no continuous relaxation, no language-model
prior, a swap-and-relabel hill climb with a fixed budget. Under TextHide the client's loss uses secret
masks and mixing coefficients, so the attacker's loss is only a surrogate (the unmasked loss).

:func:`measure` runs the whole pipeline on client gradients produced by the federated client code (exactly
the message a client sends) and scores them against the true batches (the auditor's side).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np
import torch

from ...rng import SecretGenerator
from ...federated.local_noise import add_local_noise
from .embedding_leak import (POSITION_TABLE, SPAN_THRESHOLD, WORD_TABLE, find_table, order_tokens, read_token_set,
                             score_sentences, score_tokens, span_token_test)


def initial_batch(slots: list[list[int]], batch_size: int, token_ids: list[int]) -> list[list[int]]:
    """Sentences from per-position slots: sentence ``b`` is alive at position ``p`` while ``b`` < the (non-increasing)
    number of slot tokens there; holes (a repeated token the slot fit missed) take an unplaced recovered token."""
    alive = [min(batch_size, max((len(s) for s in slots[p:]), default=0)) for p in range(len(slots))]
    placed = {v for s in slots for v in s}
    spare = [v for v in token_ids if v not in placed] or list(token_ids)
    batch: list[list[int]] = [[] for _ in range(batch_size)]
    k = 0
    for p, n in enumerate(alive):
        here = list(slots[p][:n])
        while len(here) < n:
            here.append(spare[k % len(spare)])
            k += 1
        for b in range(n):
            batch[b].append(here[b])
    return [s for s in batch if s] or [[]]


class GradientScorer:
    """``D(x', y')`` against one observed message, with the attacker's copy of the global model."""

    def __init__(self, model, grads: Mapping[str, np.ndarray | torch.Tensor], token_ids: list[int], length: int) -> None:
        self.model = model
        self.enc = model.encoder
        self.S = torch.tensor(token_ids)
        self.L = length
        self.obs_w = find_table(grads, WORD_TABLE)[self.S].float()
        self.obs_p = find_table(grads, POSITION_TABLE)[:length].float()
        self.norm = float((self.obs_w ** 2).sum() + (self.obs_p ** 2).sum())
        emb = self.enc.model.embeddings
        self.tables = [emb.word_embeddings.weight, emb.position_embeddings.weight]
        for t in self.tables:
            t.requires_grad_(True)

    def __call__(self, batch: list[list[int]], labels: list[int], *, regression: bool = False) -> float:
        from ...training import task_loss

        width = max(len(s) for s in batch)
        ids = torch.zeros(len(batch), width, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, s in enumerate(batch):
            ids[i, :len(s)] = torch.tensor(s)
            mask[i, :len(s)] = 1
        self.enc.eval()
        self.model.head.eval()
        out = self.model.head(self.enc(ids, mask, torch.zeros_like(ids)))
        n_out = out.shape[1]
        y = torch.nn.functional.one_hot(torch.tensor(labels), n_out).float()
        gw, gp = torch.autograd.grad(task_loss(out, y, regression=regression), self.tables)
        pw = torch.zeros(self.L, gp.shape[1])
        pw[:min(self.L, width)] = gp[:min(self.L, width)]
        return float(((gw[self.S] - self.obs_w) ** 2).sum() + ((pw - self.obs_p) ** 2).sum()) / self.norm


def link_sentences(scorer: GradientScorer, batch: list[list[int]], *, num_labels: int, budget: int,
                   rng: SecretGenerator) -> tuple[list[list[int]], list[int], float]:
    """Hill climb on ``D``: swap two sentences' tokens at one position, or change one sentence's label."""
    batch = [list(s) for s in batch]
    labels = [0] * len(batch)
    best = scorer(batch, labels)
    for _ in range(budget):
        cand = [list(s) for s in batch]
        cand_labels = list(labels)
        if num_labels > 1 and int(rng.randint(4, 1)) == 0:
            b = int(rng.randint(len(batch), 1))
            cand_labels[b] = (cand_labels[b] + 1 + int(rng.randint(num_labels - 1, 1))) % num_labels
        else:
            p = int(rng.randint(max(len(s) for s in batch), 1))
            alive = [b for b, s in enumerate(cand) if len(s) > p]
            if len(alive) < 2:
                continue
            i, j = (alive[int(k)] for k in rng.choice(len(alive), 2))
            cand[i][p], cand[j][p] = cand[j][p], cand[i][p]
        d = scorer(cand, cand_labels)
        if d < best:
            best, batch, labels = d, cand, cand_labels
    return batch, labels, best


def measure(cfg, *, trials: int, budget: int, seed: int = 0, examples: int = 2, span_trials: int = 0,
            noise: tuple[float, ...] = ()) -> dict:
    """Attack ``trials`` client messages of the (seeded, joint, ``train_embeddings``) config ``cfg``: one client
    gradient per round ``1..trials`` from client 0, with the global model ``W_0``; the attacker gets the message and
    the model, the auditor scores with the replayed batch. On the first ``span_trials`` messages also the
    first-layer span test (which needs no embedding gradient, so it applies to the frozen default too), and for each
    local-noise multiplier ``z`` in ``noise`` the token-set read-off and span test on the message clipped to
    ``C = 1`` and noised as ``--local-clip 1 --local-noise z`` would."""
    from flwr.app import RecordDict

    from ...federated.client import _encoder, client_update, replay_batch
    from ...federated.model import build_model
    from ...models import load_encoder
    from .embedding_leak import mean_or_nan

    arrays = build_model(cfg, _encoder(cfg), init_seed=cfg.experiment_seed).to_arrays()
    attacker_model = build_model(cfg, load_encoder(cfg.model or None, pooling=cfg.pooling))  # public architecture
    attacker_model.load_arrays(arrays)  # W_t, as sent by the server
    rows = []
    rng = SecretGenerator(seed, warn=False)
    tok = attacker_model.encoder.tokenizer
    for rnd in range(1, trials + 1):
        t0 = time.time()
        reply = client_update(cfg, 0, RecordDict(), rnd, arrays)  # exactly what client 0 sends in round rnd
        grads = {n: a.numpy() for n, a in reply["gradients"].items()}
        b = int(reply["metrics"]["num-examples"])
        leak = read_token_set(grads)
        order = order_tokens(grads, leak, b)
        if b == 1:
            recovered, d = order, float("nan")
        else:
            scorer = GradientScorer(attacker_model, grads, leak.token_ids, leak.length or 0)
            start = initial_batch(order, b, leak.token_ids)
            recovered, _, d = link_sentences(scorer, start, num_labels=len(attacker_model.task.label_names),
                                             budget=budget, rng=rng)
        span = {}
        if rnd <= span_trials:
            span = {"span": span_attack(grads, attacker_model, arrays)}
            for z in noise:
                noisy = add_local_noise({n: torch.as_tensor(a) for n, a in grads.items()}, clip=1.0, multiplier=z,
                                        rng=SecretGenerator(seed + rnd, warn=False))
                noisy = {n: t.numpy() for n, t in noisy.items()}
                span[f"noise_{z:g}"] = {"read_off": read_token_set(noisy).token_ids,
                                        "span": span_attack(noisy, attacker_model, arrays)}
        texts, true = replay_batch(cfg, 0, rnd)  # AUDITOR from here on
        true_set = {i for r in true for i in r}
        row = {"round": rnd, **score_tokens(leak.token_ids, true_set),
               **score_sentences(recovered, true), "grad_distance": d, "seconds": round(time.time() - t0, 1)}
        if span:
            row["span"] = score_span(span.pop("span"), true_set)
            for key, v in span.items():
                row[key] = {"read_off": score_tokens(v["read_off"], true_set), "span": score_span(v["span"], true_set)}
        if len(rows) < examples:
            row["examples"] = [{"true": texts[i], "recovered": tok.decode(best_match(recovered, true[i]),
                                                                         skip_special_tokens=True)}
                               for i in range(min(len(true), 2))]
        rows.append(row)
    keys = ("precision", "recall", "exact_sentences", "token_accuracy")
    out = {"batch_size": cfg.batch_size, "scheme": cfg.scheme, "m": cfg.m, "k": cfg.k, "trials": trials,
           "budget": budget, **{k: mean_or_nan([r[k] for r in rows]) for k in keys}, "rows": rows}
    spans = [r["span"] for r in rows if "span" in r]
    if spans:
        out["span"] = {k: mean_or_nan([s[k] for s in spans]) for k in spans[0]}
        for z in noise:
            key = f"noise_{z:g}"
            out[key] = {part: {k: mean_or_nan([r[key][part][k] for r in rows if key in r]) for k in rows[0][key][part]}
                        for part in ("read_off", "span")}
    return out


def span_attack(grads, model, arrays) -> tuple[list[int], list[float], int]:
    """The attacker's span test on one message: LayerNorm from the model the server sent, tables public."""
    ln = tuple(torch.from_numpy(np.array(arrays[f"encoder.model.embeddings.LayerNorm.{k}"].numpy(), copy=True))
               for k in ("weight", "bias"))
    ids, res, rank = span_token_test(grads, model.encoder, ln)  # type: ignore[arg-type]
    return ids, res.tolist(), rank


def score_span(result: tuple[list[int], list[float], int], true: set[int]) -> dict:
    """AUDITOR: the span test's tokens below :data:`SPAN_THRESHOLD` (precision/recall), and the precision of its
    |true| best-ranked tokens (an oracle-count figure: the attacker does not know |true|)."""
    ids, res, rank = result
    sel = [i for i, r in zip(ids, res) if r < SPAN_THRESHOLD]
    sc = score_tokens(sel, true)
    top = set(ids[:len(true)])
    return {"precision": sc["precision"], "recall": sc["recall"], "selected": len(sel),
            "precision_at_true_count": len(top & true) / max(len(true), 1), "rank": rank}


def best_match(recovered: list[list[int]], true: list[int]) -> list[int]:
    """The recovered sentence sharing the most positions with ``true`` (for printing examples)."""
    return max(recovered, key=lambda r: sum(a == b for a, b in zip(r, true)), default=[])
