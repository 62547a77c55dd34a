"""TextHide draws each batch's key in one read of the OS CSPRNG, from SecretGenerator only, with the same output."""

from __future__ import annotations

import contextlib
import random

import numpy as np
import pytest
import torch
from scipy import stats

import privnlu.rng as rng_module
from privnlu.mechanisms import TextHide
from privnlu.mechanisms.texthide import gather_mix, mix
from privnlu.rng import SecretGenerator

CONFIGS = [dict(m=16, k=4), dict(m=float("inf"), k=4), dict(m=0, k=2), dict(m=16, k=4, inter=True), dict(m=256, k=1)]


class FakeUrandom:
    """A deterministic stand-in for os.urandom (a seeded byte stream) that counts its calls."""

    def __init__(self, seed: int) -> None:
        self.gen = np.random.default_rng(seed)
        self.calls = 0
        self.bytes = 0

    def __call__(self, n: int) -> bytes:
        self.calls += 1
        self.bytes += n
        return self.gen.bytes(n)


def make(cfg: dict, d: int = 16) -> TextHide:
    public = torch.randn(40, d) if cfg.get("inter") else None
    return TextHide(cfg["m"], cfg["k"], dim=d, rng=SecretGenerator(), public=public)


def run_hides(monkeypatch, cfg: dict, *, batched: bool, calls: int = 3, seed: int = 0):
    torch.manual_seed(0)
    fake = FakeUrandom(seed)
    monkeypatch.setattr(rng_module.os, "urandom", fake)
    th = make(cfg)  # the mask pool from the same stream
    fake.calls = fake.bytes = 0
    if not batched:
        monkeypatch.setattr(SecretGenerator, "batched", lambda self, n: contextlib.nullcontext(self))
    x, y = torch.randn(8, 16), torch.nn.functional.one_hot(torch.arange(8) % 2, 2).float()
    outs = [th.hide(x, y) for _ in range(calls)]
    monkeypatch.undo()
    return outs, fake


@pytest.mark.parametrize("cfg", CONFIGS)
def test_one_csprng_read_per_call_and_no_word_wasted(monkeypatch, cfg):
    _, batched = run_hides(monkeypatch, cfg, batched=True)
    _, plain = run_hides(monkeypatch, cfg, batched=False)
    assert batched.calls == 3  # one read per hide() call
    assert plain.calls > batched.calls or cfg["k"] == 1  # (k = 1: the mask choice is the only draw anyway)
    assert batched.bytes == plain.bytes  # exactly the words the draws use: none read ahead in vain


@pytest.mark.parametrize("cfg", CONFIGS)
def test_output_is_the_same_function_of_the_random_stream(monkeypatch, cfg):
    """Given the same CSPRNG bytes, batched drawing gives bit-identical keys and encodings: the distribution of
    TextHide's output is unchanged."""
    a, _ = run_hides(monkeypatch, cfg, batched=True)
    b, _ = run_hides(monkeypatch, cfg, batched=False)
    for ha, hb in zip(a, b):
        assert torch.equal(ha.partners, hb.partners) and torch.equal(ha.coeffs, hb.coeffs)
        assert torch.equal(ha.x, hb.x) and torch.equal(ha.y, hb.y)
        assert (ha.mask_ids is None and hb.mask_ids is None) or torch.equal(ha.mask_ids, hb.mask_ids)


def test_fused_mix_equals_the_row_mix_with_gradients():
    x = torch.randn(32, 8, requires_grad=True)
    idx = torch.stack([torch.arange(32), torch.randperm(32), torch.randperm(32)], 1)
    w = torch.rand(32, 3)
    fused = gather_mix(x, idx, w)
    (fused * torch.arange(8.0)).sum().backward()
    g_fused = x.grad.clone()
    x.grad = None
    rows = mix([x[idx[:, j]] for j in range(3)], w)
    (rows * torch.arange(8.0)).sum().backward()
    assert torch.allclose(fused, rows, atol=1e-6) and torch.allclose(g_fused, x.grad, atol=1e-6)


def test_secrets_never_touch_the_global_rngs():
    th = TextHide(16, 4, dim=16, rng=SecretGenerator())
    x, y = torch.zeros(8, 16), torch.ones(8, 2) / 2
    states = torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate()
    th.hide(x, y)
    assert torch.equal(torch.get_rng_state(), states[0])
    assert np.array_equal(np.random.get_state()[1], states[1]) and random.getstate() == states[2]


def test_batched_words_are_wiped_and_never_reused(monkeypatch):
    fake = FakeUrandom(3)
    monkeypatch.setattr(rng_module.os, "urandom", fake)
    g = SecretGenerator()
    with g.batched(10):
        first = g.words(4)
        buf = g._buffer
        assert buf is not None and not buf[:4].any()  # used words are zeroed at once
        more = g.words(10)  # 6 buffered + 4 fresh
    assert not buf.any() and g._buffer is None and fake.calls == 2
    assert len(set(first.tolist()) | set(more.tolist())) == 14


def test_seeded_generator_does_not_read_ahead():
    a, b = SecretGenerator(5, warn=False), SecretGenerator(5, warn=False)
    with a.batched(100):
        x = a.words(3)
    assert np.array_equal(np.concatenate([x, a.words(4)]), b.words(7))


def test_output_distribution_statistical(monkeypatch):
    """Partners, mask choices and coefficients of the batched path against their laws (fixed byte stream seed;
    tolerance: every test at p > 0.001)."""
    monkeypatch.setattr(rng_module.os, "urandom", FakeUrandom(11))
    b, k, m, d, trials = 8, 4, 4, 16, 3000
    th = TextHide(m, k, dim=d, rng=SecretGenerator())
    x, y = torch.randn(b, d), torch.ones(b, 2) / 2
    partner0, mask_ids, lam = [], [], []
    for _ in range(trials):
        hb = th.hide(x, y)
        partner0.append(int(hb.partners[0, 1]))  # pi_2(0): uniform on the batch
        mask_ids.append(int(hb.mask_ids[0]))  # uniform on the pool
        lam.append(float(hb.coeffs[0, 0]))
    assert stats.chisquare(np.bincount(partner0, minlength=b)).pvalue > 1e-3
    assert stats.chisquare(np.bincount(mask_ids, minlength=m)).pvalue > 1e-3
    ref = np.abs(np.random.default_rng(1).standard_normal((trials, k)))
    assert stats.ks_2samp(lam, ref[:, 0] / ref.sum(1)).pvalue > 1e-3  # lambda ~ |N(0, I)| / sum
