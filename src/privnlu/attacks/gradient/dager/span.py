"""A DAGER-class attack (Petrov et al. 2024): exact sentences from one client message, layer by layer.

The gradient of a linear layer ``y = W x`` over a batch is ``dL/dW = sum_t delta_t x_t^T``: its row space is
spanned by the layer's inputs ``x_t``, one per token slot, so with fewer token slots than the hidden size ``d``
it is a proper subspace, and a vector ``v`` is (up to float error and the client's dropout) an input of that
layer exactly when its distance to the span is ~0.

* **Layer 1** (:func:`token_candidates`): the first attention layer's Q/K/V weight gradients span the inputs
  ``z = LN(E[v] + P[p] + T[0])``, built from the public tables and the embedding LayerNorm the server sent. Every
  vocabulary token is tested at every position; the residuals are computed in closed form (LayerNorm is affine in
  ``E[v] + P[p]`` once divided by the vector's own standard deviation), so the whole vocabulary at 128 positions
  costs a few matrix products. What passes gives per-position candidate sets.
* **Layer 2** (:mod:`.search`): a candidate sentence is run through the public first layer (the sent
  weights); it is a sentence of the batch when every one of its layer-2 inputs lies in the second attention
  layer's gradient span.

Rank and thresholds are read off the message (**rank-aware**): the span's rank is at the largest drop between
consecutive singular values that lands below :data:`FLOOR` of the largest (at least :data:`MIN_GAP`; no such drop
means the span fills the space, ``rank = d``, *saturated*, and the attack cannot work), and the layer-1 cut is the
largest step among the sorted residuals. The attacker is never told the token count. With several sentences the
span also holds recombined (token, position) pairs (see :func:`token_candidates`), so layer 1 gives the token set
exactly but inflated per-position candidate sets; layer 2 decides.

Threat model :data:`~privnlu.attacks.threat.SPAN_INVERSION_THREAT`: one captured message, the model the server
sent with it, and the public architecture, tokenizer and embedding tables; no key, no client data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

#: the Q/K/V weights of attention layer ``i`` (wire names end in these)
QKV = ("attention.self.query.weight", "attention.self.key.weight", "attention.self.value.weight")
#: the smallest singular-value drop read as the end of the span (float32 gradients: real gaps are >> 100)
MIN_GAP = 100.0
#: singular values below this fraction of the largest may be float32 noise; the span ends with a drop into them
FLOOR = 1e-4
#: the largest relative residual a member may have (a cut above it is refused: nothing passes)
MAX_RESIDUAL = 0.6
#: how many passing (token, position) pairs per unit of rank layer 1 may return (recombinations included)
CLOSURE_FACTOR = 64


@dataclass
class Span:
    """An orthonormal basis (rows) of a gradient's row space, its rank and whether it fills the space."""

    basis: torch.Tensor  # (rank, d), float64
    rank: int
    dim: int
    singular_values: list[float] = field(default_factory=list)

    @property
    def saturated(self) -> bool:
        return self.rank >= self.dim

    def residual(self, x: torch.Tensor) -> torch.Tensor:
        """Relative distance of each row of ``x`` to the span (0: inside; ~1: orthogonal)."""
        x = x.double()
        proj = (x @ self.basis.T) @ self.basis
        return (x - proj).norm(dim=-1) / x.norm(dim=-1).clamp_min(1e-30)


def layer_gradient(grads: Mapping[str, np.ndarray | torch.Tensor], layer: int) -> torch.Tensor | None:
    """Attention layer ``layer``'s Q, K and V weight gradients, each scaled to unit spectral norm, stacked
    ``(3 d_out, d_in)`` (their row spaces add up to the inputs' span), or None if absent."""
    mats = []
    for suffix in QKV:
        names = [n for n in grads if n.endswith(f"layer.{layer}.{suffix}")]
        if not names:
            return None
        m = torch.as_tensor(np.asarray(grads[names[0]])).double()
        top = torch.linalg.matrix_norm(m, ord=2)
        mats.append(m / top if top > 0 else m)  # each block at unit scale: V's gradient can dwarf Q's and K's
    return torch.cat(mats)


def rank_by_gap(s: torch.Tensor, *, min_gap: float = MIN_GAP, floor: float = FLOOR) -> int:
    """The rank at the largest drop between consecutive singular values that lands below ``floor`` times the
    largest (the numerical floor of a float32 gradient; a batch's tokens with small backpropagated errors give
    small but genuine singular values above it); full rank when no such drop reaches ``min_gap`` (a span that
    fills the space)."""
    s = s.double()
    if s.numel() < 2 or float(s[0]) <= 0:
        return int(s.numel() > 0 and float(s[0]) > 0)
    ratio = s[:-1] / s[1:].clamp_min(float(s[0]) * 1e-300)
    ratio[s[1:] > floor * s[0]] = 0.0  # a drop that stays above the floor is the spectrum's shape, not its end
    if float(ratio.max()) < min_gap:
        return int(s.numel())
    return int(ratio.argmax()) + 1


#: with a noise floor, the span ends where the singular values fall below this multiple of their median
NOISE_FACTOR = 2.5


def rank_above_noise(s: torch.Tensor, *, factor: float = NOISE_FACTOR) -> int:
    """The rank of a gradient carrying dense additive noise (SecAgg+'s quantization error): the singular values
    above ``factor`` times their median, which lies in the noise bulk while the signal's rank stays below half the
    dimension (a noise matrix's largest singular value is within twice its median for these shapes)."""
    s = s.double()
    if s.numel() == 0 or float(s[0]) <= 0:
        return 0
    return int((s > factor * s.median()).sum())


def gradient_span(g: torch.Tensor, *, min_gap: float = MIN_GAP, noise_floor: bool = False) -> Span:
    """The row space of ``g`` (rows: output units; columns: the layer's input coordinates); ``noise_floor``: read
    the rank above the spectrum's noise bulk (:func:`rank_above_noise`) instead of at its largest drop."""
    _, s, vh = torch.linalg.svd(g.double(), full_matrices=False)
    rank = rank_above_noise(s) if noise_floor else rank_by_gap(s, min_gap=min_gap)
    return Span(vh[:rank].contiguous(), rank, g.shape[1], [float(v) for v in s[: min(len(s), rank + 8)]])


def cut_by_gap(sorted_res: torch.Tensor, budget: int, *, max_residual: float = MAX_RESIDUAL) -> int:
    """How many of the ascending residuals are members: the cut at the largest step between consecutive values
    within the first ``budget + 1`` values (a step, not a ratio: the client's dropout spreads members over 0.01-0.4 while
    non-members sit near ``sqrt(1 - rank / d)``), refused (0) when the last member would sit above
    ``max_residual``."""
    n = min(int(budget), sorted_res.numel() - 1)
    if n <= 0:
        return 0
    head = sorted_res[: n + 1].double()
    cut = int((head[1:] - head[:-1]).argmax()) + 1
    return cut if float(head[cut - 1]) <= max_residual else 0


# -- layer 1: per-position token candidates ----------------------------------------------------------------


@dataclass
class TokenCandidates:
    """Per position, the token ids whose layer-1 input lies in the span, and their residuals."""

    ids: list[list[int]]
    residuals: list[list[float]]
    threshold: float
    span: Span

    @property
    def length(self) -> int:
        """Positions up to the last one with a candidate (the longest sentence)."""
        return max((p + 1 for p, c in enumerate(self.ids) if c), default=0)


def token_residuals(span: Span, words: torch.Tensor, positions: torch.Tensor, ln_weight: torch.Tensor,
                    ln_bias: torch.Tensor, eps: float) -> torch.Tensor:
    """Relative residual of ``LN(words[v] + positions[p])`` for every (v, p), ``(V, P)``, in closed form.

    With ``u = e + c`` centred (``~``), ``LN(u) = (g * ~e + g * ~c) / s + beta`` and
    ``s^2 = (|~e|^2 + 2 ~e.~c + |~c|^2) / d + eps``; for the projector ``Q`` onto the span's complement
    ``|Q LN(u)|^2 = |a + m|^2 / s^2 + 2 (a + m).q / s + |q|^2`` with ``a = Q(g * ~e)``, ``m = Q(g * ~c)``,
    ``q = Q beta`` (and ``Q = I`` for ``|LN(u)|^2``)."""
    d = words.shape[1]
    e = words.double() - words.double().mean(1, keepdim=True)
    c = positions.double() - positions.double().mean(1, keepdim=True)
    g, beta = ln_weight.double(), ln_bias.double()
    s2 = ((e * e).sum(1)[:, None] + 2 * (e @ c.T) + (c * c).sum(1)[None]) / d + eps  # (V, P)
    s = s2.sqrt()

    def sq_norm(project) -> torch.Tensor:
        a, m, q = project(e * g), project(c * g), project(beta[None])[0]
        quad = (a * a).sum(1)[:, None] + 2 * (a @ m.T) + (m * m).sum(1)[None]
        lin = (a @ q)[:, None] + (m @ q)[None]
        return quad / s2 + 2 * lin / s + q @ q

    basis = span.basis
    total = sq_norm(lambda x: x)
    resid = sq_norm(lambda x: x - (x @ basis.T) @ basis)
    return (resid.clamp_min(0) / total.clamp_min(1e-30)).sqrt()


def token_candidates(grads: Mapping[str, np.ndarray | torch.Tensor], encoder, *, max_positions: int = 128,
                     min_gap: float = MIN_GAP, noise_floor: bool = False) -> TokenCandidates | None:
    """Layer 1: the per-position candidate tokens of one message (``encoder``: the attacker's copy, holding
    the embedding LayerNorm the server sent). None when the message has no first-layer gradient."""
    g = layer_gradient(grads, 0)
    if g is None:
        return None
    span = gradient_span(g, min_gap=min_gap, noise_floor=noise_floor)
    emb = encoder.model.embeddings
    n_pos = min(max_positions, emb.position_embeddings.weight.shape[0])
    if span.saturated or span.rank == 0:
        return TokenCandidates([[] for _ in range(n_pos)], [[] for _ in range(n_pos)], math.nan, span)
    with torch.no_grad():
        words = emb.word_embeddings.weight
        pos = emb.position_embeddings.weight[:n_pos] + emb.token_type_embeddings.weight[0]
        res = token_residuals(span, words, pos, emb.LayerNorm.weight, emb.LayerNorm.bias, emb.LayerNorm.eps)
    flat = res.flatten()
    # a batch has at most ``rank`` distinct (token, position) pairs, but the span of many pairs also holds their
    # recombinations (LN(E[v] + P[p]) is affine in the two tables once scaled): token v of one sentence at a
    # position another sentence fills passes too. The budget allows for that; layer 2 sorts them out.
    k = min(flat.numel(), CLOSURE_FACTOR * span.rank + 16)
    vals, idx = torch.topk(flat, k, largest=False)
    cut = cut_by_gap(vals, k - 1)
    threshold = float(vals[cut - 1]) if cut else 0.0
    ids: list[list[int]] = [[] for _ in range(n_pos)]
    resid: list[list[float]] = [[] for _ in range(n_pos)]
    for j in range(cut):
        v, p = divmod(int(idx[j]), n_pos)
        ids[p].append(v)
        resid[p].append(float(vals[j]))
    return TokenCandidates(ids, resid, threshold, span)
