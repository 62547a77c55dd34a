"""Membership inference: scores, LiRA, the loss attack, metrics and the membership threat model."""

import itertools

import pytest
import torch

from privnlu.attacks.membership.inference import (LiRA, LossAttack, lira_scores, logit_confidence, loss_scores,
                                                  membership_metrics, top_n_reidentification)
from privnlu.attacks.threat import MEMBERSHIP_THREAT, AttackerView, Corpus, Grant, Capabilities
from privnlu.errors import PrivnluError
from privnlu.mechanisms import TextHide
from privnlu.rng import SecretGenerator, seeded_torch

DIM = 64


# -- helpers ----------------------------------------------------------------------------------------------
def gaussian_rows(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """n random 64-d Gaussian rows with random binary labels (nothing to learn but memorisation)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, DIM, generator=g), torch.randint(0, 2, (n,), generator=g)


def make_recipe(base_seed: int):
    """The public recipe: a 64-256-2 MLP, full-batch Adam, 150 steps (fits random labels); each call a new init."""
    seeds = itertools.count(base_seed)

    def train(x: torch.Tensor, y: torch.Tensor):
        with seeded_torch(next(seeds)):
            model = torch.nn.Sequential(torch.nn.Linear(DIM, 256), torch.nn.ReLU(), torch.nn.Linear(256, 2))
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        for _ in range(150):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        model.eval()
        return lambda rows: model(rows).detach()

    return train


def corpus(x: torch.Tensor, y: torch.Tensor, tag: str) -> Corpus:
    return Corpus([f"{tag}{i}" for i in range(len(x))], x, y)


def membership_view(target_x, target_y, cand_x, cand_y, aux_x, aux_y, recipe_seed: int) -> AttackerView:
    recipe = make_recipe(recipe_seed)
    query = recipe(target_x, target_y)
    return AttackerView(MEMBERSHIP_THREAT, candidates=corpus(cand_x, cand_y, "c"),
                        auxiliary=corpus(aux_x, aux_y, "a"), query=query, train_reference=recipe)


# -- scores -----------------------------------------------------------------------------------------------
def test_logit_confidence_is_the_logit_of_p_y_and_stable():
    g = torch.Generator().manual_seed(0)
    logits, labels = torch.randn(50, 5, generator=g) * 3, torch.randint(0, 5, (50,), generator=g)
    p = torch.softmax(logits.double(), 1).gather(1, labels[:, None]).squeeze(1)
    assert torch.allclose(logit_confidence(logits, labels), torch.log(p / (1 - p)), atol=1e-5)
    huge = torch.tensor([[1e4, -1e4, 0.0], [-3e4, 3e4, 2e4]])
    phi = logit_confidence(huge, torch.tensor([0, 0]))
    assert torch.isfinite(phi).all() and phi[0] == pytest.approx(1e4, rel=1e-6) and phi[1] == pytest.approx(-6e4)
    assert torch.allclose(loss_scores(logits, labels), torch.log(p), atol=1e-6)
    with pytest.raises(PrivnluError, match="regression"):
        logit_confidence(torch.randn(4, 1), torch.zeros(4, dtype=torch.long))


def synthetic_references(seed: int, n: int = 400, r: int = 16):
    """Per-candidate OUT means, IN = OUT + 2, unit noise; targets 0..n/2 drawn from IN, the rest from OUT."""
    g = torch.Generator().manual_seed(seed)
    mu_out = torch.randn(n, generator=g) * 3
    ref_in = torch.rand(r, n, generator=g) < 0.5
    ref = mu_out + 2.0 * ref_in + torch.randn(r, n, generator=g)
    member = torch.arange(n) < n // 2
    target = mu_out + 2.0 * member + torch.randn(n, generator=g)
    return target, ref, ref_in, member


def test_lira_scores_rank_in_targets_above_out_targets():
    target, ref, ref_in, member = synthetic_references(1)
    for online, global_variance in itertools.product((True, False), (True, False)):
        s = lira_scores(target, ref, ref_in, online=online, global_variance=global_variance)
        assert torch.isfinite(s).all()
        # the optimal test has AUC Phi(2 / sqrt 2) = 0.92; estimated Gaussians and 400 candidates: >= 0.8
        assert membership_metrics(s, member)["auc"] >= 0.8, (online, global_variance)


def test_lira_falls_back_to_offline_without_in_references_and_guards_zero_variance():
    target, ref, ref_in, _ = synthetic_references(2, n=50, r=8)
    ref_in[:, 0] = False  # candidate 0: no IN reference
    ref_in[:, 1] = True  # candidate 1: no OUT reference
    on = lira_scores(target, ref, ref_in, online=True)
    off = lira_scores(target, ref, ref_in, online=False)
    assert on[0] == off[0] and torch.isfinite(on).all() and torch.isfinite(off).all()
    flat = torch.zeros(8, 3)  # identical reference scores: zero variance everywhere
    for global_variance in (True, False):
        assert torch.isfinite(lira_scores(torch.tensor([0.0, 1.0, -1.0]), flat, torch.rand(8, 3) < 0.5,
                                          global_variance=global_variance)).all()
    with pytest.raises(PrivnluError, match="OUT"):
        lira_scores(target, ref, torch.ones_like(ref_in))


# -- metrics ----------------------------------------------------------------------------------------------
def test_membership_metrics_perfect_separator_and_unresolved_level():
    scores = torch.cat([torch.ones(50), torch.zeros(500)])
    member = torch.arange(550) < 50
    m = membership_metrics(scores, member)
    assert m["auc"] == 1.0 and m["tpr_at_fpr_0.01"] == 1.0 and m["balanced_accuracy"] == 1.0
    assert m["tpr_at_fpr_0.001"] is None and (m["n_members"], m["n_nonmembers"]) == (50, 500)
    m = membership_metrics(torch.cat([torch.ones(50), torch.zeros(1000)]), torch.arange(1050) < 50)
    assert m["tpr_at_fpr_0.001"] == 1.0
    # 100 non-members at 0..99; 5 members above all of them, 5 below: TPR 0.5 at FPR <= 1 %, AUC 0.5
    scores = torch.cat([torch.tensor([200.0] * 5 + [-1.0] * 5), torch.arange(100.0)])
    m = membership_metrics(scores, torch.arange(110) < 10)
    assert m["tpr_at_fpr_0.01"] == 0.5 and m["auc"] == pytest.approx(0.5) and m["balanced_accuracy"] == 0.75


def test_top_n_reidentification_counts_private_hits():
    res = top_n_reidentification(torch.tensor([5.0, 1.0, 4.0, 3.0, 0.0, 2.0]), 3)  # top 3: 0, 2, 3 -> 2 hits
    assert res["identified"] == 2 and res["rate"] == pytest.approx(200 / 3) and res["random_guess"] == 50.0
    assert res["ci95"][0] < res["rate"] < res["ci95"][1]
    assert top_n_reidentification(torch.zeros(4), 2)["identified"] == 0  # ties go against the attacker


# -- attacks on a trained model -----------------------------------------------------------------------------
def test_lira_and_loss_attack_find_members_of_an_overfit_model():
    x, y = gaussian_rows(400, seed=10)
    members, aux = slice(0, 100), slice(300, 400)  # candidates 0..299: 100 members, 200 fresh non-members
    view = membership_view(x[members], y[members], x[:300], y[:300], x[aux], y[aux], recipe_seed=100)
    acc = (view.query(x[members]).argmax(1) == y[members]).float().mean()
    assert acc == 1.0  # the target memorised its random labels
    is_member = torch.arange(300) < 100
    lira = LiRA(8, rng=SecretGenerator(7, warn=False)).run(view)
    loss = LossAttack().run(view)
    m_lira, m_loss = membership_metrics(lira, is_member), membership_metrics(loss, is_member)
    assert m_lira["auc"] >= 0.9, m_lira  # 0.94 at this seed, 0.95-0.97 over six other seeds
    assert m_loss["auc"] >= 0.8, m_loss  # 0.94 at this seed
    top = top_n_reidentification(lira, 100)
    assert top["ci95"][0] > top["random_guess"] + 20, top  # random naming finds 33 %


def test_no_members_means_chance_level():
    x, y = gaussian_rows(1300, seed=20)
    view = membership_view(x[1200:], y[1200:], x[:1000], y[:1000], x[1000:1200], y[1000:1200], recipe_seed=200)
    label = torch.arange(1000) < 500  # nominal "members": none were trained on
    for scores in (LiRA(8, rng=SecretGenerator(8, warn=False)).run(view), LossAttack().run(view)):
        m = membership_metrics(scores, label)
        assert abs(m["auc"] - 0.5) <= 0.1, m  # null AUC sd = sqrt(1001 / (12 * 500 * 500)) = 0.018: 5.5 sd
        assert m["tpr_at_fpr_0.01"] <= 0.1, m  # null expectation 0.01


def test_offline_lira_uses_auxiliary_references_only():
    x, y = gaussian_rows(400, seed=30)
    view = membership_view(x[:100], y[:100], x[:200], y[:200], x[200:], y[200:], recipe_seed=300)
    s = LiRA(8, online=False, rng=SecretGenerator(9, warn=False)).run(view)
    # offline is weaker than online (Carlini et al. 2022, Fig. 9); 0.84 at this seed, 0.84-0.91 over six seeds
    assert torch.isfinite(s).all() and membership_metrics(s, torch.arange(200) < 100)["auc"] >= 0.75


# -- threat model -------------------------------------------------------------------------------------------
def test_views_refuse_ungranted_fields_and_key_material():
    assert MEMBERSHIP_THREAT.grants == frozenset({Grant.QUERY, Grant.TRAINING_RECIPE, Grant.AUXILIARY,
                                                  Grant.CANDIDATES})
    x, y = gaussian_rows(10, seed=40)
    no_recipe = Capabilities("query-only", frozenset({Grant.QUERY, Grant.CANDIDATES}))
    with pytest.raises(PrivnluError, match="'train_reference' is not granted"):
        AttackerView(no_recipe, candidates=corpus(x, y, "c"), query=lambda r: r, train_reference=lambda a, b: None)
    view = AttackerView(no_recipe, candidates=corpus(x, y, "c"), query=lambda r: r[:, :2])
    with pytest.raises(PrivnluError, match="needs the threat model to grant: training_recipe"):
        LiRA(4, rng=SecretGenerator(0, warn=False)).run(view)
    assert LossAttack().run(view).shape == (10,)
    with pytest.raises(PrivnluError, match="not granted"):
        AttackerView(Capabilities("c", frozenset({Grant.CANDIDATES})), candidates=corpus(x, y, "c"), query=len)
    hider = TextHide(4, 2, dim=4, rng=SecretGenerator(0, warn=False))
    for bad in (dict(query=hider), dict(train_reference=hider)):
        with pytest.raises(PrivnluError, match="key material"):
            AttackerView(MEMBERSHIP_THREAT, **bad)
