"""The audit's one leakage scale, and an empirical epsilon for every threat.

**Advantage over chance.** A threat names ``n`` candidates as private (members) among ``n + D`` and re-identifies a
share ``r`` (%) of the ``n`` private sentences; naming ``n`` candidates at random re-identifies ``c = 100 n / (n +
D)`` % in expectation, the threat's chance line. Threats differ in ``D``, so the audit compares them on

    A = 100 (r - c) / (100 - c)                       (0: random guessing; 100: every private sentence named)

with the 95 % interval of ``r`` (Clopper-Pearson over the ``n`` sentences) mapped through the same affine map (``c``
is fixed by the design, not estimated). A threat is **at chance** when that interval reaches 0.

**Empirical epsilon.** Each of a threat's decisions "this candidate is private" is a test of membership. An
(epsilon, delta)-DP release bounds every such test (Kairouz et al. 2015; the audits of Jagielski et al. 2020 and
Nasr et al. 2021):

    epsilon >= ln((1 - delta - FNR) / FPR),

so the upper ends of 95 % Clopper-Pearson intervals of the false-negative rate (private sentences not named) and
the false-positive rate (same-distribution non-members named) give a 95 % lower bound on epsilon
(:func:`privnlu.attacks.privacy_audit.mechanism.epsilon_bound`). A threat that ranks its candidates (membership
inference) is read at a declared set of decision sizes (:data:`DECISION_FRACTIONS` of ``n``), each at a Bonferroni-corrected
confidence, so that the best of them still holds at 95 %. The bound is an estimate, not a proof: the candidates are
one seeded draw, not independent trials as the one-run theorem of Steinke et al. 2023 requires. A bound above a
scheme's formal epsilon refutes the claim (or the accounting behind it) at that confidence.
"""

from __future__ import annotations

import numpy as np
import torch

from ..attacks.privacy_audit.mechanism import epsilon_bound
from ..stats import CONFIDENCE

#: the decision sizes at which a ranking threat is read: name the top ``round(f n)`` candidates, f in this set
DECISION_FRACTIONS = (0.1, 0.25, 0.5, 1.0)


def chance_share(n: int, pool: int) -> float:
    """The share (%) of ``n`` private sentences that ``n`` names drawn at random from ``pool`` candidates hit."""
    return 100.0 * n / pool


def advantage(rate: float, chance: float) -> float:
    """``100 (rate - chance) / (100 - chance)``: 0 at chance, 100 when every private sentence is named (rates in %)."""
    return 100.0 * (rate - chance) / (100.0 - chance) if chance < 100.0 else 0.0


def on_scale(rate: float, ci95: tuple[float, float] | list[float], chance: float) -> dict:
    """The threat's advantage over its chance line, its 95 % interval, and whether it is at chance."""
    lo, hi = advantage(ci95[0], chance), advantage(ci95[1], chance)
    return {"chance": round(chance, 3), "advantage": round(advantage(rate, chance), 2),
            "advantage_ci95": [round(lo, 2), round(hi, 2)], "at_chance": bool(lo <= 0.0)}


def decision_epsilon(tp: int, n_pos: int, fp: int, n_neg: int, delta: float, tests: int = 1) -> float:
    """The lower bound on epsilon of one decision rule with ``tp`` of ``n_pos`` members and ``fp`` of ``n_neg``
    non-members named, at 95 % confidence shared by ``tests`` rules (Bonferroni)."""
    if n_pos <= 0 or n_neg <= 0:
        return 0.0
    confidence = 1.0 - (1.0 - CONFIDENCE) / tests
    return float(epsilon_bound(fp, n_pos - tp, n_neg, n_pos, delta, confidence))


def release_epsilon(tp: int, n_pos: int, fp: int, n_neg: int, delta: float) -> dict:
    """The empirical epsilon of a threat that names a set once (the release attacks): one decision rule."""
    return {"epsilon_lb": round(decision_epsilon(tp, n_pos, fp, n_neg, delta), 3), "delta": delta,
            "named_members": tp, "members": n_pos, "named_nonmembers": fp, "nonmembers": n_neg, "rules": 1,
            "confidence": CONFIDENCE}


def ranking_epsilon(scores: torch.Tensor, is_member: torch.Tensor, delta: float,
                    fractions: tuple[float, ...] = DECISION_FRACTIONS) -> dict:
    """The empirical epsilon of a threat that ranks candidates (higher score: more likely a member): the best of the
    rules "name the top ``round(f n)``" over ``fractions``, each at the Bonferroni-corrected confidence. Ties are
    broken against the attacker (a non-member first)."""
    s = torch.as_tensor(scores).detach().to(torch.float64).cpu().numpy()
    member = torch.as_tensor(is_member).bool().cpu().numpy()
    n_pos, n_neg = int(member.sum()), int((~member).sum())
    order = np.lexsort((member.astype(np.int64), -s))  # score descending; among equal scores a non-member first
    ranked = member[order]
    sizes = sorted({max(1, round(f * n_pos)) for f in fractions})
    best = {"epsilon_lb": 0.0, "named": 0, "named_members": 0}
    for k in sizes:
        tp = int(ranked[:k].sum())
        eps = decision_epsilon(tp, n_pos, k - tp, n_neg, delta, tests=len(sizes))
        if eps > best["epsilon_lb"]:
            best = {"epsilon_lb": eps, "named": k, "named_members": tp}
    return {"epsilon_lb": round(best["epsilon_lb"], 3), "delta": delta, "named_members": best["named_members"],
            "members": n_pos, "named_nonmembers": best["named"] - best["named_members"], "nonmembers": n_neg,
            "rules": len(sizes), "confidence": CONFIDENCE}
