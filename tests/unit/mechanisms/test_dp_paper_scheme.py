"""DP instance encoding as Xie & Hong (2022) wrote it: Algorithm 1 (clip, mix k, noise per encoding, no sign mask)
with the noise of Theorems 3 and 4 (``paper`` calibration)."""

import math

import pytest
import torch

from privnlu.training.engine import RunSpec, make_hider, with_scheme
from privnlu.mechanisms.dp import (NOT_DP, DPSettings, calibrate, clip_rows, paper_mechanism, scheme_name,
                                   theorem3_scale, theorem4_sigma)
from privnlu.rng import SecretGenerator
from privnlu.training import TrainConfig


@pytest.mark.parametrize("eps,delta,clip", [(0.1, 1e-5, 1.0), (8.0, 1e-5, 0.5), (20.0, 1e-6, 2.0)])
def test_paper_noise_is_theorems_3_and_4(eps, delta, clip):
    g = calibrate("gaussian", epsilon=eps, delta=delta, clip=clip, dim=32, k=4, epochs=1, calibration="paper")
    assert g.mechanism.noise == pytest.approx(clip * (1 + math.sqrt(2 * math.log(1 / delta))) / eps, rel=1e-12)
    assert g.mechanism.clip_norm == "l2" and not g.valid and NOT_DP in g.to_json()["label"]
    lap = calibrate("laplace", epsilon=eps, delta=delta, clip=clip, dim=32, k=4, epochs=1, calibration="paper")
    assert lap.mechanism.noise == pytest.approx(2 * clip / eps) == theorem3_scale(eps, clip)
    assert lap.mechanism.clip_norm == "l2"
    # the literal reading of Theorem 4 scales with 1 / sqrt(eps) instead
    assert theorem4_sigma(eps, delta, clip, "variance") == pytest.approx(g.mechanism.noise * math.sqrt(eps))


def test_paper_gaussian_adds_less_noise_than_the_textbook_formula_with_sensitivity_2c():
    textbook = 2 * math.sqrt(2 * math.log(1.25 / 1e-5))  # sigma / (C / eps) of the old "paper" calibration
    assert textbook / (theorem4_sigma(1.0, 1e-5, 1.0)) == pytest.approx(1.67, abs=0.01)


def test_paper_calibration_reports_the_epsilon_the_release_really_has():
    cal = calibrate("gaussian", epsilon=8.0, delta=1e-5, clip=1.0, dim=32, k=4, epochs=3, calibration="paper")
    assert cal.epsilon > 8.0  # true sensitivity 2C, composed over 12 encodings per example


def _dp_hider(m: float, epochs: int = 1, eps: float = 8.0, seed: int = 0):
    spec = with_scheme(RunSpec(task="sst2", train=TrainConfig(epochs=epochs, batch_size=64)), m=m, k=4,
                       dp=DPSettings(mechanism="gaussian", epsilon=eps, calibration="paper"))
    return make_hider(spec, 48, SecretGenerator(seed, warn=False), None)


def _residual(hider, x, hb):
    """encoding - sum_j lambda_ij clip(x_{pi_j(i)}): the noise alone if no mask is applied."""
    cx = clip_rows(x, hider.mechanism.clip, "l2")
    mixed = sum(hb.coeffs[:, j : j + 1] * cx[hb.partners[:, j]] for j in range(hb.coeffs.shape[1]))
    return hb.x - mixed


def test_the_paper_scheme_applies_no_sign_mask_and_the_masked_variant_does():
    assert scheme_name(0) == "dp-ie" and scheme_name(16) == "dp-ie-masked"
    x = torch.randn(2000, 48) * 3
    y = torch.nn.functional.one_hot(torch.randint(0, 2, (2000,)), 2).float()
    h = _dp_hider(0, eps=200.0)  # little noise, so that a mask would show in the residual
    r = _residual(h, x, h.hide(x, y))
    sigma = h.mechanism.noise
    # seeded; the residual is pure N(0, sigma^2) noise: mean within 5 standard errors, std within 3 %
    assert abs(r.mean().item()) < 5 * sigma / math.sqrt(r.numel())
    assert r.std().item() == pytest.approx(sigma, rel=0.03)
    masked = _dp_hider(16, eps=200.0)
    rm = _residual(masked, x, masked.hide(x, y))
    assert rm.std().item() > 2 * masked.mechanism.noise  # sign flips leave the mixed signal in the residual


def test_one_noise_draw_per_encoding():
    """Algorithm 1 as printed draws N once (line 7) for all encodings; privnlu draws it for each encoding."""
    x = torch.zeros(4000, 48)
    y = torch.zeros(4000, 2)
    y[:, 0] = 1
    h = _dp_hider(0, eps=1.0, seed=3)
    z = h.hide(x, y).x  # zero inputs: each encoding is its noise alone
    assert torch.unique(z, dim=0).shape[0] == z.shape[0]  # no two encodings share a draw
    c = torch.corrcoef(torch.stack([z[:-1].flatten(), z[1:].flatten()]))[0, 1].item()
    assert abs(c) < 0.02  # neighbouring encodings independent (seeded; 5 standard errors is 0.012)
    z2 = h.hide(x, y).x
    assert not torch.equal(z, z2)  # fresh noise on every call


def test_paper_mechanism_rejects_an_unknown_reading():
    from privnlu.errors import PrivnluError

    with pytest.raises(PrivnluError):
        paper_mechanism("gaussian", epsilon=1.0, delta=1e-5, clip=1.0, dim=4, reading="stddev")
