"""Membership inference on a released model: was this sentence in the training set?

Threat (:data:`~privnlu.attacks.threat.MEMBERSHIP_THREAT`): the attacker queries the released model's logits,
knows the public training recipe (Kerckhoffs), holds candidate sentences and same-distribution data disjoint
from training. The recipe reaches the attack as a callable ``(x, labels) -> query``; this module never imports
the victim's training code.

* :func:`loss_scores`: Yeom et al. 2018, score = -CE(f(x), y);
* :func:`logit_confidence`: Carlini et al. 2022, phi(p_y) = log p_y - log(1 - p_y);
* :func:`lira_scores`: the likelihood-ratio test of Carlini et al. 2022 (online Eq. 4, and offline);
* :func:`membership_metrics`, :func:`top_n_reidentification`: how well the scores separate members.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ...errors import PrivnluError
from ...rng import SecretGenerator
from ...stats import clopper_pearson
from ..threat import Attack, AttackerView, Corpus, Grant

QueryFn = Callable[[torch.Tensor], torch.Tensor]
RecipeFn = Callable[[torch.Tensor, torch.Tensor], QueryFn]

_VAR_FLOOR = 1e-8  # a zero variance (identical reference scores) would divide by zero


# -- scores ---------------------------------------------------------------------------------------------
def _check_classification(logits: torch.Tensor, labels: torch.Tensor) -> None:
    if logits.ndim != 2 or logits.shape[1] < 2:
        raise PrivnluError(f"membership scores need (N, classes >= 2) logits, not shape {tuple(logits.shape)}; "
                           "regression models are out of scope")
    if labels.shape != (logits.shape[0],):
        raise PrivnluError(f"{logits.shape[0]} logit rows but labels of shape {tuple(labels.shape)}")


def logit_confidence(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """phi = log p_y - log(1 - p_y) = z_y - logsumexp_{j != y} z_j (Carlini et al. 2022, section IV-B), float64."""
    _check_classification(logits, labels)
    z = logits.detach().to(torch.float64)
    idx = labels.long().unsqueeze(1)
    z_y = z.gather(1, idx).squeeze(1)
    others = z.scatter(1, idx, float("-inf"))
    return z_y - torch.logsumexp(others, dim=1)


def loss_scores(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """-CE(f(x), y) per example (Yeom et al. 2018's loss attack; higher = more likely a member), float64."""
    _check_classification(logits, labels)
    z = logits.detach().to(torch.float64)
    return -torch.nn.functional.cross_entropy(z, labels.long(), reduction="none")


def _moments(values: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-candidate (count, mean, variance) over the masked references, and the pooled within-candidate variance."""
    m = mask.to(values.dtype)
    count = m.sum(0)
    mean = (values * m).sum(0) / count.clamp(min=1)
    sq = ((values - mean) ** 2 * m).sum(0)
    var = sq / count.clamp(min=1)
    dof = float((count - (count > 0).to(values.dtype)).sum())
    pooled = sq.sum() / dof if dof > 0 else torch.tensor(0.0, dtype=values.dtype)
    return count, mean, var, pooled.clamp(min=_VAR_FLOOR)


def lira_scores(target: torch.Tensor, reference: torch.Tensor, reference_in: torch.Tensor, *, online: bool = True,
                global_variance: bool = True) -> torch.Tensor:
    """LiRA (Carlini et al. 2022) on per-candidate confidences; higher = more likely a member.

    ``target`` (N,) are the target model's confidences, ``reference`` (R, N) the reference models', and
    ``reference_in`` (R, N) says which reference trained on which candidate. From them, per candidate,
    Gaussians N(mu_in, s_in^2) and N(mu_out, s_out^2) are fitted and

    * online (Eq. 4): log N(t; mu_in, s_in^2) - log N(t; mu_out, s_out^2);
    * offline: log Phi((t - mu_out) / s_out), the one-sided test against the OUT distribution.

    ``global_variance=True`` uses one pooled within-candidate variance per side (recommended with few
    references); otherwise each candidate's own variance, or the pooled one where it has fewer than 2 values.
    A candidate without IN references gets the offline score; one without OUT references the offline score
    against the population's OUT distribution (mean of all OUT values). Variances are floored at 1e-8.
    """
    t = target.detach().to(torch.float64)
    ref = reference.detach().to(torch.float64)
    inn = reference_in.bool()
    if ref.ndim != 2 or t.shape != (ref.shape[1],) or inn.shape != ref.shape:
        raise PrivnluError(f"lira: target {tuple(t.shape)}, reference {tuple(ref.shape)} and reference_in "
                           f"{tuple(inn.shape)} must be (N,), (R, N), (R, N)")
    if not bool((~inn).any()):
        raise PrivnluError("lira: no reference model was trained without a candidate; OUT statistics are undefined")
    n_out, mu_out, var_out, pool_out = _moments(ref, ~inn)
    n_in, mu_in, var_in, pool_in = _moments(ref, inn)
    if global_variance:
        var_out, var_in = pool_out.expand_as(t), pool_in.expand_as(t)
    else:
        var_out = torch.where(n_out >= 2, var_out, pool_out).clamp(min=_VAR_FLOOR)
        var_in = torch.where(n_in >= 2, var_in, pool_in).clamp(min=_VAR_FLOOR)
    no_out = n_out == 0
    if bool(no_out.any()):
        mu_out = torch.where(no_out, ref[~inn].mean(), mu_out)
        var_out = torch.where(no_out, pool_out, var_out)
    s_out = var_out.sqrt()
    offline = torch.special.log_ndtr((t - mu_out) / s_out)
    if not online:
        return offline
    normal_in = torch.distributions.Normal(mu_in, var_in.sqrt())
    normal_out = torch.distributions.Normal(mu_out, s_out)
    ratio = normal_in.log_prob(t) - normal_out.log_prob(t)
    return torch.where((n_in > 0) & ~no_out, ratio, offline)


# -- metrics --------------------------------------------------------------------------------------------
def membership_metrics(scores: torch.Tensor, is_member: torch.Tensor,
                       fpr_levels: tuple[float, ...] = (0.001, 0.01)) -> dict:
    """ROC AUC, TPR at each FPR level, balanced accuracy at the best threshold, and the class sizes.

    ``tpr_at_fpr_<level>`` is the largest TPR on the ROC curve with FPR <= level; it is ``None`` (unresolved)
    when there are fewer than 1/level non-members, since then no false positive fits under the level.
    """
    from scipy.stats import rankdata
    from sklearn.metrics import roc_auc_score, roc_curve

    s = torch.as_tensor(scores).detach().to(torch.float64).cpu().numpy()
    y = torch.as_tensor(is_member).bool().cpu().numpy()
    if s.shape != y.shape or s.ndim != 1:
        raise PrivnluError(f"membership metrics: scores {s.shape} and membership {y.shape} must be equal 1-d")
    if np.isnan(s).any():
        raise PrivnluError("membership metrics: the scores contain NaN")
    n_mem, n_non = int(y.sum()), int((~y).sum())
    if n_mem == 0 or n_non == 0:
        raise PrivnluError("membership metrics need both members and non-members")
    r = rankdata(s)  # same ROC as the scores, and finite where a score is +-inf
    fpr, tpr, _ = roc_curve(y, r)
    out: dict = {"auc": float(roc_auc_score(y, r))}
    for level in fpr_levels:
        ok = n_non >= int(np.ceil(1.0 / level - 1e-9))
        out[f"tpr_at_fpr_{level:g}"] = float(tpr[fpr <= level + 1e-12].max()) if ok else None
    out["balanced_accuracy"] = float(((tpr + 1.0 - fpr) / 2.0).max())
    out["n_members"], out["n_nonmembers"] = n_mem, n_non
    return out


def top_n_reidentification(scores: torch.Tensor, n_private: int) -> dict:
    """The attacker names its ``n_private`` highest-scoring candidates; the first ``n_private`` candidates are the
    private training sentences. Ties are broken against the attacker. Rates, interval and guess line in %."""
    s = torch.as_tensor(scores).detach().to(torch.float64).cpu().numpy()
    if not 0 < n_private <= len(s):
        raise PrivnluError(f"n_private must be in 1..{len(s)}, not {n_private}")
    order = np.lexsort((-np.arange(len(s)), -s))  # score descending, then the later (non-private) index first
    hits = int((order[:n_private] < n_private).sum())
    lo, hi = clopper_pearson(hits, n_private)
    return {"rate": 100.0 * hits / n_private, "identified": hits, "n_private": n_private,
            "ci95": (100.0 * float(lo), 100.0 * float(hi)), "random_guess": 100.0 * n_private / len(s)}


# -- attacks --------------------------------------------------------------------------------------------
def _labelled(view: AttackerView, name: str) -> Corpus:
    corpus: Corpus = view.need(name)
    if corpus.labels is None:
        raise PrivnluError(f"membership inference needs the labels of the {name} corpus")
    return corpus


def _confidence(query: QueryFn, corpus: Corpus) -> torch.Tensor:
    with torch.no_grad():
        return logit_confidence(query(corpus.x), corpus.labels)


class LossAttack(Attack):
    """Yeom et al. 2018: score each candidate by -CE of the released model; needs only query access."""

    name = "membership-loss"
    requires = frozenset({Grant.QUERY, Grant.CANDIDATES})

    def run(self, view: AttackerView) -> torch.Tensor:
        """Scores (N,) for the candidates, higher = more likely a member."""
        self.check(view)
        corpus = _labelled(view, "candidates")
        with torch.no_grad():
            return loss_scores(view.need("query")(corpus.x), corpus.labels)


class LiRA(Attack):
    """Carlini et al. 2022's likelihood-ratio attack with reference models trained by the public recipe.

    Online: the pool is the candidates plus the auxiliary data; each candidate is IN for exactly
    ``n_reference // 2`` reference models (random halves drawn from ``rng``, Carlini's balanced split), so each
    reference trains on about half the pool. Offline: references train on random halves of the auxiliary data
    only. Scores are :func:`lira_scores` on :func:`logit_confidence`.
    """

    name = "membership-lira"
    requires = frozenset({Grant.QUERY, Grant.TRAINING_RECIPE, Grant.CANDIDATES})

    def __init__(self, n_reference: int = 16, *, online: bool = True, global_variance: bool = True,
                 rng: SecretGenerator | None = None) -> None:
        if n_reference < 2:
            raise PrivnluError(f"LiRA needs at least 2 reference models, not {n_reference}")
        self.n_reference, self.online, self.global_variance = n_reference, online, global_variance
        self.rng = rng if rng is not None else SecretGenerator()

    def _halves(self, n: int) -> torch.Tensor:
        """(R, n) bool: each column has exactly R // 2 True entries at random rows."""
        order = self.rng.uniform((self.n_reference, n), dtype=torch.float64).argsort(dim=0)
        return order < self.n_reference // 2

    def run(self, view: AttackerView) -> torch.Tensor:
        """Scores (N,) for the candidates, higher = more likely a member."""
        self.check(view)
        cand = _labelled(view, "candidates")
        aux = _labelled(view, "auxiliary") if (not self.online or view.auxiliary is not None) else None
        recipe: RecipeFn = view.need("train_reference")
        parts = ([cand] if self.online else []) + ([aux] if aux is not None else [])
        pool_x = torch.cat([c.x for c in parts])
        pool_y = torch.cat([c.labels for c in parts])
        keep = self._halves(len(pool_x))
        n = len(cand)
        reference = torch.empty(self.n_reference, n, dtype=torch.float64)
        for r in range(self.n_reference):
            reference[r] = _confidence(recipe(pool_x[keep[r]], pool_y[keep[r]]), cand)
        reference_in = keep[:, :n] if self.online else torch.zeros(self.n_reference, n, dtype=torch.bool)
        target = _confidence(view.need("query"), cand)
        return lira_scores(target, reference, reference_in, online=self.online, global_variance=self.global_variance)
