"""d_chi noise and the token/text/sequence mechanisms: statistical tests at fixed seeds, stated tolerances."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from privnlu.errors import PrivnluError
from privnlu.mechanisms.dchi import HNSWIndex, TokenSpace, dchi_noise, m_rep, m_seq, m_txt, special_token_mask
from privnlu.rng import SecretGenerator

ALPHA = 0.01  # KS significance level used throughout; each test uses its own fixed seed


def gen(seed: int) -> SecretGenerator:
    return SecretGenerator(seed, warn=False)


@pytest.fixture(scope="module")
def tiny_space(tiny_model):
    from privnlu.models import load_encoder

    enc = load_encoder(tiny_model)
    return TokenSpace.from_model(enc.model, enc.tokenizer), enc.tokenizer


@pytest.mark.parametrize("dim,eta", [(384, 100.0), (768, 175.0), (2, 3.0)])
def test_noise_norm_is_gamma(dim, eta):
    """||N|| ~ Gamma(shape=dim, scale=1/eta): KS p-value > 0.01 and |mean - dim/eta| < 4 standard errors."""
    count = 20000
    r = dchi_noise(count, dim, eta, gen(dim), dtype=torch.float64).norm(dim=1).numpy()
    assert stats.kstest(r, stats.gamma(a=dim, scale=1 / eta).cdf).pvalue > ALPHA
    se = np.sqrt(dim) / eta / np.sqrt(count)  # sd of Gamma(n, 1/eta) is sqrt(n)/eta
    assert abs(r.mean() - dim / eta) < 4 * se


def test_noise_ks_has_power_against_known_slips():
    """The same KS test rejects the two classic slips, so the test above can fail."""
    dim, eta, count = 384, 100.0, 20000
    rng = gen(7)
    g = rng.normal((count, dim), dtype=torch.float64)
    u = g / g.norm(dim=1, keepdim=True)
    target = stats.gamma(a=dim, scale=1 / eta).cdf
    # slip 1: radius from a 1-d Laplace / exponential with the same mean
    r_exp = -np.log(rng.uniform(count, dtype=torch.float64).numpy()) * dim / eta
    assert stats.kstest(r_exp, target).pvalue < 1e-6
    # slip 2: a point uniform inside the ball of radius drawn correctly (direction inside the ball)
    r_ok = torch.from_numpy(stats.gamma(a=dim, scale=1 / eta).ppf(rng.uniform(count, dtype=torch.float64).numpy()))
    inside = u * r_ok.unsqueeze(1) * rng.uniform(count, dtype=torch.float64).pow(1 / dim).unsqueeze(1)
    assert stats.kstest(inside.norm(dim=1).numpy(), target).pvalue < 1e-6


@pytest.mark.parametrize("dim", [2, 16, 384])
def test_noise_directions_are_isotropic(dim):
    """u = N/||N||: each coordinate has mean 0 (4 s.e.), E[u u^T] = I/dim (4 s.e.), and u_1 has the sphere's law."""
    count = 20000
    n = dchi_noise(count, dim, 10.0, gen(100 + dim), dtype=torch.float64)
    u = n / n.norm(dim=1, keepdim=True)
    se_mean = np.sqrt(1 / dim / count)
    assert u.mean(0).abs().max().item() < 4.5 * se_mean
    cov = (u.T @ u / count).numpy()
    se_diag = np.sqrt(2.0 / (dim * (dim + 2)) / count) if dim > 1 else 0  # var(u_i^2) <= 2/(n(n+2))
    assert np.abs(np.diag(cov) - 1 / dim).max() < 5 * max(se_diag, 1e-12) + 1e-12
    # (u_1 + 1)/2 ~ Beta((n-1)/2, (n-1)/2) for a uniform direction on S^{n-1}
    a = (dim - 1) / 2
    if dim == 2:  # arcsine law; check the angle instead
        ang = torch.atan2(u[:, 1], u[:, 0]).numpy()
        assert stats.kstest(ang, stats.uniform(loc=-np.pi, scale=2 * np.pi).cdf).pvalue > ALPHA
    else:
        assert stats.kstest((u[:, 0].numpy() + 1) / 2, stats.beta(a, a).cdf).pvalue > ALPHA


def test_noise_uses_only_the_secret_generator():
    torch.manual_seed(0)
    np.random.seed(0)
    before_t, before_np = torch.random.get_rng_state().clone(), np.random.get_state()[1].copy()
    a = dchi_noise(10, 8, 5.0, gen(3))
    b = dchi_noise(10, 8, 5.0, gen(3))
    assert torch.equal(a, b)
    assert torch.equal(torch.random.get_rng_state(), before_t) and np.array_equal(np.random.get_state()[1], before_np)
    assert not torch.equal(dchi_noise(10, 8, 5.0, SecretGenerator()), dchi_noise(10, 8, 5.0, SecretGenerator()))


@pytest.mark.parametrize("eta", [0, -1, float("nan"), float("inf")])
def test_bad_eta(eta):
    with pytest.raises(PrivnluError, match="eta must be a positive"):
        dchi_noise(3, 4, eta, gen(0))


def test_special_tokens_mask(tiny_space):
    space, tok = tiny_space
    ids = tok.convert_tokens_to_ids(["[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]", "[unused0]", "[unused993]"])
    assert space.special[ids].all()
    regular = tok.convert_tokens_to_ids(["[", "]", "the", "##ing", "a"])
    assert not space.special[regular].any()
    assert int(space.special.sum()) == 5 + 994  # bert-base-uncased: 5 special + 994 [unused*]


def test_exact_nearest_matches_brute_force(tiny_space):
    space, _ = tiny_space
    q = space.regular[:300] + 0.3 * torch.from_numpy(np.random.default_rng(0).standard_normal((300, space.dim))).float()
    d = torch.cdist(q.double(), space.regular.double())
    expect = space.regular_ids[d.argmin(1)]
    assert torch.equal(space.nearest(q, chunk=64), expect)


def test_m_txt_at_huge_eta_returns_input(tiny_space):
    space, tok = tiny_space
    enc = tok(["the quick brown fox jumps over the lazy dog", "privacy [MASK] matters"], padding=True, return_tensors="pt")
    out = m_txt(space, enc["input_ids"], 1e7, gen(1), enc["attention_mask"])
    assert torch.equal(out, enc["input_ids"])


def test_m_txt_changes_tokens_at_small_eta_and_keeps_specials(tiny_space):
    space, tok = tiny_space
    enc = tok(["a [UNK] b [unused3] c [MASK] d"] * 50, ["second part"] * 50, padding="max_length", max_length=24, return_tensors="pt")
    ids, am = enc["input_ids"], enc["attention_mask"]
    out = m_txt(space, ids, 1.0, gen(2), am)
    special_pos = space.special[ids] | ~am.bool()
    assert torch.equal(out[special_pos], ids[special_pos])  # [CLS] [SEP] [PAD] [UNK] [MASK] [unused3] untouched
    assert not space.special[out[~special_pos]].any()  # never chosen as an output
    assert (out[~special_pos] != ids[~special_pos]).float().mean() > 0.9  # eta = 1 in 32-d: almost always changed


def test_m_rep_adds_noise_only_at_regular_positions(tiny_space):
    space, tok = tiny_space
    enc = tok(["hello [MASK] world"], padding="max_length", max_length=8, return_tensors="pt")
    ids, am = enc["input_ids"], enc["attention_mask"]
    eta = 4.0
    out = m_rep(space, ids, eta, gen(3), am)
    diff = (out - space.embeddings[ids]).norm(dim=-1)
    reg = ~space.special[ids] & am.bool()
    assert (diff[~reg] == 0).all() and (diff[reg] > 0).all()


def test_m_rep_mean_noise_norm(tiny_space):
    space, _ = tiny_space
    ids = space.regular_ids[:4000]
    diff = (m_rep(space, ids, 20.0, gen(4)) - space.embeddings[ids]).norm(dim=-1)
    assert abs(diff.mean().item() - space.dim / 20.0) < 4 * np.sqrt(space.dim) / 20.0 / np.sqrt(len(ids))


def test_m_seq_noise():
    reps = torch.zeros(5000, 48)
    out = m_seq(reps, 12.0, gen(5))
    r = out.norm(dim=1).numpy()
    assert stats.kstest(r, stats.gamma(a=48, scale=1 / 12.0).cdf).pvalue > ALPHA


def test_hnsw_agrees_with_exact_search(tiny_space):
    space, _ = tiny_space
    # noise of about half the table's nearest-neighbour distance (the tiny table has norms ~0.11);
    # far-out queries (much larger noise) get much lower recall: see docs/design/dchi.md
    noisy = space.regular[:500] + dchi_noise(500, space.dim, space.dim / 0.05, gen(6))
    exact = space.nearest(noisy)
    index = HNSWIndex(space, m=16, ef_construction=40, ef_search=128)
    agree = (space.nearest(noisy, index=index) == exact).float().mean().item()
    assert agree > 0.9
    out = m_txt(space, space.regular_ids[:10], 1e7, gen(7), index=index)
    assert torch.equal(out, space.regular_ids[:10])


def test_special_token_mask_from_tokenizer(tiny_space):
    _, tok = tiny_space
    mask = special_token_mask(tok, 30522)
    assert mask[tok.cls_token_id] and mask[tok.pad_token_id] and not mask[tok.convert_tokens_to_ids("dog")]
