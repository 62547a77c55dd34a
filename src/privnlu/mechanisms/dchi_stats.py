"""Vectorised statistics of the d_chi mechanisms over a whole vocabulary (Qu et al. 2021, section 5).

* :func:`knn_distances`: the average distance from a token to its k-th nearest
  regular token (Figure 3), from a chunked Gram matrix.
* :func:`plausible_deniability`: for each token ``w``, over ``draws`` runs of
  ``M_txt(w)``: ``N_w`` = how often ``w`` comes back unchanged, ``S_w`` = the
  number of distinct outputs (Figure 4; Feyisetan et al. 2020).

How the plausible-deniability statistics stay exact yet fast
    For ``x = e_w + N_j`` the nearest token minimises
    ``s(w, j, v) = ||e_v||^2 - 2 e_w.e_v - 2 N_j.e_v = A[w, v] - 2 B[j, v]``.
    A chunk of words shares one *bank* of ``draws`` noise vectors, so ``B = N E^T``
    costs one (draws x V) product per chunk instead of one per word. Every word
    still gets ``draws`` i.i.d. draws from the exact noise distribution, so each
    ``N_w`` and ``S_w`` has exactly the distribution of the per-word
    experiment; only words of the same chunk are correlated (a fresh bank per
    chunk). For each word we score its ``k`` nearest tokens (smallest
    ``A[w, .]``) and *certify* the result: any other token ``v`` has
    ``s >= alpha_w - 2 max_v B[j, v]`` where ``alpha_w`` is the smallest
    ``A[w, .]`` left out, so when the best candidate beats that bound it is the
    exact nearest token. Uncertified draws are recomputed over the whole
    vocabulary. The output equals exact search; ``certified`` reports how often
    the shortcut applied.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from ..rng import SecretGenerator
from .dchi import TokenSpace, check_eta, dchi_noise

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
    """Per-word statistics: ``word_ids`` (vocabulary ids), ``n_w`` and ``s_w`` (counts out of ``draws``)."""

    eta: float
    draws: int
    word_ids: torch.Tensor
    n_w: torch.Tensor
    s_w: torch.Tensor
    certified: float
    seconds: float


def plausible_deniability(space: TokenSpace, eta: float, rng: SecretGenerator, *, draws: int = 1000,
                          rows: torch.Tensor | None = None, word_chunk: int = 512,
                          stages: tuple[int, ...] = (16, 128, 1024), tol: float = 1e-4,
                          pair_block: int = 1 << 16) -> Deniability:
    """``N_w`` and ``S_w`` over ``draws`` runs of exact M_txt for each regular token (see the module docstring).

    ``stages`` are growing candidate counts: a draw not certified with the first
    ``stages[0]`` candidates is retried with the next count, then over the whole vocabulary.
    """
    eta = check_eta(eta)
    t0 = time.perf_counter()
    e, sq = space.regular, space.regular_sq
    v = len(space.regular_ids)
    rows = torch.arange(v) if rows is None else rows
    stages = tuple(min(k, v - 1) for k in stages)
    n_w = torch.zeros(len(rows), dtype=torch.long)
    s_w = torch.zeros(len(rows), dtype=torch.long)
    certified = 0
    for s in range(0, len(rows), word_chunk):
        r = rows[s : s + word_chunk]
        bank = dchi_noise(draws, space.dim, eta, rng)  # fresh i.i.d. draws for this chunk of words
        b2 = 2.0 * (bank @ e.T)  # (J, V): 2 N_j.e_v
        beta2 = b2.max(1).values  # (J,)
        a = torch.addmm(sq.unsqueeze(0), e[r], e.T, beta=1.0, alpha=-2.0)  # (W, V): ||e_v||^2 - 2 e_w.e_v
        vals, idx = a.topk(stages[-1] + 1, dim=1, largest=False)
        wl = torch.arange(len(r)).repeat_interleave(draws)
        jl = torch.arange(draws).repeat(len(r))
        out = torch.empty(len(r) * draws, dtype=torch.long)
        todo = torch.arange(len(wl))
        for k in stages:
            still = []
            for p in range(0, len(todo), pair_block):
                t = todo[p : p + pair_block]
                w_, j_ = wl[t], jl[t]
                cand = idx[w_, :k]
                sc = vals[w_, :k] - b2[j_.unsqueeze(1), cand]
                smin, arg = sc.min(1)
                ok = smin < vals[w_, k] - beta2[j_] - tol  # no left-out token can beat the best candidate
                out[t[ok]] = cand[ok, arg[ok]]
                still.append(t[~ok])
            certified += len(todo) - sum(len(x) for x in still)
            todo = torch.cat(still)
            if len(todo) == 0:
                break
        for p in range(0, len(todo), 2048):
            t = todo[p : p + 2048]
            out[t] = (a[wl[t]] - b2[jl[t]]).argmin(1)
        out = out.view(len(r), draws)
        n_w[s : s + len(r)] = (out == r.unsqueeze(1)).sum(1)
        srt = out.sort(1).values
        s_w[s : s + len(r)] = 1 + (srt[:, 1:] != srt[:, :-1]).sum(1)
    return Deniability(eta, draws, space.regular_ids[rows], n_w, s_w, certified / (len(rows) * draws), time.perf_counter() - t0)


def mean_noise_norm(dim: int, eta: float, rng: SecretGenerator, *, count: int = 10000) -> float:
    """Monte-Carlo mean of ||N|| (compare with dim / eta)."""
    return float(dchi_noise(count, dim, eta, rng, dtype=torch.float64).norm(dim=1).mean())


def token_ids_of(texts: list[str], tokenizer) -> torch.Tensor:
    """All WordPiece ids of ``texts`` (no [CLS]/[SEP]), flattened."""
    ids = tokenizer(texts, add_special_tokens=False, truncation=False)["input_ids"]
    return torch.tensor([i for x in ids for i in x], dtype=torch.long) if ids else torch.zeros(0, dtype=torch.long)


def as_numpy(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().numpy()
