"""The secret generator: secure by default, isolated from global RNG state, correct distributions."""

import random

import numpy as np
import pytest
import torch
from scipy import stats

from privnlu.rng import SecretGenerator


def test_secure_generator_never_touches_global_state():
    torch_state, np_state, py_state = torch.get_rng_state(), np.random.get_state(), random.getstate()
    g = SecretGenerator()
    g.normal((100, 10)), g.signs((50, 7)), g.permutation(30), g.randint(5, 20), g.uniform(9)
    assert torch.equal(torch_state, torch.get_rng_state())
    assert np.array_equal(np_state[1], np.random.get_state()[1])
    assert py_state == random.getstate()


def test_seeded_generator_is_reproducible_and_warns():
    with pytest.warns(UserWarning, match="experiments only"):
        a = SecretGenerator(7)
    b = SecretGenerator(7, warn=False)
    assert torch.equal(a.normal(20), b.normal(20))
    assert torch.equal(a.permutation(50), b.permutation(50))


def test_secure_generators_differ():
    assert not torch.equal(SecretGenerator().signs(256), SecretGenerator().signs(256))
    # seed=None (what every command passes without --seed) must be the secure source, not a default seed
    a, b = SecretGenerator(None, warn=False), SecretGenerator(None, warn=False)
    assert not a.seeded and not torch.equal(a.signs(256), b.signs(256))


def test_repr_hides_state():
    assert "urandom" in repr(SecretGenerator()) and "seeded" in repr(SecretGenerator(1, warn=False))


def test_distributions():
    # fixed seed; tolerances: KS p-value > 0.001, i.e. a false alarm rate of 0.1 % per check
    g = SecretGenerator(123, warn=False)
    assert stats.kstest(g.uniform(20000, dtype=torch.float64).numpy(), "uniform").pvalue > 1e-3
    assert stats.kstest(g.normal(20000, dtype=torch.float64).numpy(), "norm").pvalue > 1e-3
    u = g.uniform(10000)
    assert float(u.min()) > 0 and float(u.max()) < 1
    s = g.signs(100000)
    assert set(s.unique().tolist()) == {-1.0, 1.0}
    assert stats.binomtest(int((s > 0).sum()), 100000).pvalue > 1e-3
    counts = np.bincount(g.randint(7, 70000).numpy(), minlength=7)
    assert stats.chisquare(counts).pvalue > 1e-3
    p = g.permutation(1000)
    assert sorted(p.tolist()) == list(range(1000))
