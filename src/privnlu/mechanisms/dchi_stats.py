"""Vectorised statistics of the d_chi mechanisms over a whole vocabulary (Qu et al. 2021, section 5).

* :func:`knn_distances`: the average distance from a token to its k-th nearest
  regular token (Figure 3), from a chunked Gram matrix.
* :func:`plausible_deniability`: for each token ``w``, over ``draws`` runs of
  ``M_txt(w)``: ``N_w`` = how often ``w`` comes back unchanged, ``S_w`` = the
  number of distinct outputs (Figure 4; Feyisetan et al. 2020).

How the plausible-deniability statistics stay exact yet fast
    For ``x = e_w + N_j`` the nearest token minimises
    ``s(w, j, v) = ||e_v||^2 - 2 e_w.e_v - 2 N_j.e_v = A[w, v] - B[j, v]``
    (``B = 2 N E^T``). A chunk of words shares one *bank* of ``draws`` noise
    vectors, so ``B`` costs one (draws x V) product per chunk. Every word still
    gets ``draws`` i.i.d. draws from the exact noise distribution, so each
    ``N_w`` and ``S_w`` has exactly the distribution of the per-word experiment;
    only words of the same chunk are correlated (a fresh bank per chunk).

    The (W x J) table of ``min_v A[w, v] - B[j, v]`` is a min-plus product; we
    solve it exactly with a certificate that is itself an ordinary matrix product
    (:func:`min_plus_argmin`):

    1. candidates: the ``k`` tokens nearest to ``e_w`` (smallest ``A[w, .]``) and
       the ``k`` tokens most aligned with ``N_j`` (largest ``B[j, .]``); the best
       candidate has score ``s*``;
    2. with ``c = min_v A[w, v] - max_v B[j, v]`` (a lower bound of every score)
       and a temperature ``tau``, ``exp(-(s(w, j, v) - c) / tau) = F_A[w, v] F_B[j, v]``
       factorises, ``F_A = exp(-(A - min A) / tau)``, ``F_B = exp(-(max B - B) / tau)``.
       Zeroing the candidates' entries (row ``w`` of ``F_A`` at the word's
       candidates, row ``j`` of ``F_B`` at the draw's), one BLAS product
       ``R = F_A' F_B'^T`` (2 W J V flops) is exactly the summed mass of the
       NON-candidates of every pair, so each of them has ``exp(-(s - c)/tau) <= R``;
    3. if ``R (1 + 4e-3) + V 1e-37 < exp(-(s* - c + tol)/tau)`` (float32 rounding of a
       V-term non-negative dot product, ``V u``, doubled; plus underflow), no
       non-candidate comes within ``tol`` of ``s*``: the candidate is the exact argmin;
    4. pairs not certified are retried per pair with ``k2`` candidates each side
       (the new candidates' mass subtracted from ``R``), then searched over the
       whole vocabulary. ``tau`` is set per chunk so that ``exp(-(s* - c)/tau) >= e^-60``.

    The result equals brute-force search over the same float32 scores
    (tested), up to exact floating-point ties within ``tol``, which are
    searched in full. ``certified`` reports the fraction settled in step 3.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from ..rng import SecretGenerator
from .dchi import TokenSpace, check_eta, dchi_noise, m_rep

PAPER_KS = (1, 2, 3, 4, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 10000)


def pairwise_sq(space: TokenSpace, rows: torch.Tensor) -> torch.Tensor:
    """Squared distances from regular tokens ``rows`` (positions in ``space.regular``) to all regular tokens."""
    e = space.regular
    q = e[rows]
    d2 = torch.addmm(space.regular_sq.unsqueeze(0), q, e.T, beta=1.0, alpha=-2.0) + space.regular_sq[rows].unsqueeze(1)
    return d2.clamp_min_(0.0)


def knn_distances(space: TokenSpace, ks: tuple[int, ...] = PAPER_KS, *, rows: torch.Tensor | None = None, chunk: int = 256) -> dict[int, float]:
    """Mean distance to the k-th nearest other regular token, for each k (k = |V|-1 is the farthest)."""
    v = len(space.regular_ids)
    rows = torch.arange(v) if rows is None else rows
    ks = tuple(k for k in ks if k < v) + (v - 1,)
    sums = torch.zeros(len(ks), dtype=torch.float64)
    kk = torch.tensor(ks)
    for s in range(0, len(rows), chunk):
        r = rows[s : s + chunk]
        d = pairwise_sq(space, r)
        d[torch.arange(len(r)), r] = -1.0  # self first after sorting
        srt = d.sort(dim=1).values[:, kk].clamp_min(0).sqrt()
        sums += srt.double().sum(0)
    return {int(k): float(x) for k, x in zip(ks, sums / len(rows))}


@dataclass
class Deniability:
    """Per-word statistics: ``word_ids`` (vocabulary ids), ``n_w`` and ``s_w`` (counts out of ``draws``).

    ``certified``/``stage2``/``brute``: fractions of (word, draw) pairs settled by
    the matrix-product certificate, by the per-pair second stage, and by full search.
    """

    eta: float
    draws: int
    word_ids: torch.Tensor
    n_w: torch.Tensor
    s_w: torch.Tensor
    certified: float
    seconds: float
    stage2: float = 0.0
    brute: float = 0.0


@dataclass
class MinPlusStats:
    pairs: int = 0
    certified: int = 0
    stage2: int = 0
    brute: int = 0


def _terms(scores: torch.Tensor, c: torch.Tensor, tau: float) -> torch.Tensor:
    """``exp(-(scores - c) / tau)`` in float32 (underflow to 0 only makes the certificate more conservative)."""
    return scores.sub(c.unsqueeze(-1)).mul_(-1.0 / tau).exp_()


def min_plus_argmin(a: torch.Tensor, b: torch.Tensor, *, k: int = 64, k2: int = 256, tol: float = 1e-4,
                    pair_block: int = 4096, brute_block: int = 64, stats: MinPlusStats | None = None) -> torch.Tensor:
    """Exact ``argmin_v a[w, v] - b[j, v]`` for every (w, j): a (W, J) long tensor (see the module docstring).

    ``a`` (W, V) and ``b`` (J, V) are float32. Exact means: equal to brute-force
    search over these float32 scores; pairs whose best candidate is not ahead of
    every other token by ``tol`` are searched in full (so ties are resolved as
    by ``argmin``).
    """
    w_n, v_n = a.shape
    j_n = b.shape[0]
    k2 = min(k2, v_n)
    k = min(k, k2)
    stats = stats if stats is not None else MinPlusStats()
    aval2, aidx2 = a.topk(k2, dim=1, largest=False)  # sorted: the first k are the step-1 candidates
    bval2, bidx2 = b.topk(k2, dim=1)
    aidx, bidx = aidx2[:, :k].contiguous(), bidx2[:, :k].contiguous()
    # step 1: best of the structured candidates (index_select gathers), in blocks of draws to stay in cache
    best = torch.empty(w_n, j_n)
    out = torch.empty(w_n, j_n, dtype=torch.long)
    for s in range(0, j_n, 128):
        bj = b[s : s + 128]
        s_a = aval2[:, :k].unsqueeze(0) - bj.index_select(1, aidx.reshape(-1)).view(len(bj), w_n, k)  # (J', W, k)
        s_b = a.index_select(1, bidx[s : s + 128].reshape(-1)).view(w_n, len(bj), k) - bval2[s : s + 128, :k]  # (W, J', k)
        best_a, arg_a = s_a.min(2)
        best_b, arg_b = s_b.min(2)
        use_a = best_a.T <= best_b
        best[:, s : s + 128] = torch.where(use_a, best_a.T, best_b)
        out[:, s : s + 128] = torch.where(use_a, aidx.gather(1, arg_a.T), bidx[s : s + 128].T.gather(0, arg_b))
    # step 2: the mass of the non-candidates, R = F_A' F_B'^T with the candidates' factors zeroed
    c = aval2[:, :1] - bval2[:, 0].unsqueeze(0)  # (W, J): a lower bound of every score
    gap = best - c
    tau = max(float(gap.max()) / 60.0, 1e-3)  # exp(-60) stays far above float32 underflow
    f_a = a.sub(aval2[:, :1]).mul_(-1.0 / tau).exp_().scatter_(1, aidx, 0.0)
    f_b = b.sub(bval2[:, :1]).mul_(1.0 / tau).exp_().scatter_(1, bidx, 0.0)
    rest_mass = (f_a @ f_b.T).double().mul_(1.0 + 4e-3).add_(v_n * 1e-37)  # + float32 rounding (V u R, doubled), underflow
    del f_a, f_b
    ok = rest_mass < torch.exp(-(gap.double() + tol) / tau)
    stats.pairs += w_n * j_n
    stats.certified += int(ok.sum())
    todo = torch.nonzero(~ok)  # (P, 2): (w, j)
    if len(todo) == 0:
        return out
    # step 3: per-pair candidates, k2 each side; subtract the mass of the new ones (each counted once)
    first = torch.arange(k2) < k
    left = []
    for p in range(0, len(todo), pair_block):
        w_, j_ = todo[p : p + pair_block].unbind(1)
        cw = c[w_, j_]
        ga = b[j_.unsqueeze(1), aidx2[w_]]  # b[j, v] for the k2 nearest v of w
        sa = aval2[w_] - ga
        gb = a[w_.unsqueeze(1), bidx2[j_]]  # a[w, v] for the k2 most aligned v of j
        sb = gb - bval2[j_]
        ma, ia = sa.min(1)
        mb, ib = sb.min(1)
        ua = ma <= mb
        sbest = torch.where(ua, ma, mb)
        new_a = ~first & (ga < bval2[j_, k - 1 : k])  # not already removed as a step-1 B-side candidate
        new_b = ~first & (gb > aval2[w_, -1:])  # not in the A-side list at all
        removed = (_terms(sa, cw, tau) * new_a).sum(1).double() + (_terms(sb, cw, tau) * new_b).sum(1).double()
        left_mass = rest_mass[w_, j_] * (1.0 + 4e-3) - removed  # removed <= rest: its error is inside the slack
        ok2 = left_mass < torch.exp(-((sbest - cw).double() + tol) / tau)
        win = torch.where(ua, aidx2[w_, ia], bidx2[j_, ib])
        out[w_[ok2], j_[ok2]] = win[ok2]
        stats.stage2 += int(ok2.sum())
        left.append(todo[p : p + pair_block][~ok2])
    # step 4: full search over the vocabulary, grouped by word
    rest = torch.cat(left)
    stats.brute += len(rest)
    words, counts = rest[:, 0].unique_consecutive(return_counts=True)  # rows of ``nonzero`` come grouped by w
    buf = torch.empty(min(brute_block, j_n), v_n)  # reused: no large allocation (page faults) per word
    for w, js in zip(words.tolist(), rest[:, 1].split(counts.tolist())):
        for q in range(0, len(js), brute_block):
            jq = js[q : q + brute_block]
            scores = torch.sub(a[w].unsqueeze(0), b[jq], out=buf[: len(jq)])
            out[w, jq] = scores.argmin(1)
    return out


def brute_min_plus_argmin(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Reference: ``argmin_v a[w, v] - b[j, v]`` by full search (W, J)."""
    return torch.stack([(a[w].unsqueeze(0) - b).argmin(1) for w in range(a.shape[0])])


def plausible_deniability(space: TokenSpace, eta: float, rng: SecretGenerator, *, draws: int = 1000,
                          rows: torch.Tensor | None = None, word_chunk: int = 1024, k: int = 64, k2: int = 256,
                          tol: float = 1e-4, exact_search: bool = False) -> Deniability:
    """``N_w`` and ``S_w`` over ``draws`` runs of exact M_txt for each regular token (see the module docstring).

    ``exact_search=True`` uses plain full search for every pair (the slow reference).
    """
    eta = check_eta(eta)
    t0 = time.perf_counter()
    e, sq = space.regular, space.regular_sq
    v = len(space.regular_ids)
    rows = torch.arange(v) if rows is None else rows
    n_w = torch.zeros(len(rows), dtype=torch.long)
    s_w = torch.zeros(len(rows), dtype=torch.long)
    stats = MinPlusStats()
    for s in range(0, len(rows), word_chunk):
        r = rows[s : s + word_chunk]
        bank = dchi_noise(draws, space.dim, eta, rng)  # fresh i.i.d. draws for this chunk of words
        b = 2.0 * (bank @ e.T)  # (J, V): 2 N_j.e_v
        a = torch.addmm(sq.unsqueeze(0), e[r], e.T, beta=1.0, alpha=-2.0)  # (W, V): ||e_v||^2 - 2 e_w.e_v
        if exact_search:
            out = brute_min_plus_argmin(a, b)
            stats.pairs += out.numel()
            stats.brute += out.numel()
        else:
            out = min_plus_argmin(a, b, k=k, k2=k2, tol=tol, stats=stats)
        n_w[s : s + len(r)] = (out == r.unsqueeze(1)).sum(1)
        srt = out.sort(1).values
        s_w[s : s + len(r)] = 1 + (srt[:, 1:] != srt[:, :-1]).sum(1)
    total = max(1, stats.pairs)
    return Deniability(eta, draws, space.regular_ids[rows], n_w, s_w, stats.certified / total, time.perf_counter() - t0,
                       stage2=stats.stage2 / total, brute=stats.brute / total)


def mean_noise_norm(dim: int, eta: float, rng: SecretGenerator, *, count: int = 10000) -> float:
    """Monte-Carlo mean of ||N|| (compare with dim / eta)."""
    return float(dchi_noise(count, dim, eta, rng, dtype=torch.float64).norm(dim=1).mean())


def token_ids_of(texts: list[str], tokenizer) -> torch.Tensor:
    """All WordPiece ids of ``texts`` (no [CLS]/[SEP]), flattened."""
    ids = tokenizer(texts, add_special_tokens=False, truncation=False)["input_ids"]
    return torch.tensor([i for x in ids for i in x], dtype=torch.long) if ids else torch.zeros(0, dtype=torch.long)


def as_numpy(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().numpy()


def worst_case(n_w, s_w, word_ids=None) -> dict:
    """The paper's worst-case reading of Figure 4 (section 5.3: "no token is ever returned more than 500 times in
    the worst case ... no token produces fewer than 500 distinct new tokens"): the maximum ``N_w`` and the
    minimum ``S_w`` over the vocabulary, with the tokens that attain them, and how many tokens break a bound.

    Note ``S_w`` counts *distinct outputs* including the token itself (the paper's "unique output tokens").
    """
    n = torch.as_tensor(n_w)
    s = torch.as_tensor(s_w)
    ids = torch.as_tensor(word_ids) if word_ids is not None else torch.arange(len(n))
    out = {"max_n_w": int(n.max()), "argmax_n_w": int(ids[int(n.argmax())]),
           "min_s_w": int(s.min()), "argmin_s_w": int(ids[int(s.argmin())]), "words": int(len(n))}
    for bound in (500,):
        out[f"n_w_above_{bound}"] = int((n > bound).sum())
        out[f"s_w_below_{bound}"] = int((s < bound).sum())
    return out


def unchanged_share(space, token_ids: torch.Tensor, eta: float, rng, *, chunk: int = 8192) -> float:
    """The share of regular ``token_ids`` that come out of M_txt unchanged at ``eta``:
    ``P(argmin_v ||phi(v) - (phi(x) + N)|| = x)``, estimated with one draw of M_rep per token. It is also the
    accuracy of nearest-neighbour inversion of M_rep (:mod:`privnlu.attacks.dchi.inversion`)."""
    ids = token_ids[~space.special[token_ids]]
    hits = 0
    for s in range(0, len(ids), chunk):
        part = ids[s: s + chunk]
        hits += int((space.nearest(m_rep(space, part, eta, rng)) == part).sum())
    return hits / max(1, len(ids))
