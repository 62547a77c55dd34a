"""TextHide (Algorithm 1): exact algebra, the identity case, inter labels, and statistics of the keys."""

import math
import os
import stat

import numpy as np
import pytest
import torch
from scipy import stats

from privnlu.errors import PrivnluError
from privnlu.mechanisms import INF, MaskPool, TextHide, hide_dataset, parse_m
from privnlu.rng import SecretGenerator


def rng(seed=0):
    return SecretGenerator(seed, warn=False)


def batch(b=16, d=12, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, d, generator=g)
    y = torch.nn.functional.one_hot(torch.randint(0, c, (b,), generator=g), c).float()
    return x, y


def test_identity_for_m0_k1_is_exact():
    x, y = batch()
    hb = TextHide(0, 1, dim=12, rng=rng()).hide(x, y)
    assert torch.equal(hb.x, x) and torch.equal(hb.y, y)
    assert hb.mask_ids is None and torch.equal(hb.coeffs, torch.ones(16, 1))


@pytest.mark.parametrize("m,k", [(0, 2), (4, 3), (16, 4), (INF, 4)])
def test_mixing_and_masking_algebra_is_exact(m, k):
    x, y = batch(b=20)
    th = TextHide(m, k, dim=12, rng=rng(1))
    hb = th.hide(x, y)
    assert torch.equal(hb.partners[:, 0], torch.arange(20))  # pi_1 is the identity
    for j in range(1, k):
        assert sorted(hb.partners[:, j].tolist()) == list(range(20))  # each pi_j is a permutation
    mixed = sum(hb.coeffs[:, j : j + 1] * x[hb.partners[:, j]] for j in range(k))
    labels = sum(hb.coeffs[:, j : j + 1] * y[hb.partners[:, j]] for j in range(k))
    torch.testing.assert_close(hb.y, labels)
    if m == 0:
        torch.testing.assert_close(hb.x, mixed)
    else:
        sigma = hb.x / mixed
        torch.testing.assert_close(sigma.abs(), torch.ones_like(sigma))  # entries are exactly +-1 times the mix
        if m != INF:
            torch.testing.assert_close(sigma, th.pool.masks[hb.mask_ids])


def test_inter_uses_public_components_and_private_only_labels():
    x, y = batch(b=10, d=6)
    public = torch.randn(50, 6)
    for k in (2, 3, 4, 5):
        th = TextHide(0, k, dim=6, rng=rng(k), public=public)
        hb = th.hide(x, y)
        kp, kq = math.ceil(k / 2), k // 2
        assert hb.public[:, :kp].sum() == 0 and hb.public[:, kp:].all() and th.n_private == kp and k - kp == kq
        rows = [x[hb.partners[:, j]] if j < kp else public[hb.partners[:, j]] for j in range(k)]
        torch.testing.assert_close(hb.x, sum(hb.coeffs[:, j : j + 1] * rows[j] for j in range(k)))
        lam = hb.coeffs[:, :kp]
        expected = sum(lam[:, j : j + 1] * y[hb.partners[:, j]] for j in range(kp)) / lam.sum(1, keepdim=True)
        torch.testing.assert_close(hb.y, expected)
        torch.testing.assert_close(hb.y.sum(1), torch.ones(10))  # still a distribution


def test_inter_label_formula_by_hand():
    # k = 2: one private component with any weight -> the label is exactly the private one-hot
    x, y = batch(b=4, d=3, c=2)
    hb = TextHide(0, 2, dim=3, rng=rng(), public=torch.randn(5, 3)).hide(x, y)
    assert torch.equal(hb.y, y)


def test_coefficients_sum_to_one_and_are_symmetric():
    # statistical: E[lambda_j] = 1/k by symmetry; 4000 examples, tolerance 0.01 (> 5 standard errors)
    x, y = batch(b=4000, d=2)
    hb = TextHide(0, 4, dim=2, rng=rng(3)).hide(x, y)
    torch.testing.assert_close(hb.coeffs.sum(1), torch.ones(4000))
    assert (hb.coeffs >= 0).all()
    assert torch.allclose(hb.coeffs.mean(0), torch.full((4,), 0.25), atol=0.01)


def test_masks_are_balanced_and_pool_choice_uniform():
    g = rng(5)
    pool = MaskPool.generate(64, 512, g)
    signs = pool.masks
    assert stats.binomtest(int((signs > 0).sum()), signs.numel()).pvalue > 1e-3  # fixed seed, 0.1 % false alarms
    _, idx = pool.draw(64000, g)
    assert stats.chisquare(np.bincount(idx.numpy(), minlength=64)).pvalue > 1e-3


def test_one_time_keys_are_fresh_each_call():
    x, y = batch(b=32)
    th = TextHide(16, 4, dim=12, rng=rng(9))
    a, b = th.hide(x, y), th.hide(x, y)
    assert not torch.equal(a.coeffs, b.coeffs) and not torch.equal(a.partners, b.partners)


def test_m_inf_draws_a_fresh_mask_per_example():
    x = torch.ones(200, 64)
    hb = TextHide(INF, 1, dim=64, rng=rng()).hide(x, torch.ones(200, 1))
    assert len({tuple(r.tolist()) for r in hb.x}) == 200


def test_bad_parameters():
    with pytest.raises(PrivnluError, match="k must be"):
        TextHide(0, 0, dim=4, rng=rng())
    with pytest.raises(PrivnluError, match="m must be"):
        parse_m(-1)
    with pytest.raises(PrivnluError, match="larger than the batch"):
        TextHide(0, 5, dim=4, rng=rng()).hide(*batch(b=4, d=4))
    with pytest.raises(PrivnluError, match="inter needs k >= 2"):
        TextHide(0, 1, dim=4, rng=rng(), public=torch.randn(3, 4))
    assert parse_m("inf") == INF and parse_m("16") == 16


def test_mask_pool_is_key_material(tmp_path):
    pool = MaskPool.generate(8, 16, rng())
    assert "secret" in repr(pool) and "1." not in repr(pool)
    path = pool.save(tmp_path / "key.pt")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert torch.equal(MaskPool.load(path).masks, pool.masks)


def test_hide_dataset_separates_payload_and_key(tmp_path):
    x, y = batch(b=50, d=8)
    th = TextHide(4, 3, dim=8, rng=rng())
    payload, key = hide_dataset(th, x, y, epochs=3, batch_size=16)
    assert payload.x.shape == (150, 8) and set(payload.meta) >= {"m", "k", "epochs"}
    assert not any(name in payload.meta for name in ("pool", "partners", "coeffs", "mask_ids"))
    # the key reconstructs every encoding exactly from the original data
    recon = sum(key.coeffs[:, j : j + 1] * x[key.partners[:, j]] for j in range(3)) * key.pool[key.mask_ids]
    torch.testing.assert_close(payload.x, recon)
    assert torch.equal(key.epoch.bincount(), torch.tensor([50, 50, 50]))
    path = key.save(tmp_path / "k.pt")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and "secret" in repr(key)
