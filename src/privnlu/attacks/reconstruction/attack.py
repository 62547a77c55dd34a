"""The reconstruction attack on instance encoding (Xie & Hong 2021; after Carlini et al. 2021 on InstaHide).

Given ``N`` encodings ``e`` of ``n`` unknown private representations (each encoded
``epochs`` times, ``N = n * epochs``) and their mixed labels, the attacker:

0. against Algorithm 1's one noise vector per batch (Xie & Hong 2022 as printed, not DP), cancels that noise
   first (:mod:`privnlu.attacks.reconstruction.batch_noise`; ``ReconstructionConfig.cancel_batch_noise``);
1. removes the sign masks: ``a = |e|`` (``|sigma o v| = |v|`` for any sign mask);
2. trains a pair network ``f(a, b) -> logit P[a and b share an original]`` on
   encodings it simulates itself from same-distribution data, with its own keys
   (against DP instance encoding, by default with the release's public mechanism and its own noise draws:
   ``ReconstructionConfig.noise_aware``, :func:`simulate_pairs`);
   the first layer is factorised over the two inputs, so all ``N^2`` pairs are
   scored from per-encoding projections without building concatenated pairs
   (:class:`PairScorer`);
   the paper's own network, a "vanilla MLP" on the stacked pair trained with Adam
   at learning rate 0.01, is :class:`~privnlu.attacks.reconstruction.paper.PairMLP`;
3. clusters the encodings into one group per original: the paper's greedy rule
   (``paper-greedy``, :func:`~privnlu.attacks.reconstruction.paper.paper_greedy_clusters`,
   on the MLP's scores), and privnlu's own: a seed plus every encoding above a
   threshold (``threshold``, :func:`threshold_clusters`), clique growth as Carlini
   et al. do (``clique``, :func:`clique_clusters`), and symmetric NMF of the
   affinity matrix started from the clique groups (``nmf``, :func:`nmf_clusters`),
   which uses every pair score at once (transitivity) instead of thresholding
   pairs one by one;
4. recovers the mixing coefficients from the mixed labels
   (:func:`label_coefficients`);
5. (privnlu's solver) solves ``min_{X} sum_e || |sum_{c in S(e)} lambda_ec X_c| - a_e ||^2``, the
   least squares under ``abs()`` of the paper's equations 5-8, by alternating
   projections (:func:`solve_alternating`: fix the signs ``s_e = sign(sum
   lambda X)``, then ``X`` is an ordinary sparse least squares; a few random
   starts, best per coordinate), or by gradient descent on ``X`` and the
   coefficients (:func:`solve_originals`, solver ``"adam"``);
6. maps each recovered vector to a sentence by nearest-neighbour search
   (cosine between absolute values) over the attacker's corpus.

The recovered vectors are determined only up to a sign per coordinate (the
masks), so every comparison is made between absolute values.

With ``graph > 0`` only the pairs of a k-nearest-neighbour graph are scored and
clustering runs on that sparse graph (:mod:`privnlu.attacks.reconstruction.sparse`);
``threshold`` and ``clique`` need all pairs and are not run then.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from ...errors import require
from ...mechanisms.release import hide_dataset
from ...mechanisms.texthide import TextHide, parse_m
from ...rng import SecretGenerator
from ..representation.search import CosineIndex
from ..threat import Attack, AttackerView, Grant

CLUSTERINGS = ("paper-greedy", "threshold", "clique", "nmf")
SPARSE_CLUSTERINGS = ("paper-greedy", "clique", "nmf")  # the ones that run on a k-NN graph
NMF_SEEDS = ("clique", "paper-greedy")  # the groups nmf starts from
NMF_REPAIR_STARTS = ("seeds", "warm")  # what the repair pass of nmf starts from (:meth:`_PairGraph.nmf`)
SOLVERS = ("alternating", "adam")


@dataclass(frozen=True)
class ReconstructionConfig:
    """The attacker's own settings (its randomness is its own: ``seed`` is not a defender secret)."""

    hidden: int = 128  # width of the factorised first layer
    rank: int = 32  # rank of the bilinear term a^T P^T Q b
    sim_releases: int = 3  # simulated releases to train the pair network on
    sim_epochs: int = 20  # encodings per simulated example
    pairs_per_release: int = 40000  # half positive, half negative
    train_epochs: int = 3
    lr: float = 2e-3
    solver: str = "alternating"  # least squares under abs: "alternating" projections or "adam"
    ls_steps: int = 300  # adam steps
    ls_lr: float = 0.05
    ls_iters: int = 60  # alternating-projection iterations
    ls_restarts: int = 4
    nmf_iters: int = 150
    block: int = 32  # rows of the pair matrix scored at once (small blocks avoid page-fault storms)
    threshold: float = 0.0  # logit threshold for "share an original"
    seed: int | None = 0
    mlp_hidden: tuple[int, ...] = (128, 32)  # the paper's vanilla MLP (widths are ours; Adam lr 0.01 is the paper's)
    mlp_lr: float = 0.01
    mlp_epochs: int = 3
    sim_max_n: int = 200  # examples per simulated release (pair statistics do not depend on n; bounds memory)
    graph: int = 0  # 0: score all pairs; > 0: only a k-NN graph with this many neighbours per encoding
    nmf_support: int = 64  # sparse nmf: groups per encoding (32 recovered less at n = 100)
    nmf_seeds: str = "clique"  # the groups nmf starts from: clique growth, or the paper's greedy rule
    nmf_repair_iters: int = 50  # nmf iterations after duplicate groups are re-seeded (0: no repair)
    nmf_repair_start: str = "seeds"  # the repair restarts every group from its seed, or only the re-seeded ("warm")
    nmf_repair_rounds: int = 1  # repair passes, each on the previous pass's groups
    #: against DP instance encoding: simulate the training releases with the release's public mechanism (same noise
    #: distribution and reading, own draws); None: whenever the scheme grant states a mechanism
    noise_aware: bool | None = None
    #: against Algorithm 1's one noise vector per batch: group the release by its shared draws and cancel them
    #: (:mod:`.batch_noise`), in the attacked and the simulated releases alike; None: whenever the
    #: scheme grant states that reading
    cancel_batch_noise: bool | None = None

    def __post_init__(self) -> None:
        for name in ("hidden", "rank", "sim_releases", "sim_epochs", "pairs_per_release", "train_epochs", "ls_steps", "block"):
            require(getattr(self, name) >= 1, f"reconstruction: {name} must be >= 1")
        for name in ("ls_iters", "ls_restarts", "nmf_iters", "mlp_epochs", "sim_max_n", "nmf_support"):
            require(getattr(self, name) >= 1, f"reconstruction: {name} must be >= 1")
        require(self.nmf_repair_iters >= 0, "reconstruction: nmf_repair_iters must be >= 0")
        require(self.nmf_repair_rounds >= 1, "reconstruction: nmf_repair_rounds must be >= 1")
        require(self.lr > 0 and self.ls_lr > 0 and self.mlp_lr > 0, "reconstruction: learning rates must be positive")
        require(self.graph >= 0, "reconstruction: graph (neighbours) must be >= 0")
        require(self.solver in SOLVERS, f"reconstruction: unknown solver '{self.solver}'; choose from {', '.join(SOLVERS)}")
        require(self.nmf_repair_start in NMF_REPAIR_STARTS,
                f"reconstruction: nmf repair starts are {', '.join(NMF_REPAIR_STARTS)}, not '{self.nmf_repair_start}'")
        require(self.nmf_seeds in NMF_SEEDS, f"reconstruction: nmf seeds are {', '.join(NMF_SEEDS)}, not '{self.nmf_seeds}'")


def features(enc: torch.Tensor) -> torch.Tensor:
    """``|e| / ||e||_2 * sqrt(d)``, centred per coordinate: the pair network's input."""
    a = enc.abs().float()
    a = a / a.norm(dim=1, keepdim=True).clamp_min(1e-12) * math.sqrt(a.shape[1])
    return a - a.mean(dim=0, keepdim=True)


class PairScorer(nn.Module):
    """``f(a, b) = w^T relu(U a + V b + c) + (P a)^T (Q b) + w0``, symmetrised over (a, b).

    ``U a``, ``V b``, ``P a``, ``Q b`` are computed once per encoding; scoring a
    block of pairs then costs an add, a ReLU and a matrix-vector product.
    """

    def __init__(self, dim: int, hidden: int, rank: int) -> None:
        super().__init__()
        self.u = nn.Linear(dim, hidden)
        self.v = nn.Linear(dim, hidden, bias=False)
        self.w = nn.Linear(hidden, 1)
        self.p = nn.Linear(dim, rank, bias=False)
        self.q = nn.Linear(dim, rank, bias=False)

    def _one_way(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.w(torch.relu(self.u(a) + self.v(b))).squeeze(-1) + (self.p(a) * self.q(b)).sum(-1)

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return 0.5 * (self._one_way(a, b) + self._one_way(b, a))

    @torch.no_grad()
    def score_all(self, x: torch.Tensor, block: int = 32) -> torch.Tensor:
        """The symmetric (N, N) logit matrix, diagonal -inf, scored in row blocks without pair inputs."""
        ua, vb, pa, qb = self.u(x), self.v(x), self.p(x), self.q(x)
        w, w0 = self.w.weight[0], self.w.bias[0]
        n = len(x)
        out = torch.empty(n, n)
        for s in range(0, n, block):
            h = torch.relu(ua[s : s + block, None, :] + vb[None, :, :])  # (B, N, H): one block only
            out[s : s + block] = h @ w + w0
        out += pa @ qb.T
        out = 0.5 * (out + out.T)
        out.fill_diagonal_(-math.inf)
        return out


def membership(partners: torch.Tensor, n: int, public: torch.Tensor | None = None) -> torch.Tensor:
    """(N, n) 0/1 matrix: encoding e contains private example i (public components excluded)."""
    m = torch.zeros(len(partners), n)
    rows = torch.arange(len(partners))[:, None].expand_as(partners)
    keep = torch.ones_like(partners, dtype=torch.bool) if public is None else ~public
    m[rows[keep], partners[keep]] = 1.0
    return m


def simulate_release(aux_x: torch.Tensor, n: int, m: float, k: int, cfg: ReconstructionConfig, rng: SecretGenerator,
                     gen: torch.Generator, *, mechanism=None, noise: str = "per-encoding"):
    """One attacker-simulated release of ``n`` auxiliary examples, ``cfg.sim_epochs`` passes in one batch each:
    noise-free TextHide, or (``mechanism``) DP instance encoding with that public mechanism and noise reading.
    Returns (payload, key) as :func:`~privnlu.mechanisms.release.hide_dataset` does."""
    from ...mechanisms.dp import DPTextHide

    idx = torch.randperm(len(aux_x), generator=gen)[:n]
    hider = (TextHide(m, k, dim=aux_x.shape[1], rng=rng) if mechanism is None else
             DPTextHide(m, k, dim=aux_x.shape[1], rng=rng, mechanism=mechanism, noise=noise))
    return hide_dataset(hider, aux_x[idx], torch.zeros(n, 1), epochs=cfg.sim_epochs, batch_size=n)


def simulate_pairs(aux_x: torch.Tensor, n: int, m: float, k: int, cfg: ReconstructionConfig, rng: SecretGenerator,
                   gen: torch.Generator, *, mechanism=None, noise: str = "per-encoding",
                   clean: Callable[[torch.Tensor], torch.Tensor] | None = None
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Attacker-simulated training pairs: (features a, features b, share label) from its own releases.

    With ``mechanism`` (a public :class:`~privnlu.mechanisms.dp.EncodingMechanism`: the noise-aware attacker) every
    simulated release is DP instance encoding as the defender's: clipped, mixed and noised with the same noise
    distribution and reading (``noise``), drawn from the attacker's own ``rng``; without, noise-free TextHide.
    ``clean``: what the attacker does to the attacked release before scoring it (the per-batch noise cancellation),
    done to each simulated release too.
    """
    A, B, Y = [], [], []
    for _ in range(cfg.sim_releases):
        payload, key = simulate_release(aux_x, n, m, k, cfg, rng, gen, mechanism=mechanism, noise=noise)
        feats = features(payload.x if clean is None else clean(payload.x))
        mem = membership(key.partners, n)
        share = (mem @ mem.T) > 0
        share.fill_diagonal_(False)
        half = cfg.pairs_per_release // 2
        pos = share.nonzero()
        pos = pos[torch.randint(len(pos), (half,), generator=gen)]
        neg_i = torch.randint(len(feats), (4 * half,), generator=gen)
        neg_j = torch.randint(len(feats), (4 * half,), generator=gen)
        ok = ~share[neg_i, neg_j] & (neg_i != neg_j)
        neg = torch.stack([neg_i[ok], neg_j[ok]], 1)[:half]
        pairs = torch.cat([pos, neg])
        A.append(feats[pairs[:, 0]])
        B.append(feats[pairs[:, 1]])
        Y.append(torch.cat([torch.ones(len(pos)), torch.zeros(len(neg))]))
    return torch.cat(A), torch.cat(B), torch.cat(Y)


def train_scorer(a: torch.Tensor, b: torch.Tensor, y: torch.Tensor, cfg: ReconstructionConfig, gen: torch.Generator) -> tuple[PairScorer, float]:
    """BCE training of the pair network; returns it and its training accuracy in the last epoch."""
    net = PairScorer(a.shape[1], cfg.hidden, cfg.rank)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    acc = 0.0
    for _ in range(cfg.train_epochs):
        order = torch.randperm(len(y), generator=gen)
        correct = 0
        for s in range(0, len(y), 512):
            i = order[s : s + 512]
            logit = net(a[i], b[i])
            loss = nn.functional.binary_cross_entropy_with_logits(logit, y[i])
            opt.zero_grad()
            loss.backward()
            opt.step()
            correct += int(((logit.detach() > 0).float() == y[i]).sum())
        acc = correct / len(y)
    net.eval()
    return net, acc


def threshold_clusters(scores: torch.Tensor, n: int, k: int, threshold: float = 0.0) -> list[torch.Tensor]:
    """privnlu's threshold rule (not the paper's): seed = the encoding (in fewer than k groups) with most
    confident partners; its group is the seed plus every such encoding scored above ``threshold`` with it.
    Repeat until ``n`` groups."""
    adj = scores > threshold
    count = torch.zeros(len(scores), dtype=torch.long)
    clusters: list[torch.Tensor] = []
    used_seed = torch.zeros(len(scores), dtype=torch.bool)
    while len(clusters) < n:
        free = (count < k) & ~used_seed
        if not free.any():
            break
        degree = (adj & free[None, :]).sum(1).masked_fill(~free, -1)
        seed = int(degree.argmax())
        members = torch.cat([torch.tensor([seed]), (adj[seed] & free).nonzero()[:, 0]])
        clusters.append(members)
        count[members] += 1
        used_seed[seed] = True
    return clusters


def clique_clusters(scores: torch.Tensor, n: int, k: int, size: int, threshold: float = 0.0) -> list[torch.Tensor]:
    """Clique growth (Carlini et al. 2021): from a seed, repeatedly add the encoding whose *smallest* score to
    the current members is largest, while it exceeds ``threshold`` and the group is below ``size``.
    Seeds are the encodings in the fewest groups, most confident first; an encoding joins at most k groups."""
    N = len(scores)
    adj_deg = (scores > threshold).sum(1)
    count = torch.zeros(N, dtype=torch.long)
    used_seed = torch.zeros(N, dtype=torch.bool)
    clusters: list[torch.Tensor] = []
    while len(clusters) < n:
        free = (count < k) & ~used_seed
        if not free.any():
            break
        key = (count.float() * (N + 1) - adj_deg.float()).masked_fill(~free, math.inf)
        seed = int(key.argmin())
        used_seed[seed] = True
        members = [seed]
        worst = scores[seed].clone()  # min score to current members
        worst[count >= k] = -math.inf
        worst[seed] = -math.inf
        while len(members) < size:
            j = int(worst.argmax())
            if not worst[j] > threshold:
                break
            members.append(j)
            worst = torch.minimum(worst, scores[j])
            worst[j] = -math.inf
        idx = torch.tensor(members)
        clusters.append(idx)
        count[idx] += 1
    return clusters


def nmf_clusters(feats: torch.Tensor, n: int, size: int, seeds: list[torch.Tensor], *, iters: int = 150) -> list[torch.Tensor]:
    """Symmetric NMF: ``A ~ H H^T`` with ``A = max(0, cos(f_a, f_b))`` (zero diagonal) and ``H >= 0`` of shape (N, n),
    by the multiplicative update ``H <- H o (1/2 + 1/2 (A H) / (H H^T H))`` (Ding et al. 2005), started from the
    ``seeds`` groups; group j is the ``size`` encodings with the largest ``H[:, j]``.

    Every encoding of an original shares it with all ``k * epochs`` others, so the affinity matrix is close to
    ``M M^T`` for the membership matrix ``M``: a factorisation uses all pair scores together, where clique growth
    thresholds them one at a time."""
    require(len(seeds) >= 1, "nmf clustering needs at least one seed group")
    return top_members(nmf_factor(feats, nmf_start(len(feats), seeds), iters=iters), size)


def nmf_start(n_enc: int, seeds: list[torch.Tensor], *, warm: torch.Tensor | None = None,
              fresh: list[int] | None = None) -> torch.Tensor:
    """The starting ``H`` (N, groups): 0.001, each seed's members 0.1. ``warm``: an earlier ``H`` of the same
    groups, kept for every group not in ``fresh``; only the ``fresh`` groups start from their seeds."""
    H = torch.full((n_enc, len(seeds)), 0.001) if warm is None else warm.clone()
    for j in range(len(seeds)) if warm is None else (fresh or []):
        H[:, j] = 0.001
        H[seeds[j], j] = 0.1
    return H


def all_pairs_affinity(feats: torch.Tensor) -> torch.Tensor:
    """nmf's affinity on all pairs: ``A = max(0, cos(f_a, f_b))``, zero diagonal (N, N)."""
    fn = nn.functional.normalize(feats, dim=1)
    A = (fn @ fn.T).clamp_min_(0.0)
    return A.fill_diagonal_(0.0)


def nmf_factor(feats: torch.Tensor, H: torch.Tensor, *, iters: int = 150,
               affinity: torch.Tensor | None = None) -> torch.Tensor:
    """``iters`` multiplicative updates of ``H`` (in place) on the all-pairs affinity of ``feats`` (``affinity``:
    :func:`all_pairs_affinity` of them, already formed)."""
    A = all_pairs_affinity(feats) if affinity is None else affinity
    for _ in range(iters):
        H.mul_(0.5 + 0.5 * (A @ H) / (H @ (H.T @ H)).clamp_min(1e-12))
    return H


def top_members(H: torch.Tensor, size: int) -> list[torch.Tensor]:
    """Group j: the ``size`` encodings with the largest ``H[:, j]`` (sorted ids)."""
    top = H.topk(min(size, len(H)), dim=0).indices
    return [top[:, j].sort().values for j in range(H.shape[1])]


def label_coefficients(clusters: list[torch.Tensor], y: torch.Tensor, n_enc: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Step 4. Each group's label is ``argmax(mean_{e in group} y_e - mean_all y)`` (its original contributes to
    every member); an encoding's weight on the groups of class ``a`` sums to its mixed label ``y_e[a]`` and is
    split evenly among them (the split is refined in step 5). Returns (slots (N, K), slot mask, lambda0, class id)."""
    per_enc: list[list[int]] = [[] for _ in range(n_enc)]
    for c, members in enumerate(clusters):
        for e in members.tolist():
            per_enc[e].append(c)
    width = max(1, max(len(p) for p in per_enc))
    slots = torch.zeros(n_enc, width, dtype=torch.long)
    mask = torch.zeros(n_enc, width, dtype=torch.bool)
    for e, p in enumerate(per_enc):
        slots[e, : len(p)] = torch.tensor(p, dtype=torch.long)
        mask[e, : len(p)] = True
    mean_all = y.mean(0)
    labels = torch.stack([(y[m].mean(0) - mean_all).argmax() for m in clusters]) if clusters else torch.zeros(0, dtype=torch.long)
    cls = labels[slots]  # (N, K)
    mass = y.gather(1, cls)  # y_e[label of slot]
    same = (cls[:, :, None] == cls[:, None, :]) & mask[:, None, :] & mask[:, :, None]
    share = same.sum(-1).clamp_min(1)
    lam = torch.where(mask, mass / share, torch.zeros_like(mass))
    total = lam.sum(1, keepdim=True)
    fallback = mask.float() / mask.sum(1, keepdim=True).clamp_min(1)
    lam = torch.where(total > 1e-6, lam / total.clamp_min(1e-12), fallback)  # drop mass of classes with no group
    return slots, mask, lam, cls


def _sparse_rows(slots: torch.Tensor, mask: torch.Tensor, lam: torch.Tensor, n_groups: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The (N, n) mixing matrix ``L[e, c] = sum of lambda_ej over slots j of e in group c`` and its transpose, sparse."""
    import warnings

    rows = torch.arange(len(slots))[:, None].expand_as(slots)[mask]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "sparse CSR support is in beta"
        L = torch.sparse_coo_tensor(torch.stack([rows, slots[mask]]), lam[mask].float(), (len(slots), n_groups)).coalesce()
        return L.to_sparse_csr(), L.t().coalesce().to_sparse_csr()


def _gram(slots: torch.Tensor, mask: torch.Tensor, lam: torch.Tensor, n_groups: int) -> torch.Tensor:
    """``L^T L`` (n, n) from the sparse rows, without a dense (N, n) matrix (scipy sparse product)."""
    import scipy.sparse as sp

    rows = torch.arange(len(slots))[:, None].expand_as(slots)[mask].numpy()
    L = sp.csr_matrix((lam[mask].double().numpy(), (rows, slots[mask].numpy())), shape=(len(slots), n_groups))
    return torch.from_numpy((L.T @ L).toarray()).float()


def solve_alternating(enc: torch.Tensor, slots: torch.Tensor, mask: torch.Tensor, lam: torch.Tensor, n_groups: int, *,
                      iters: int, restarts: int = 4, gen: torch.Generator | None = None) -> torch.Tensor:
    """Step 5 by alternating projections (Gerchberg-Saxton style phase retrieval, per coordinate).

    With ``L`` the (N, n) mixing matrix (coefficients from the labels) and ``a = |e|``, the objective
    ``sum_e || |(L X)_e| - a_e ||^2`` equals ``min_s || L X - s o a ||^2`` over sign matrices ``s``. Alternate
    ``s = sign(L X)`` and ``X = (L^T L + eps I)^{-1} L^T (s o a)`` (one Cholesky factor, sparse products). Each of
    ``restarts`` starts (magnitudes with random signs; the first all positive) runs ``iters`` rounds; the loss is
    a sum over coordinates, so each coordinate keeps its best start."""
    a = enc.abs().float()
    N, d = a.shape
    used = mask.any(1)
    a, slots, mask, lam = a[used], slots[used], mask[used], lam[used]
    L, LT = _sparse_rows(slots, mask, lam, n_groups)
    G = _gram(slots, mask, lam, n_groups) + 1e-4 * torch.eye(n_groups)
    chol = torch.linalg.cholesky(G)
    r = restarts if slots.shape[1] > 1 and bool(mask[:, 1:].any()) else 1  # no mixing: signs are not identifiable
    A = a.repeat(1, r)  # (N, r * d): all starts in one matrix
    X = torch.cholesky_solve(LT @ A, chol)
    gen = gen or torch.Generator().manual_seed(0)
    signs = torch.where(torch.rand(X.shape, generator=gen) < 0.5, -1.0, 1.0)
    signs[:, :d] = 1.0
    X = X.abs() * signs
    for _ in range(iters):
        X = torch.cholesky_solve(LT @ torch.where(L @ X >= 0, A, -A), chol)
    per_coord = (((L @ X).abs() - A) ** 2).mean(0).view(r, d)
    pick = per_coord.argmin(0)
    return X.view(n_groups, r, d)[:, pick, torch.arange(d)].contiguous()


def solve_originals(enc: torch.Tensor, slots: torch.Tensor, mask: torch.Tensor, lam0: torch.Tensor, cls: torch.Tensor,
                    n_groups: int, *, steps: int, lr: float, restarts: int = 4,
                    gen: torch.Generator | None = None) -> torch.Tensor:
    """Step 5: ``min_{X, theta} mean_e || |sum_j lambda_ej(theta) X_{slot_ej}| - |e| ||^2`` with Adam, where
    ``lambda_e(theta)`` keeps each class's total weight (from the labels) and moves it within the class by a softmax.

    The problem is a real phase retrieval per coordinate (only relative signs between originals are
    identifiable), so it is started from the magnitude estimate with random signs, ``restarts`` times, and the
    solution with the lowest loss is kept."""
    a = enc.abs().float()
    used = mask.any(1)
    a, slots, mask, lam0, cls = a[used], slots[used], mask[used], lam0[used], cls[used]
    # init: X_c = weighted mean of its members' |e| / lambda
    x0 = torch.zeros(n_groups, a.shape[1])
    wsum = torch.zeros(n_groups)
    for j in range(slots.shape[1]):
        w = lam0[:, j] * mask[:, j]
        x0.index_add_(0, slots[:, j], a * w[:, None])
        wsum.index_add_(0, slots[:, j], w ** 2)
    mag = x0 / wsum.clamp_min(1e-9)[:, None]
    same = (cls[:, :, None] == cls[:, None, :]) & mask[:, None, :] & mask[:, :, None]
    class_mass = (lam0[:, None, :] * same).sum(-1)  # total weight of the slot's class
    gen = gen or torch.Generator().manual_seed(0)
    mixing = bool(mask[:, 1:].any()) if slots.shape[1] > 1 else False
    r = restarts if mixing else 1  # without mixing, signs are not identifiable: one start suffices
    signs = torch.where(torch.rand((r, *mag.shape), generator=gen) < 0.5, -1.0, 1.0)
    signs[0] = 1.0
    X, per_coord = _descend(mag * signs, a, slots, mask, same, class_mass, steps=steps, lr=lr)
    # the loss is a sum over coordinates given lambda: keep, per coordinate, the best start, then polish
    pick = per_coord.argmin(0)  # (d,)
    best = X[pick, :, torch.arange(X.shape[2])].T.contiguous()
    if r > 1:
        best = _descend(best[None], a, slots, mask, same, class_mass, steps=max(1, steps // 3), lr=lr / 2)[0][0]
    return best


def _descend(x_init: torch.Tensor, a, slots, mask, same, class_mass, *, steps: int, lr: float,
             chunk_floats: int = 4_000_000):
    """Adam on ``R`` independent starts at once; returns (X (R, n, d), final loss per start and coordinate (R, d)).

    The loss is a sum over coordinates, so each step accumulates gradients over chunks of coordinates; this
    keeps every temporary below ``chunk_floats`` floats (large temporaries cost a page fault storm per step)."""
    R = x_init.shape[0]
    X = nn.Parameter(x_init.clone())
    theta = nn.Parameter(torch.zeros((R, *slots.shape)))
    opt = torch.optim.Adam([X, theta], lr=lr)
    d = X.shape[2]
    width = max(1, min(d, chunk_floats // max(1, R * slots.shape[0] * slots.shape[1])))
    for i in range(steps + 1):
        final = i == steps
        per_coord = []
        opt.zero_grad()
        with torch.set_grad_enabled(not final):
            t = theta.masked_fill(~mask, -math.inf)
            et = torch.exp(t - t.max(-1, keepdim=True).values).masked_fill(~mask, 0.0)
            within = et / (et[:, :, None, :] * same).sum(-1).clamp_min(1e-12)
            lam = (class_mass * within)[..., None]  # (R, N, K, 1)
            for c in range(0, d, width):
                mix = (lam * X[:, slots, c : c + width]).sum(2)  # (R, N, w)
                err = (mix.abs() - a[:, c : c + width]) ** 2
                if final:
                    per_coord.append(err.mean(1))
                else:
                    err.sum(-1).mean(-1).sum().backward(retain_graph=c + width < d)
        if final:
            return X.detach(), torch.cat(per_coord, 1)
        opt.step()
    raise AssertionError("unreachable")


@dataclass
class ReconstructionResult:
    """The attacker's output for one clustering method."""

    method: str
    clusters: list[torch.Tensor]
    recovered: torch.Tensor  # (groups, d); meaningful up to a sign per coordinate
    sentence_index: np.ndarray | None = None  # nearest candidate sentence per group (abs cosine)
    seconds: dict = field(default_factory=dict)
    repaired_groups: int | None = None  # nmf: duplicate groups re-seeded (:mod:`.repair`)


class ReconstructionAttack(Attack):
    """Xie & Hong 2021 (see the module docstring). ``run`` returns one result per clustering method."""

    name = "reconstruct"
    requires = frozenset({Grant.ENCODINGS, Grant.MIXED_LABELS, Grant.SCHEME, Grant.AUXILIARY})

    def __init__(self, config: ReconstructionConfig | None = None, methods: tuple[str, ...] = CLUSTERINGS, *,
                 progress: bool = True) -> None:
        for m in methods:
            require(m in CLUSTERINGS, f"unknown clustering '{m}'; choose from {', '.join(CLUSTERINGS)}")
        self.config = config or ReconstructionConfig()
        self.methods = methods
        self.progress = progress  # the stage bar (a caller with its own bar turns it off)
        self.pair_train_accuracy: float | None = None
        self.pair_accuracy: dict[str, dict[str, float]] = {}
        self.scores: dict[str, object] = {}  # the last run's pair logits, per network (for the auditor's pair accuracy)
        self.graph_edges: tuple[np.ndarray, np.ndarray] | None = None
        self.noise_aware: bool | None = None  # the last run's attacker: trained on noisy simulated releases
        self.noise_groups: int | None = None  # the last run's shared-noise groups found and cancelled (None: not tried)

    def run(self, view: AttackerView) -> list[ReconstructionResult]:
        self.check(view)
        cfg = self.config
        enc, y, scheme = view.need("encodings"), view.need("mixed_labels").float(), view.scheme
        aux = view.need("auxiliary")
        for key in ("m", "k", "epochs"):
            require(key in scheme, f"the scheme grant must state '{key}' (public parameters)")
        m, k, epochs = parse_m(scheme["m"]), int(scheme["k"]), int(scheme["epochs"])
        require(len(enc) % epochs == 0, f"{len(enc)} encodings are not a whole number of epochs ({epochs})")
        n = len(enc) // epochs
        require(n >= max(2, k), f"too few encodings to cluster: {len(enc)} encodings over {epochs} epochs is {n} originals")
        require(epochs >= 2, "too few encodings to cluster: each original must be encoded at least twice (epochs >= 2)")
        n_sim = min(n, cfg.sim_max_n)
        require(len(aux) >= n_sim, f"the auxiliary data ({len(aux)} examples) must hold at least {n_sim} examples to simulate releases")
        if cfg.graph:
            for meth in self.methods:
                require(meth in SPARSE_CLUSTERINGS, f"clustering '{meth}' needs all pairs; on a k-NN graph use {', '.join(SPARSE_CLUSTERINGS)}")
        t = {}
        t0 = time.perf_counter()
        gen = torch.Generator().manual_seed(cfg.seed) if cfg.seed is not None else torch.Generator()
        if cfg.seed is not None:
            torch.manual_seed(cfg.seed)
        own = SecretGenerator(cfg.seed, warn=False)  # the attacker's keys
        bar = tqdm(total=2 + len(self.methods), desc="reconstruction attack", unit="stage", leave=False,
                   disable=not self.progress)
        bar.set_postfix_str("training the pair network")
        mu, clean, self.noise_groups = self._batch_noise_mu(aux.x, scheme), None, None
        if mu is not None:
            from .batch_noise import cancel_batch_noise

            enc, self.noise_groups = cancel_batch_noise(enc, mu)
            clean = lambda e: cancel_batch_noise(e, mu)[0]  # noqa: E731 (the same step on simulated releases)
        nets = self._train_networks(aux.x.float(), n_sim, m, k, own, gen, scheme=scheme, clean=clean)
        t["train_pair_network"] = time.perf_counter() - t0
        bar.update()
        bar.set_postfix_str(f"scoring pairs of {len(enc)} encodings")
        t0 = time.perf_counter()
        feats = features(enc)
        pairs = _PairGraph(feats, nets, cfg)
        bar.update()
        self.scores = pairs.logits
        self.graph_edges = pairs.edges
        t["score_pairs"] = time.perf_counter() - t0
        index = CosineIndex(view.candidates.x.abs()) if view.candidates is not None else None
        out = []
        size = k * epochs
        done: dict[str, list[torch.Tensor]] = {}
        for method in self.methods:
            bar.set_postfix_str(f"clustering: {method}")
            t1 = time.perf_counter()
            repaired = None
            if method == "paper-greedy":
                clusters = pairs.paper_greedy("mlp", n, k, size)
            elif method == "threshold":
                clusters = threshold_clusters(pairs.logits["factorised"], n, k, cfg.threshold)
            elif method == "clique":
                clusters = done.get("clique") or pairs.clique(n, k, size)
            else:  # nmf, from the clique groups (or the paper's greedy groups, with the factorised network)
                if cfg.nmf_seeds == "clique":
                    seeds = done["clique"] = done.get("clique") or pairs.clique(n, k, size)
                else:
                    seeds = pairs.paper_greedy("factorised", n, k, size)
                clusters, repaired = pairs.nmf(seeds, size, k)
            done[method] = clusters
            t_cl = time.perf_counter() - t1  # for nmf: includes its seeds when they were not run already
            t1 = time.perf_counter()
            slots, mask, lam0, cls = label_coefficients(clusters, y, len(enc))
            if cfg.solver == "alternating":
                rec = solve_alternating(enc, slots, mask, lam0, len(clusters), iters=cfg.ls_iters, restarts=cfg.ls_restarts,
                                        gen=torch.Generator().manual_seed(cfg.seed or 0))
            else:
                rec = solve_originals(enc, slots, mask, lam0, cls, len(clusters), steps=cfg.ls_steps, lr=cfg.ls_lr)
            t_ls = time.perf_counter() - t1
            sent = index.search(rec.abs(), 1)[1][:, 0] if index is not None and len(rec) else None
            out.append(ReconstructionResult(method, clusters, rec, sent, {**t, "cluster": t_cl, "least_squares": t_ls},
                                            repaired))
            bar.update()
        bar.close()
        return out

    def _batch_noise_mu(self, aux_x: torch.Tensor, scheme: dict) -> torch.Tensor | None:
        """``mu`` of the per-batch noise cancellation (:mod:`.batch_noise`), from the auxiliary data
        clipped by the public mechanism, when the config asks for the cancellation (by default whenever the scheme
        grant states Algorithm 1's per-batch reading); None: no cancellation."""
        from ...mechanisms.dp import mechanism_from_json
        from .batch_noise import mean_clean_encoding

        per_batch = scheme.get("dp_noise") == "per-batch"
        on = per_batch if self.config.cancel_batch_noise is None else self.config.cancel_batch_noise
        if not on:
            return None
        require(bool(scheme.get("dp")), "cancelling per-batch noise needs the release's DP mechanism (the scheme "
                                        "grant states none)")
        return mean_clean_encoding(aux_x, mechanism_from_json(scheme["dp"]).clip_rows)

    def _train_networks(self, aux_x: torch.Tensor, n_sim: int, m: float, k: int, own: SecretGenerator,
                        gen: torch.Generator, *, scheme: dict | None = None,
                        clean: Callable[[torch.Tensor], torch.Tensor] | None = None) -> dict[str, nn.Module]:
        """The pair networks the chosen clusterings need, and their accuracy on the attacker's simulated pairs
        (``train``) and on a fresh simulated release (``heldout``; balanced, as the training pairs).

        Noise-aware (``config.noise_aware``, by default whenever the scheme grant states a DP mechanism): the
        simulated releases carry the public mechanism's noise (:func:`simulate_pairs`); :attr:`noise_aware` says
        which attacker ran.
        """
        from dataclasses import replace

        from ...mechanisms.dp import mechanism_from_json
        from .paper import MLPConfig, pair_accuracy, train_pair_mlp

        cfg = self.config
        public = (scheme or {}).get("dp")
        self.noise_aware = bool(public) if cfg.noise_aware is None else cfg.noise_aware
        require(not self.noise_aware or bool(public), "a noise-aware attacker needs the release's DP mechanism "
                                                      "(the scheme grant states none)")
        noise = {"mechanism": mechanism_from_json(public), "noise": scheme.get("dp_noise", "per-encoding")} \
            if self.noise_aware else {}
        a, b, lab = simulate_pairs(aux_x, n_sim, m, k, cfg, own, gen, clean=clean, **noise)
        ha, hb, hl = simulate_pairs(aux_x, n_sim, m, k, replace(cfg, sim_releases=1, pairs_per_release=min(cfg.pairs_per_release, 20000)),
                                    own, gen, clean=clean, **noise)
        nets: dict[str, nn.Module] = {}
        self.pair_accuracy = {}
        if any(meth != "paper-greedy" for meth in self.methods):
            scorer, acc = train_scorer(a, b, lab, cfg, gen)
            nets["factorised"] = scorer
            self.pair_accuracy["factorised"] = {"train": round(acc, 4), "heldout": round(pair_accuracy(scorer, ha, hb, hl), 4)}
            self.pair_train_accuracy = acc
        if "paper-greedy" in self.methods:
            mlp = train_pair_mlp(a, b, lab, MLPConfig(cfg.mlp_hidden, cfg.mlp_lr, cfg.mlp_epochs), gen)
            nets["mlp"] = mlp
            self.pair_accuracy["mlp"] = {"train": round(pair_accuracy(mlp.logit, a, b, lab), 4),
                                         "heldout": round(pair_accuracy(mlp.logit, ha, hb, hl), 4)}
            if self.pair_train_accuracy is None:
                self.pair_train_accuracy = self.pair_accuracy["mlp"]["train"]
        return nets


class _PairGraph:
    """Pair scores of a release: all pairs (dense (N, N) logits) or a k-NN graph (``edges`` = (lo, hi))."""

    def __init__(self, feats: torch.Tensor, nets: dict[str, nn.Module], cfg: ReconstructionConfig) -> None:
        from . import sparse as rs

        self.feats, self.cfg, self.n_enc = feats, cfg, len(feats)
        self.edges = None
        self.logits: dict[str, object] = {}
        if cfg.graph:
            lo, hi, cos = rs.knn_graph(feats, cfg.graph)
            self.edges = (lo, hi)
            self.affinity = rs.sym_csr(lo, hi, np.maximum(cos, 0.0), len(feats))
            for name, net in nets.items():
                self.logits[name] = rs.score_edges(net, feats, lo, hi)
        else:
            for name, net in nets.items():
                self.logits[name] = net.score_all(feats, cfg.block)

    def paper_greedy(self, net: str, n: int, k: int, size: int) -> list[torch.Tensor]:
        from . import sparse as rs
        from .paper import dense_rows, paper_greedy_clusters

        logit = self.logits[net]
        if self.edges is None:
            prob = torch.sigmoid(logit)  # diagonal: sigmoid(-inf) = 0
            return paper_greedy_clusters(dense_rows(prob), self.n_enc, n, k, size, strength=prob.sum(1).double().numpy())
        lo, hi = self.edges
        P = rs.sym_csr(lo, hi, 1.0 / (1.0 + np.exp(-np.asarray(logit, dtype=np.float64))), self.n_enc)
        return paper_greedy_clusters(rs.csr_rows(P), self.n_enc, n, k, size, strength=np.asarray(P.sum(1)).ravel())

    def clique(self, n: int, k: int, size: int) -> list[torch.Tensor]:
        """Clique growth up to 1.25 x the group size (all pairs, or the cliques of the k-NN graph)."""
        from . import sparse as rs

        grow = int(round(size * 1.25))
        if self.edges is None:
            return clique_clusters(self.logits["factorised"], n, k, size=grow, threshold=self.cfg.threshold)
        lo, hi = self.edges
        return rs.clique_sparse(rs.sym_csr(lo, hi, np.asarray(self.logits["factorised"]), self.n_enc), n, k, grow,
                                self.cfg.threshold)

    def nmf(self, seeds: list[torch.Tensor], size: int, k: int) -> tuple[list[torch.Tensor], int]:
        """nmf from ``seeds``; then duplicate groups are re-seeded on under-covered encodings and nmf runs again
        for ``nmf_repair_iters`` (:mod:`.repair`), every group from its seed (``nmf_repair_start =
        "seeds"``) or only the re-seeded ones, the others continuing from the previous pass (``"warm"``), up to
        ``nmf_repair_rounds`` times. Returns the groups and how many were re-seeded (all rounds)."""
        from .repair import reseed_duplicates

        require(len(seeds) >= 1, "nmf clustering needs at least one seed group")
        H = self._nmf_factor(self._nmf_start(seeds), self.cfg.nmf_iters)
        groups, total = self._top(H, size), 0
        for _ in range(self.cfg.nmf_repair_rounds if self.cfg.nmf_repair_iters else 0):
            repaired, fresh = reseed_duplicates(groups, self.n_enc, k, size, self._affinity_row)
            if not fresh:
                break
            warm = dict(warm=H, fresh=fresh) if self.cfg.nmf_repair_start == "warm" else {}
            H = self._nmf_factor(self._nmf_start(repaired, **warm), self.cfg.nmf_repair_iters)
            groups, total = self._top(H, size), total + len(fresh)
        return groups, total

    def _nmf_start(self, seeds: list[torch.Tensor], **warm):
        from . import sparse as rs

        if self.edges is None:
            return nmf_start(self.n_enc, seeds, **warm)
        return rs.nmf_sparse_start(self.affinity, seeds, self.cfg.nmf_support, **warm)

    def _nmf_factor(self, H, iters: int):
        from . import sparse as rs

        if self.edges is None:
            return nmf_factor(self.feats, H, iters=iters, affinity=self._dense_affinity())
        return rs.nmf_sparse_factor(self.affinity, H, iters=iters)

    def _dense_affinity(self) -> torch.Tensor:
        """The all-pairs affinity, formed once for the first pass, the repair pass and the repair's rows."""
        if not hasattr(self, "_all_pairs"):
            self._all_pairs = all_pairs_affinity(self.feats)
        return self._all_pairs

    def _top(self, H, size: int) -> list[torch.Tensor]:
        from . import sparse as rs

        return top_members(H, size) if self.edges is None else rs.sparse_top_members(H, size)

    def _affinity_row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Encoding ``i``'s row of nmf's affinity ``max(0, cos)`` (all pairs, or its graph neighbours)."""
        if self.edges is None:
            return np.arange(self.n_enc), self._dense_affinity()[i].numpy()
        a, b = self.affinity.indptr[i], self.affinity.indptr[i + 1]
        return self.affinity.indices[a:b], self.affinity.data[a:b]
