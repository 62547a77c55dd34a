"""The one-run DP-SGD audit (privnlu.attacks.privacy_audit.dp_sgd, `privnlu dp audit-sgd`): the bound of Steinke, Nasr &
Jagielski 2023, a sound DP-SGD run passes, a deliberately under-noised one is caught, bad input is refused.

The training tests are seeded (deterministic). Synthetic features: 500 rows of dimension 256 in 3 classes, 200
canaries, a 128-wide head, 10 epochs of Adam at 0.01, claim (1, 1e-5), RDP accountant (PRV takes minutes to account
a run with 1/20 of the noise). Over seeds 0..5 the sound run's bound was 0 every time and the under-noised run's
(noise / 20) between 1.46 and 2.14; the assertions leave that margin (bound > 1.3 x the claim).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from scipy.optimize import brentq
from scipy.stats import binom

from privnlu.attacks.privacy_audit.dp_sgd import (audit_dp_sgd, audit_guesses, count_correct, epsilon_lower_bound,
                                                  guess_sizes, p_value)
from privnlu.cli.main import main
from privnlu.training.dp_sgd import DPSGDConfig

CLAIM = 1.0
DELTA = 1e-5


# -- the bound ----------------------------------------------------------------------------------------------------

def direct_pure_dp_bound(v: int, r: int, beta: float = 0.05) -> float:
    """The largest eps with P[Binomial(r, e^eps / (1 + e^eps)) >= v] <= beta, by root finding."""
    tail = lambda e: binom.sf(v - 1, r, 1 / (1 + math.exp(-e))) - beta  # noqa: E731
    return 0.0 if tail(0.0) > 0 else brentq(tail, 0.0, 60.0, xtol=1e-10)


@pytest.mark.parametrize("r", [10, 100, 500])
def test_half_right_gives_no_evidence(r):
    assert epsilon_lower_bound(r // 2, r, 1000, DELTA) == 0.0
    assert epsilon_lower_bound(r // 2, r, 1000, 0.0) == 0.0
    assert epsilon_lower_bound(0, 0, 1000, DELTA) == 0.0  # no guesses


def test_more_correct_guesses_give_a_larger_bound():
    for r, delta in [(100, DELTA), (100, 0.0), (500, 1e-6)]:
        bounds = [epsilon_lower_bound(v, r, 1000, delta) for v in range(r // 2, r + 1, max(1, r // 50))]
        assert all(b2 >= b1 for b1, b2 in zip(bounds, bounds[1:])), bounds
        assert bounds[-1] > 3.0  # all right: a strong bound (r = 100: 3.49 at delta = 0)


@pytest.mark.parametrize("v,r", [(7, 10), (80, 100), (100, 100), (150, 200), (30, 40), (400, 500), (55, 100)])
def test_pure_dp_matches_the_binomial_tail(v, r):
    assert epsilon_lower_bound(v, r, 1000, 0.0) == pytest.approx(direct_pure_dp_bound(v, r), abs=1e-3)


def test_delta_only_weakens_the_bound():
    for v, r in [(80, 100), (180, 200), (100, 100)]:
        pure = epsilon_lower_bound(v, r, 1000, 0.0)
        assert epsilon_lower_bound(v, r, 1000, 1e-6) <= pure + 1e-9
        assert epsilon_lower_bound(v, r, 1000, 1e-4) <= epsilon_lower_bound(v, r, 1000, 1e-6) + 1e-9
    # the delta term, by hand: f(v) + 2 m delta max_i (f(v - i) - f(v)) / i
    v, r, m, eps, delta = 8, 10, 50, 1.0, 1e-3
    q = 1 / (1 + math.exp(-eps))
    f = lambda w: binom.sf(w - 1, r, q)  # noqa: E731
    want = f(v) + 2 * m * delta * max((f(v - i) - f(v)) / i for i in range(1, m + 1))
    assert p_value(v, r, m, eps, delta) == pytest.approx(want, rel=1e-9)


def test_guesses_and_the_declared_sizes():
    assert guess_sizes(1000) == [20, 50, 100, 250] and guess_sizes(200) == [4, 10, 20, 50] and guess_sizes(2) == [1]
    scores = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    included = np.array([1, 1, 0, 1, 0, 0], dtype=bool)
    assert [count_correct(scores, included, k, k) for k in (1, 2, 3)] == [2, 4, 4]
    # a perfect separation of 1000 canaries refutes epsilon = 1 even after the Bonferroni correction over 4 sizes
    rng = np.random.default_rng(0)
    inc = rng.random(1000) < 0.5
    out = audit_guesses(inc + rng.random(1000) * 0.5, inc, DELTA)
    assert out["best"]["correct"] == out["best"]["guesses"] and out["best"]["epsilon_lb"] > 4
    assert out["level_per_candidate"] == pytest.approx(0.05 / 4)
    # scores that carry nothing give (almost always) no bound
    assert audit_guesses(rng.random(1000), inc, DELTA)["best"]["epsilon_lb"] < 0.5


# -- DP-SGD runs --------------------------------------------------------------------------------------------------

def synthetic(n: int = 500, d: int = 256, classes: int = 3, seed: int = 100) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian class clusters around a shared offset (like sentence representations: one dominant direction)."""
    g = torch.Generator().manual_seed(seed)
    means = torch.randn(classes, d, generator=g) * 0.3
    y = torch.randint(0, classes, (n,), generator=g)
    x = means[y] + torch.randn(n, d, generator=g) / math.sqrt(d) + 0.5 * torch.randn(d, generator=g)
    return x, y


def config(**kw) -> DPSGDConfig:
    return DPSGDConfig(**{"epsilon": CLAIM, "delta": DELTA, "epochs": 10, "lr": 0.01, "accountant": "rdp", **kw})


@pytest.fixture(scope="module")
def data():
    return synthetic()


def test_a_sound_dp_sgd_run_passes(data):
    x, y = data
    rec = audit_dp_sgd(x, y, num_outputs=3, config=config(), canaries=200, seed=0)
    assert rec["consistent"] and rec["epsilon_lb"] <= rec["accounted_epsilon"] <= CLAIM + 1e-6
    assert rec["claimed_epsilon"] == CLAIM and rec["delta"] == DELTA and rec["under_noise"] is None
    assert rec["canaries"] == 200 and 0 < rec["canaries_in"] < 200 and rec["real_rows"] == 500
    assert rec["guesses"] == 2 * rec["k_in"] and 0 <= rec["correct"] <= rec["guesses"]
    assert rec["power"] > CLAIM  # the audit could have refuted the claim
    assert rec["noise_multiplier"] == rec["calibrated_noise_multiplier"] > 1


def test_an_under_noised_run_is_caught(data):
    x, y = data
    rec = audit_dp_sgd(x, y, num_outputs=3, config=config(), canaries=200, under_noise=20, seed=0)
    assert not rec["consistent"] and rec["epsilon_lb"] > 1.3 * CLAIM and "VIOLATION" in rec["verdict"]
    assert rec["claimed_epsilon"] == CLAIM  # the record states the claim, and what the accountant says
    assert rec["noise_multiplier"] == pytest.approx(rec["calibrated_noise_multiplier"] / 20)
    assert rec["accounted_epsilon"] > 10 * CLAIM and rec["consistent_with_accountant"]


# -- the command line -----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def features_file(tmp_path_factory, data):
    from safetensors.torch import save_file

    path = tmp_path_factory.mktemp("feats") / "features.safetensors"
    save_file({"features": data[0].contiguous(), "labels": data[1]}, str(path))
    return path


BASE = ["dp", "audit-sgd", "--canaries", "200", "--dp-accountant", "rdp", "--seed", "0", "--quiet"]


def test_cli_writes_the_record_and_exits_by_the_verdict(features_file, tmp_path, capsys):
    out = tmp_path / "audit.json"
    assert main([*BASE, "--features", str(features_file), "--out", str(out), "--markdown"]) == 0
    rec = json.loads(out.read_text())
    assert rec["kind"] == "dp-sgd-audit" and rec["consistent"] and rec["source"]["rows"] == 500
    captured = capsys.readouterr()
    assert captured.out.startswith("| claimed epsilon |") and "eps_lb = " in captured.err
    bad = tmp_path / "under.json"
    assert main([*BASE, "--features", str(features_file), "--under-noise", "20", "--out", str(bad)]) == 1
    rec = json.loads(bad.read_text())
    assert not rec["consistent"] and rec["under_noise"] == 20 and "VIOLATION" in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["--dp-epsilon", "-1"], "--dp-epsilon"),
    (["--canaries", "0"], "--canaries"),
    (["--canaries", "1"], "--canaries"),
    (["--under-noise", "0.5"], "--under-noise"),
    (["--dp-delta", "0.01"], "delta"),  # above 1/(n + m)
    ([], "exactly one of --task or --features"),
    (["--task", "tweets"], "exactly one of --task or --features"),
])
def test_cli_bad_input_is_one_line_exit_2_and_no_file(features_file, tmp_path, capsys, argv, message):
    out = tmp_path / "audit.json"
    given = [] if argv == [] else ["--features", str(features_file)]
    code = main(["dp", "audit-sgd", *given, *argv, "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0] and "Traceback" not in err[0]
    assert not out.exists() and not list(tmp_path.iterdir())


def test_cli_refuses_a_features_file_that_is_not_safetensors(tmp_path, capsys):
    pickled = tmp_path / "features.pt"
    torch.save({"features": torch.zeros(4, 2), "labels": torch.zeros(4, dtype=torch.long)}, pickled)
    out = tmp_path / "audit.json"
    assert main(["dp", "audit-sgd", "--features", str(pickled), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a safetensors file" in err[0] and not out.exists()
    assert main(["dp", "audit-sgd", "--features", str(tmp_path / "missing.safetensors"), "--quiet"]) == 2
    assert "no such file" in capsys.readouterr().err
