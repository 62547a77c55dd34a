"""The pair network and the clustering rule of Xie & Hong (2021, section 4.2) as the paper states them.

* **Pair network** ("a vanilla MLP ... trained with Adam (learning rate 0.01) on the cross-entropy loss"; the
  two encodings "stacked together", d x 2): :class:`PairMLP` is ``softmax(W3 relu(W2 relu(W1 [a; b])))`` with
  two classes (share an original / not), trained by :func:`train_pair_mlp`. The paper gives neither the
  widths nor the epochs; ours are in :class:`MLPConfig`. ``W1 [a; b] = W1a a + W1b b``, so all pairs of a
  block are scored from per-encoding projections (:meth:`PairMLP.score_all`): the same function, computed
  without building the stacked inputs.
* **Clustering** ("a greedy method to iteratively update |X| clusters by selecting the encoded data which has
  the maximum average similarity score of all the data in the cluster ... audit each cluster by checking the
  similarity scores"): :func:`paper_greedy_clusters`. A cluster grows one encoding at a time, always taking
  the encoding with the largest mean similarity ``s = P[share]`` to the current members, until it has
  ``k * epochs`` members (the paper's ``2n`` for k = 2); the audit then drops members whose mean similarity
  to the others is below 1/2. What the paper leaves open, we chose (docs/design/reconstruction-attack.md): clusters
  are grown one after another; the seed is the encoding in the fewest clusters so far, most similar to all
  others first; an encoding may join at most ``k`` clusters (it holds ``k`` originals); a member the audit
  dropped may still join other clusters but does not seed one (else a group split by the audit would be
  found twice).

The clustering reads the similarity matrix row by row through ``rows(j) -> (columns, values)``, so the same
code runs on the dense all-pairs matrix and on a sparse k-nearest-neighbour graph
(:mod:`privnlu.attacks.reconstruction.sparse`); on a complete graph both give the same clusters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch import nn

from ...errors import require

Rows = Callable[[int], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class MLPConfig:
    """The vanilla MLP's settings: Adam at the paper's learning rate 0.01; widths and epochs are ours."""

    hidden: tuple[int, ...] = (128, 32)
    lr: float = 0.01  # the paper's; with a schedule, the peak learning rate
    epochs: int = 3
    batch_size: int = 512
    schedule: str = "constant"  # ours: "constant" (Table 1's records) or "cosine" (warm-up, then cosine decay)
    warmup: float = 0.05  # "cosine": fraction of the steps with a linear warm-up to ``lr``

    def __post_init__(self) -> None:
        require(len(self.hidden) >= 1 and min(self.hidden) >= 1, "pair MLP: hidden sizes must be >= 1")
        require(self.lr > 0 and self.epochs >= 1 and self.batch_size >= 1, "pair MLP: lr, epochs and batch size must be positive")
        require(self.schedule in MLP_SCHEDULES, f"pair MLP: schedules are {', '.join(MLP_SCHEDULES)}, not '{self.schedule}'")
        require(0 <= self.warmup < 1, "pair MLP: warmup must be a fraction in [0, 1)")


#: learning-rate schedules of the pair MLP (ours; the paper states Adam at 0.01 and nothing more)
MLP_SCHEDULES = ("constant", "cosine")
#: where the attacker's training pairs come from (a declared attacker capability): "auxiliary", a same-distribution
#: set disjoint from the private examples; "private-distribution", the paper's threat model (section 3: the
#: attacker "can obtain the private dataset (but unaware of the specific data for the training)"): a sample of the
#: dataset that contains the private examples among others, the attacker not knowing which they are
PAIR_DATA = ("auxiliary", "private-distribution")


def lr_factor(step: int, total: int, cfg: MLPConfig) -> float:
    """The learning rate at ``step`` over ``cfg.lr``: 1 ("constant"), or ``step / w`` for ``step < w`` then
    ``(1 + cos(pi (step - w) / (total - w))) / 2`` ("cosine", ``w = warmup * total``)."""
    if cfg.schedule == "constant":
        return 1.0
    w = max(1, int(cfg.warmup * total))
    if step < w:
        return (step + 1) / w
    return 0.5 * (1.0 + float(np.cos(np.pi * (step - w) / max(1, total - w))))


class PairMLP(nn.Module):
    """Two-class MLP on the stacked pair ``[a; b]`` (2d inputs); ``logit`` = class-1 minus class-0 score."""

    def __init__(self, dim: int, hidden: tuple[int, ...]) -> None:
        super().__init__()
        self.first = nn.Linear(2 * dim, hidden[0])
        rest: list[nn.Module] = []
        for h_in, h_out in zip(hidden, hidden[1:]):
            rest += [nn.ReLU(), nn.Linear(h_in, h_out)]
        self.rest = nn.Sequential(*rest, nn.ReLU(), nn.Linear(hidden[-1], 2))
        self.dim = dim

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """(B, 2) class scores of the stacked pairs."""
        return self.rest(self.first(torch.cat([a, b], -1)))

    def logit(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = self(a, b)
        return out[..., 1] - out[..., 0]

    @torch.no_grad()
    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-encoding halves of the first layer: ``(W1a x + bias, W1b x)``."""
        w = self.first.weight
        return x @ w[:, : self.dim].T + self.first.bias, x @ w[:, self.dim :].T

    @torch.no_grad()
    def score_pairs(self, ua: torch.Tensor, va: torch.Tensor, ub: torch.Tensor, vb: torch.Tensor) -> torch.Tensor:
        """Symmetrised logits ``(f(a, b) + f(b, a)) / 2`` for aligned rows (``u = W1a x + bias``, ``v = W1b x``)."""
        ab = self.rest(ua + vb)
        ba = self.rest(ub + va)
        return 0.5 * ((ab[..., 1] - ab[..., 0]) + (ba[..., 1] - ba[..., 0]))

    @torch.no_grad()
    def score_all(self, x: torch.Tensor, block: int = 32) -> torch.Tensor:
        """The symmetric (N, N) logit matrix (diagonal -inf), a block of rows at a time."""
        u, v = self.project(x)
        n = len(x)
        out = torch.empty(n, n)
        for s in range(0, n, block):
            h = self.rest(u[s : s + block, None, :] + v[None, :, :])  # f(a_s, b): (B, N, 2)
            out[s : s + block] = h[..., 1] - h[..., 0]
        out = 0.5 * (out + out.T)
        out.fill_diagonal_(-float("inf"))
        return out


def train_pair_mlp(a: torch.Tensor, b: torch.Tensor, y: torch.Tensor, cfg: MLPConfig, gen: torch.Generator) -> PairMLP:
    """Cross-entropy training with Adam (peak lr ``cfg.lr``, schedule :func:`lr_factor`); each pair is presented in
    a random order (a, b) or (b, a)."""
    net = PairMLP(a.shape[1], cfg.hidden)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    target = y.long()
    total = cfg.epochs * -(-len(y) // cfg.batch_size)
    step = 0
    for _ in range(cfg.epochs):
        order = torch.randperm(len(y), generator=gen)
        flip = torch.rand(len(y), generator=gen) < 0.5
        for s in range(0, len(y), cfg.batch_size):
            i = order[s : s + cfg.batch_size]
            f = flip[i][:, None]
            left, right = torch.where(f, b[i], a[i]), torch.where(f, a[i], b[i])
            loss = nn.functional.cross_entropy(net(left, right), target[i])
            for group in opt.param_groups:
                group["lr"] = cfg.lr * lr_factor(step, total, cfg)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
    net.eval()
    return net


def pair_accuracy(score: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], a: torch.Tensor, b: torch.Tensor,
                  y: torch.Tensor) -> float:
    """Fraction of pairs whose logit sign matches the share label (0/1)."""
    with torch.no_grad():
        return float(((score(a, b) > 0).float() == y.float()).float().mean())


def dense_rows(prob: torch.Tensor) -> Rows:
    """Row access to a dense (N, N) similarity matrix (the diagonal is never read by the clustering)."""
    p = prob.numpy() if isinstance(prob, torch.Tensor) else np.asarray(prob)
    cols = np.arange(p.shape[0])
    return lambda j: (cols, p[j])


def paper_greedy_clusters(rows: Rows, n_enc: int, n: int, k: int, size: int, *, audit: float = 0.5,
                          strength: np.ndarray | None = None) -> list[torch.Tensor]:
    """The paper's greedy rule (module docstring). ``rows(j)`` gives encoding j's similarities in [0, 1]
    (pairs not listed count as 0); ``strength`` (each encoding's total similarity, for seeding) is computed
    from the rows when not given. Cost: one pass over the listed similarities of each member."""
    if strength is None:
        strength = np.zeros(n_enc)
        for j in range(n_enc):
            c, v = rows(j)
            strength[j] = float(v[c != j].sum())
    count = np.zeros(n_enc, dtype=np.int64)
    used_seed = np.zeros(n_enc, dtype=bool)
    total = np.zeros(n_enc, dtype=np.float64)  # sum of similarities to the current members
    touched = np.zeros(n_enc, dtype=bool)
    is_member = np.zeros(n_enc, dtype=bool)
    order_key = -np.asarray(strength, dtype=np.float64)
    clusters: list[torch.Tensor] = []
    for _ in range(n):
        free = (count < k) & ~used_seed
        if not free.any():
            break
        key = np.where(free, count * (np.abs(order_key).max() * 2 + 1) + order_key, np.inf)
        seed = int(np.argmin(key))
        used_seed[seed] = True
        members = [seed]
        is_member[seed] = True

        def add(j: int) -> np.ndarray:
            c, v = rows(j)
            total[c] += v  # rows list each column once
            new = c[~touched[c]]
            touched[new] = True
            return new

        cand = add(seed)
        while len(members) < size and len(cand):
            score = np.where(is_member[cand] | (count[cand] >= k), -np.inf, total[cand])
            best = int(np.argmax(score))
            if not np.isfinite(score[best]):
                break
            j = int(cand[best])
            members.append(j)
            is_member[j] = True
            cand = np.concatenate([cand, add(j)])
        idx = np.asarray(members, dtype=np.int64)
        if audit > 0 and len(idx) > 2:
            keep = np.ones(len(idx), dtype=bool)
            for t, j in enumerate(idx):
                c, v = rows(int(j))
                inside = is_member[c] & (c != j)
                keep[t] = v[inside].sum() / (len(idx) - 1) >= audit
            keep[0] = True  # the seed defines the cluster
            used_seed[idx[~keep]] = True  # a dropped member may join other clusters but does not seed a new one
            idx = idx[keep]
        total[cand] = 0.0
        touched[cand] = False
        is_member[np.asarray(members, dtype=np.int64)] = False
        count[idx] += 1
        clusters.append(torch.from_numpy(np.sort(idx)))
    return clusters



GROWTH = ("sequential", "together")


def fair_greedy_clusters(sim: np.ndarray, n: int, k: int, size: int, *, audit: float = 0.5, repair_rounds: int = 5,
                         overlap: float = 0.5, cohesion: float = 0.8, growth: str = "sequential") -> list[torch.Tensor]:
    """The paper's greedy rule run so that it can find every original ("fair-greedy"; dense (N, N) similarities
    ``s`` in [0, 1]).

    The paper's text: each cluster grows by "selecting the encoded data which has the maximum average similarity
    score of all the data in the cluster", to ``size = k * epochs`` members (the paper's ``2n`` at k = 2), and
    each cluster is audited "by checking the similarity scores" (here: a member whose mean similarity to the
    others is below ``audit`` leaves; the seed stays). privnlu's choices (the paper states none of them):

    * growth: clusters grow one after another (``"sequential"``; the seed is the encoding in the fewest clusters,
      most similar to all others first, as in :func:`paper_greedy_clusters`), or all together, one member each
      per round (``"together"``; seeds chosen first, each the encoding least similar to the seeds before it);
      an encoding joins at most ``k`` clusters (it holds ``k`` originals);
    * the audit runs before duplicate control, so a cluster's members are those the audit kept;
    * duplicate control, as nmf's repair (:mod:`.repair`): a cluster that shares at least
      ``overlap`` of its members with an earlier one is dropped and a new one is grown among the encodings in
      fewer than ``k`` kept clusters (the encodings of an original not found yet are exactly those), seeded on
      the one most similar to the others; so is a cluster whose mean similarity between members is below
      ``cohesion`` times the median cluster's (a mix of two originals); up to ``repair_rounds`` times.
    """
    require(growth in GROWTH, f"fair greedy: growth is {', '.join(GROWTH)}, not '{growth}'")
    S = np.asarray(sim, dtype=np.float64).copy()
    N = len(S)
    np.fill_diagonal(S, 0.0)
    count = np.zeros(N, dtype=np.int64)
    groups = _grow(S, n, count, k, size, np.ones(N, dtype=bool), growth, audit)
    for _ in range(repair_rounds):
        dup = _duplicates(groups, N, overlap)
        coh = np.array([S[np.ix_(g, g)].sum() / max(1, len(g) * (len(g) - 1)) for g in groups])
        dup = sorted(set(dup) | set(np.flatnonzero(coh < cohesion * np.median(coh)).tolist()))
        if not dup:
            break
        dset = set(dup)
        kept = [g for j, g in enumerate(groups) if j not in dset]
        count = np.bincount(np.concatenate(kept), minlength=N).astype(np.int64) if kept else np.zeros(N, np.int64)
        under = count < k
        if under.sum() < 2:
            break
        regrown = _grow(S, len(dup), count, k, size, under, growth, audit)
        for j, g in zip(dup, regrown):
            groups[j] = g
    return [torch.from_numpy(np.sort(g)) for g in groups]


def _duplicates(groups: list[np.ndarray], n_enc: int, overlap: float) -> list[int]:
    """Clusters (in order) sharing at least ``overlap`` of their members with an earlier kept one (the rule of
    :func:`~.repair.duplicate_groups`, on dense memberships)."""
    M = np.zeros((len(groups), n_enc), dtype=np.float64)
    for j, g in enumerate(groups):
        M[j, g] = 1.0
    shared = M @ M.T
    kept: list[int] = []
    dup = []
    for j, g in enumerate(groups):
        if any(shared[j, c] >= overlap * len(g) for c in kept):
            dup.append(j)
        else:
            kept.append(j)
    return dup


def _audit(S: np.ndarray, g: np.ndarray, audit: float) -> np.ndarray:
    """The paper's audit: keep the members whose mean similarity to the others is at least ``audit`` (and the seed)."""
    if audit <= 0 or len(g) <= 2:
        return g
    keep = S[np.ix_(g, g)].sum(1) / (len(g) - 1) >= audit
    keep[0] = True
    return g[keep]


def _grow(S: np.ndarray, n: int, count: np.ndarray, k: int, size: int, allowed: np.ndarray, growth: str,
          audit: float) -> list[np.ndarray]:
    """``n`` new clusters among the ``allowed`` encodings (``count``: clusters per encoding, updated in place):
    each adds the allowed encoding, in fewer than ``k`` clusters and not yet in it, with the largest mean
    similarity to its members, up to ``size``; then the audit. Returns member arrays, the seed first."""
    N = len(S)
    strength = (S * allowed[None, :]).sum(1)
    out: list[np.ndarray] = []
    if growth == "sequential":
        seeded = np.zeros(N, dtype=bool)
        for _ in range(n):
            free = allowed & (count < k) & ~seeded
            if not free.any():
                break
            key = np.where(free, count * (strength.max() * 2 + 1) - strength, np.inf)
            seed = int(np.argmin(key))
            seeded[seed] = True
            g = _grow_together(S, [seed], count, k, size, allowed)[0]
            count[g] -= 1
            g = _audit(S, g, audit)
            count[g] += 1
            out.append(g)
        return out
    seeds: list[int] = []
    near = np.zeros(N)
    taken = ~(allowed & (count < k))
    for _ in range(n):
        key = np.where(taken, np.inf, near - strength / (strength.max() + 1.0) * 1e-3)
        j = int(np.argmin(key))
        if not np.isfinite(key[j]):
            break
        seeds.append(j)
        taken[j] = True
        near += S[j]
    grown = _grow_together(S, seeds, count, k, size, allowed)
    for g in grown:
        count[g] -= 1
        g = _audit(S, g, audit)
        count[g] += 1
        out.append(g)
    return out


def _grow_together(S: np.ndarray, seeds: list[int], count: np.ndarray, k: int, size: int,
                   allowed: np.ndarray) -> list[np.ndarray]:
    """Round-robin growth from ``seeds`` (``count`` updated in place): in each round every cluster below
    ``size`` adds its best allowed encoding (module rule; equal scores: the encoding in fewer clusters, privnlu's
    tie-break). Returns member arrays, the seed first."""
    total = np.stack([S[s] for s in seeds]) if seeds else np.zeros((0, len(S)))
    inside = np.zeros(total.shape, dtype=bool)
    members = [[s] for s in seeds]
    for c, s in enumerate(seeds):
        inside[c, s] = True
        count[s] += 1
    active = [c for c in range(len(seeds)) if size > 1]
    tie = 1e-6 * (S.max() if S.size else 1.0)  # equal mean similarity: the encoding in fewer clusters first
    while active:
        nxt = []
        for c in active:
            score = np.where(inside[c] | (count >= k) | ~allowed, -np.inf, total[c] - tie * count)
            j = int(np.argmax(score))
            if not np.isfinite(score[j]):
                continue
            members[c].append(j)
            inside[c, j] = True
            count[j] += 1
            total[c] += S[j]
            if len(members[c]) < size:
                nxt.append(c)
        active = nxt
    return [np.asarray(m, dtype=np.int64) for m in members]
