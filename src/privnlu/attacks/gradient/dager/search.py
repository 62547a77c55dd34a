"""Layer 2 of the DAGER-class attack: whole sentences from the per-position token candidates.

For an encoder (bidirectional attention) the layer-2 input of token ``p`` depends on the whole sentence, so a
decoder's prefix search does not apply. This module searches full candidate sentences instead, scoring each by
the relative residuals of its layer-2 inputs (the public first layer, with the weights the server sent, run on
the candidate) against the second attention layer's gradient span:

1. **Lengths.** A sentence of length ``L`` ends with ``[SEP]`` at position ``L - 1``, so the positions where
   ``[SEP]`` passed layer 1 are the lengths to try. With several sentences the layer-1 span also holds
   recombinations (token ``v`` of one sentence at a position another fills: see :func:`.span.token_candidates`),
   so some of these lengths are spurious; layer 2 rejects them.
2. **Sentences of one length.** When the candidate sets' product is at most ``enumerate_limit`` every
   combination is scored (exact). Otherwise coordinate descent: from a start sentence, each position in turn
   takes the candidate that minimises the sentence's summed squared residual, until a sweep changes nothing.
   Starts: the best of a left-to-right beam (each prefix closed with ``[SEP]`` and scored on its own positions),
   then systematic ones (the ``r``-th candidate at every position). This part is a heuristic: it can stop in a
   local minimum, and it is what fails first as batches grow.
3. **Acceptance.** A sentence is *certified* when every one of its layer-2 inputs lies in the span (largest
   relative residual below :data:`CERTIFY`): exact up to float error, whatever the search that proposed it.
   Certified sentences are kept; if fewer than ``b`` (the reply's ``num-examples``) are certified, the
   best-scoring uncertified ones fill the batch (they are reported as such).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .span import Span, TokenCandidates

#: largest residual of a certified sentence's layer-2 inputs (exact float32 arithmetic gives ~1e-6)
CERTIFY = 1e-3
#: descent starts taken from the left-to-right beam (:func:`beam_starts`) before the systematic ones
BEAM_STARTS = 2


class FirstLayer:
    """The attacker's public first layer: token ids ``(n, L)`` (one length, no padding) -> layer-2 inputs."""

    def __init__(self, encoder) -> None:
        self.model = encoder.model
        self.model.eval()

    @torch.no_grad()
    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.model.embeddings(input_ids=ids)
        out = self.model.encoder.layer[0](h)
        return out[0] if isinstance(out, tuple) else out


def candidate_lengths(cands: TokenCandidates, sep_id: int) -> list[int]:
    """Sentence lengths to try: ``p + 1`` wherever ``[SEP]`` passed layer 1 at position ``p``, longest first (the
    longest is certainly one: no candidate passes beyond it)."""
    return sorted((p + 1 for p, ids in enumerate(cands.ids) if sep_id in ids), reverse=True)


@dataclass
class Found:
    """One recovered sentence: its token ids, summed squared residual and largest residual at layer 2."""

    ids: list[int]
    score: float
    worst: float

    @property
    def certified(self) -> bool:
        return self.worst < CERTIFY


@dataclass
class LengthSearch:
    """Sentences of one length ``L`` from the candidates at positions ``0..L-1``."""

    layer: FirstLayer
    span: Span
    options: list[list[int]]
    rng: np.random.Generator
    chunk: int = 512
    evaluated: int = field(default=0, init=False)

    def score(self, batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        res = torch.cat([self.span.residual(self.layer(batch[i:i + self.chunk]))
                         for i in range(0, len(batch), self.chunk)])
        self.evaluated += len(batch)
        return (res ** 2).sum(1), res.max(1).values

    def enumerate_all(self) -> list[Found]:
        combos = torch.tensor(list(itertools.product(*self.options)), dtype=torch.long)
        score, worst = self.score(combos)
        return [Found(c, float(s), float(w)) for c, s, w in zip(combos.tolist(), score.tolist(), worst.tolist())]

    def descend(self, start: list[int], *, sweeps: int = 6) -> Found:
        x = list(start)
        free = [p for p, o in enumerate(self.options) if len(o) > 1]
        score = worst = float("inf")
        for _ in range(sweeps):
            changed = False
            for p in free:
                batch = torch.tensor([x[:p] + [v] + x[p + 1:] for v in self.options[p]], dtype=torch.long)
                s, w = self.score(batch)
                j = int(s.argmin())
                score, worst = float(s[j]), float(w[j])
                if self.options[p][j] != x[p]:
                    x[p], changed = self.options[p][j], True
            if not changed:
                break
        if not free:
            s, w = self.score(torch.tensor([x], dtype=torch.long))
            score, worst = float(s[0]), float(w[0])
        return Found(x, score, worst)

    def starts(self, n: int) -> list[list[int]]:
        width = max(len(o) for o in self.options)
        out = [[o[r % len(o)] for o in self.options] for r in range(min(width, n))]
        while len(out) < n:
            out.append([o[int(self.rng.integers(len(o)))] for o in self.options])
        return out


def search_length(layer: FirstLayer, span: Span, options: list[list[int]], *, seed: int = 0,
                  enumerate_limit: int = 4096, starts: int = 3) -> tuple[list[Found], dict]:
    """Distinct sentences whose position ``p`` token is in ``options[p]``, best first: every combination when
    there are at most ``enumerate_limit``, else the local minima of coordinate descent from ``starts`` starts."""
    search = LengthSearch(layer, span, options, np.random.default_rng(seed))
    combos = float(np.prod([float(len(o)) for o in options])) if options else 0.0
    if combos == 0:
        return [], {"combinations": 0, "evaluated": 0, "mode": "none"}
    if combos <= enumerate_limit:
        found, mode = search.enumerate_all(), "enumerate"
    else:
        found, mode = [], "descent"
        seen: set[tuple[int, ...]] = set()
        for start in beam_starts(layer, span, options)[:BEAM_STARTS] + search.starts(starts):
            f = search.descend(start)
            if tuple(f.ids) not in seen:
                seen.add(tuple(f.ids))
                found.append(f)
    found.sort(key=lambda f: f.score)
    return found, {"combinations": combos, "evaluated": search.evaluated, "mode": mode}


@dataclass
class SentenceRecovery:
    """What layer 2 recovered from one message."""

    sentences: list[Found]
    lengths: list[int]
    searches: dict[int, dict]
    seconds: float
    complete: bool  # every candidate length was searched within the time budget


def recover_sentences(cands: TokenCandidates, span2: Span, encoder, *, batch_size: int, seed: int = 0,
                      enumerate_limit: int = 4096, starts: int = 3, max_seconds: float = 120.0) -> SentenceRecovery:
    """Layer 2: the batch's sentences from layer 1's candidates (``encoder``: the attacker's copy with the sent
    weights; ``batch_size``: the reply's ``num-examples``).

    Every candidate length is searched: those whose combinations can all be scored first, then the others,
    shortest first. Certified sentences (all layer-2 inputs in the span) are
    kept; a length whose candidates admit one sentence only keeps it even uncertified (the client's dropout
    moves the true sentence off the span); the search stops at ``batch_size`` sentences, when the sentences
    found hold as many tokens as the layer-2 span's rank, or after ``max_seconds``. If fewer than
    ``batch_size`` sentences are certified, the best-scoring uncertified ones fill the batch."""
    t0 = time.time()
    tok = encoder.tokenizer
    lengths = candidate_lengths(cands, tok.sep_token_id)
    layer = FirstLayer(encoder)
    kept: list[Found] = []
    spare: list[Found] = []
    searches: dict[int, dict] = {}
    complete = True
    def size(L: int) -> float:
        return float(np.prod([float(len(cands.ids[p])) for p in range(L - 1)]))

    # the exact (enumerable) lengths first, longest first; then the searched ones, shortest (cheapest) first
    for L in sorted(lengths, key=lambda L: (size(L) > enumerate_limit, -L if size(L) <= enumerate_limit else L)):
        if len(kept) >= batch_size or sum(len(f.ids) for f in kept) >= span2.rank:
            break
        if time.time() - t0 > max_seconds:
            complete = False
            break
        options = [list(cands.ids[p]) for p in range(L)]
        options[-1] = [tok.sep_token_id]
        if any(not o for o in options):
            continue
        got, info = search_length(layer, span2, options, seed=seed + L, enumerate_limit=enumerate_limit,
                                  starts=starts)
        searches[L] = info
        sure = [f for f in got if f.certified] or (got[:1] if info["combinations"] == 1 else [])
        kept += [f for f in sure if f.ids not in [k.ids for k in kept]]
        spare += [f for f in got if f not in sure][:1]
    if len(kept) < batch_size:
        spare.sort(key=lambda f: f.worst)
        kept += spare[: batch_size - len(kept)]
    return SentenceRecovery(kept[:batch_size], lengths, searches, time.time() - t0, complete)


def beam_starts(layer: FirstLayer, span: Span, options: list[list[int]], *, width: int = 8,
                chunk: int = 512) -> list[list[int]]:
    """Start sentences for the descent, grown left to right: each prefix ``x[:p+1]`` is closed with the final
    token (``[SEP]``) and scored by its layer-2 residuals at positions ``0..p`` (the missing suffix perturbs
    them, a wrong token more); the ``width`` best prefixes survive each step."""
    beams = [[v] for v in options[0]]
    last = options[-1][0]
    for p in range(1, len(options) - 1):
        cands = [b + [v] for b in beams for v in options[p]]
        batch = torch.tensor([c + [last] for c in cands], dtype=torch.long)
        scores = []
        for i in range(0, len(batch), chunk):
            res = span.residual(layer(batch[i:i + chunk]))[:, :p + 1]
            scores.append((res ** 2).sum(1))
        order = torch.cat(scores).argsort()[:width].tolist()
        beams = [cands[i] for i in order]
    return [b + [last] for b in beams]
