"""Xie & Hong (2021)'s own pipeline run as fairly as we can: its vanilla-MLP pair network trained to convergence,
its greedy clustering with duplicate control, and oracle checks that isolate each step.

One release of ``n`` private examples, each encoded ``epochs`` times under TextHide (m, k), is attacked with

* the pair networks: the paper's vanilla MLP (:class:`~.paper.PairMLP`, settings
  :data:`PAPER_METHOD_MLP`) and privnlu's factorised network (:class:`~.attack.PairScorer`), both
  trained on pairs the attacker simulates with its own keys from ``pair_data``
  (:data:`~.paper.PAIR_DATA`: a disjoint auxiliary set, or the paper's threat model, a sample of
  the dataset that holds the private examples among others);
* the clusterings: the paper's greedy rule as Table 1's records ran it (``paper-greedy``,
  :func:`~.paper.paper_greedy_clusters`) and with duplicate control (``fair-greedy``,
  :func:`~.paper.fair_greedy_clusters`), each on the similarities ``s = sigmoid(logit)`` of
  the MLP, of the factorised network, and on the **true** share matrix (``s = 1`` where two encodings share an
  original, else 0: a perfect pair network; an oracle only the auditor can run);
* then Table 1's label coefficients, least squares and scoring
  (:func:`~.attack.label_coefficients`, :func:`~.attack.solve_alternating`,
  :func:`~.audit.score_reconstruction`).

Each network's pair accuracy is reported on balanced held-out simulated pairs (as the paper's "94 %" reads,
half sharing) and on the attacked release's natural mix of pairs (all pairs; mostly non-sharing at small k).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace

import torch

from ...errors import require
from ...mechanisms.release import hide_dataset
from ...mechanisms.texthide import TextHide, m_label
from ...rng import SecretGenerator
from ..conditions import Condition, one_hot
from .audit import score_reconstruction
from .attack import (ReconstructionConfig, features, label_coefficients, membership, simulate_pairs, solve_alternating,
                     train_scorer)
from .paper import (PAIR_DATA, MLPConfig, dense_rows, fair_greedy_clusters, pair_accuracy, paper_greedy_clusters,
                    train_pair_mlp)

#: the pair MLP trained until it stops improving (ours): wider than Table 1's records' (128, 32), a cosine
#: schedule with warm-up at the paper's peak learning rate 0.01 (Adam), more epochs
PAPER_METHOD_MLP = MLPConfig(hidden=(256, 64), lr=0.01, epochs=6, batch_size=512, schedule="cosine")
SCORERS = ("mlp", "factorised", "true")
RULES = ("paper-greedy", "fair-greedy")


@dataclass(frozen=True)
class PaperMethodConfig:
    """The attacker's settings for :func:`paper_method_audit` (its own randomness: ``seed``)."""

    pair_data: str = "private-distribution"
    mlp: MLPConfig = PAPER_METHOD_MLP
    sim_releases: int = 4  # simulated releases to draw training pairs from
    sim_epochs: int = 20  # encodings per simulated example
    pairs_per_release: int = 30000  # half sharing an original, half not
    heldout_pairs: int = 20000
    repair_rounds: int = 5  # fair-greedy's duplicate control
    ls_iters: int = 60
    ls_restarts: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        require(self.pair_data in PAIR_DATA, f"pair data is {', '.join(PAIR_DATA)}, not '{self.pair_data}'")
        for name in ("sim_releases", "sim_epochs", "pairs_per_release", "heldout_pairs", "ls_iters", "ls_restarts"):
            require(getattr(self, name) >= 1, f"paper method: {name} must be >= 1")
        require(self.repair_rounds >= 0, "paper method: repair_rounds must be >= 0")

    def to_json(self) -> dict:
        d = asdict(self)
        d["mlp"] = {**d["mlp"], "hidden": list(self.mlp.hidden)}
        return d


def release_pair_accuracy(logits: torch.Tensor, share: torch.Tensor) -> dict:
    """Pair accuracy of ``logit > 0`` on all pairs ``i < j`` of a release: ``natural`` (the release's own mix),
    ``balanced`` (mean of the true-positive and true-negative rates), and the share of sharing pairs."""
    iu = torch.triu_indices(len(share), len(share), 1)
    pred = logits[iu[0], iu[1]] > 0
    truth = share[iu[0], iu[1]]
    tpr = float(pred[truth].float().mean()) if truth.any() else float("nan")
    tnr = float((~pred[~truth]).float().mean()) if (~truth).any() else float("nan")
    return {"natural_accuracy": round(float((pred == truth).float().mean()), 4),
            "balanced_accuracy": round(0.5 * (tpr + tnr), 4), "true_positive_rate": round(tpr, 4),
            "true_negative_rate": round(tnr, 4), "sharing_pairs": round(float(truth.float().mean()), 4)}


def paper_method_audit(private_x: torch.Tensor, labels: torch.Tensor, aux_x: torch.Tensor, cond: Condition,
                       defender: SecretGenerator, *, epochs: int, num_labels: int, config: PaperMethodConfig,
                       log=lambda s: None) -> dict:
    """Release ``private_x`` ``epochs`` times under ``cond`` (one batch), attack it with every scorer x rule
    (module docstring), and score each with the release key."""
    n, cfg = len(private_x), config
    require(n >= max(2, cond.k) and epochs >= 2, "paper method: need at least k private examples and 2 epochs")
    hider = TextHide(cond.m, cond.k, dim=private_x.shape[1], rng=defender)
    payload, key = hide_dataset(hider, private_x, one_hot(labels, num_labels), epochs=epochs, batch_size=n)
    member = membership(key.partners, n, key.public)
    share = (member @ member.T) > 0
    share.fill_diagonal_(False)
    # the attacker: its own keys and randomness; pairs from its declared data
    t0 = time.perf_counter()
    pool = aux_x if cfg.pair_data == "auxiliary" else torch.cat([aux_x, private_x])
    pool = pool[torch.randperm(len(pool), generator=torch.Generator().manual_seed(cfg.seed))]
    gen = torch.Generator().manual_seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    own = SecretGenerator(cfg.seed + 10_000, warn=False)
    sim = ReconstructionConfig(sim_releases=cfg.sim_releases, sim_epochs=cfg.sim_epochs,
                               pairs_per_release=cfg.pairs_per_release, seed=cfg.seed)
    a, b, y = simulate_pairs(pool, min(n, len(pool)), cond.m, cond.k, sim, own, gen)
    ha, hb, hy = simulate_pairs(pool, min(n, len(pool)), cond.m, cond.k,
                                replace(sim, sim_releases=1, pairs_per_release=cfg.heldout_pairs), own, gen)
    t_sim = time.perf_counter() - t0
    nets, acc, seconds = {}, {}, {"simulate_pairs": round(t_sim, 1)}
    t0 = time.perf_counter()
    mlp = train_pair_mlp(a, b, y, cfg.mlp, gen)
    seconds["train_mlp"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    scorer, _ = train_scorer(a, b, y, sim, gen)
    seconds["train_factorised"] = round(time.perf_counter() - t0, 1)
    feats = features(payload.x)
    t0 = time.perf_counter()
    for name, net, fn in (("mlp", mlp, mlp.logit), ("factorised", scorer, scorer)):
        nets[name] = net.score_all(feats)
        acc[name] = {"train": round(pair_accuracy(fn, a, b, y), 4), "heldout_balanced": round(pair_accuracy(fn, ha, hb, hy), 4),
                     "release": release_pair_accuracy(nets[name], share)}
    seconds["score_pairs"] = round(time.perf_counter() - t0, 1)
    log("    pair accuracy (held-out balanced / release natural): " + ", ".join(
        f"{k} {v['heldout_balanced']:.3f} / {v['release']['natural_accuracy']:.3f}" for k, v in acc.items()))
    sims = {name: torch.sigmoid(lg) for name, lg in nets.items()}  # diagonal: sigmoid(-inf) = 0
    sims["true"] = share.float()
    size = cond.k * epochs
    ls_gen_seed = cfg.seed
    methods = {}
    for scorer_name in SCORERS:
        P = sims[scorer_name]
        for rule in RULES:
            t0 = time.perf_counter()
            if rule == "paper-greedy":
                groups = paper_greedy_clusters(dense_rows(P), len(P), n, cond.k, size, strength=P.sum(1).double().numpy())
            else:
                groups = fair_greedy_clusters(P.numpy(), n, cond.k, size, repair_rounds=cfg.repair_rounds)
            t_cl = time.perf_counter() - t0
            t0 = time.perf_counter()
            slots, mask, lam0, _ = label_coefficients(groups, payload.y.float(), len(payload.x))
            rec = solve_alternating(payload.x, slots, mask, lam0, len(groups), iters=cfg.ls_iters,
                                    restarts=cfg.ls_restarts, gen=torch.Generator().manual_seed(ls_gen_seed))
            s = score_reconstruction(rec, groups, member, private_x)
            s["seconds"] = {"cluster": round(t_cl, 2), "least_squares": round(time.perf_counter() - t0, 2)}
            methods[f"{rule}/{scorer_name}"] = s
            log(f"    {rule}/{scorer_name}: success {s['success']:.0f} %, originals found {s['originals_found']}")
    return {**cond.to_json(), "m": m_label(cond.m), "n_private": n, "epochs": epochs, "n_encodings": len(payload.x),
            "pair_accuracy": acc, "methods": methods, "seconds": seconds}
