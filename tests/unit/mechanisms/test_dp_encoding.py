"""DP instance encoding: clipping, noise scale, sensitivity, calibration and accounting."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from privnlu.errors import PrivnluError
from privnlu.mechanisms.dp import (NOT_DP, DPTextHide, GaussianEncoding, LaplaceEncoding, account, calibrate, clip_rows,
                                   participations)
from privnlu.mechanisms.release import hide_dataset
from privnlu.rng import SecretGenerator


def rng(seed=0):
    return SecretGenerator(seed, warn=False)


@pytest.mark.parametrize("norm,p", [("l2", 2), ("l1", 1)])
def test_clipping_bounds_the_norm_and_keeps_small_rows(norm, p):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(500, 32, generator=g) * torch.rand(500, 1, generator=g) * 20
    c = clip_rows(x, 3.0, norm)
    n_in, n_out = torch.linalg.vector_norm(x, ord=p, dim=1), torch.linalg.vector_norm(c, ord=p, dim=1)
    assert (n_out <= 3.0 * (1 + 1e-6)).all()
    small = n_in <= 3.0
    assert small.any() and (~small).any()
    assert torch.allclose(c[small], x[small]) and torch.allclose(n_out[~small], torch.full_like(n_out[~small], 3.0))
    # direction is kept
    assert torch.allclose(torch.nn.functional.normalize(c, dim=1), torch.nn.functional.normalize(x, dim=1), atol=1e-5)


def test_declared_sensitivities():
    g = GaussianEncoding(clip=2.0, noise=1.0, dim=100)
    assert (g.clip_norm, g.noise_norm, g.sensitivity) == ("l2", "l2", 4.0)
    assert LaplaceEncoding(clip=2.0, noise=1.0, dim=100).sensitivity == 4.0
    # L2 clipping with Laplace noise (the paper): the true L1 sensitivity is sqrt(d) larger
    assert LaplaceEncoding(clip=2.0, noise=1.0, dim=100, clip_norm="l2").sensitivity == pytest.approx(40.0)
    assert GaussianEncoding(clip=2.0, noise=1.0, dim=10, max_weight=0.5).sensitivity == 2.0
    with pytest.raises(Exception):
        g.noise = 5.0  # immutable


def test_sensitivity_bound_holds_for_a_real_mix():
    """Replace one example: every encoding moves by at most 2C in L2 (same secrets both times)."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(16, 8, generator=g) * 5
    x2 = x.clone()
    x2[5] = -x[5] * 3
    mech = GaussianEncoding(clip=1.0, noise=1e-9, dim=8)
    a = DPTextHide(0, 4, dim=8, rng=rng(7), mechanism=mech).hide(x, torch.zeros(16, 1))
    b = DPTextHide(0, 4, dim=8, rng=rng(7), mechanism=mech).hide(x2, torch.zeros(16, 1))
    diff = torch.linalg.vector_norm(a.x - b.x, dim=1)
    assert diff.max() <= mech.sensitivity + 1e-5 and (diff > 1e-3).sum() <= 4  # it takes part in at most k encodings


@pytest.mark.parametrize("cls,dist", [(GaussianEncoding, "norm"), (LaplaceEncoding, "laplace")])
def test_noise_matches_its_calibrated_scale(cls, dist):
    """KS test at a fixed seed: the noise added to zero inputs is N(0, s^2) / Laplace(0, s) (tolerance: p > 0.01)."""
    mech = cls(clip=1.0, noise=0.7, dim=50)
    hider = DPTextHide(0, 2, dim=50, rng=rng(1), mechanism=mech)
    z = hider.hide(torch.zeros(400, 50), torch.zeros(400, 1)).x.flatten().numpy().astype(np.float64)
    ref = getattr(stats, dist)(scale=0.7)
    assert stats.kstest(z, ref.cdf).pvalue > 0.01
    assert z.std() == pytest.approx(ref.std(), rel=0.03)  # 20,000 draws: sd of the estimate is < 1 %
    wrong = getattr(stats, dist)(scale=0.7 * 1.1)
    assert stats.kstest(z, wrong.cdf).pvalue < 1e-6  # the test can tell a 10 % error apart


def test_gaussian_calibration_is_the_analytic_gaussian_composed():
    import dp_accounting

    cal = calibrate("gaussian", epsilon=2.0, delta=1e-5, clip=1.0, dim=384, k=4, epochs=5)
    assert cal.participations == 20 and cal.valid
    z = cal.mechanism.noise_multiplier
    analytic = dp_accounting.get_sigma_gaussian(2.0, 1e-5) * math.sqrt(20)
    assert analytic <= z == pytest.approx(analytic, rel=1e-4)  # raised only by the accountant's discretisation slack
    assert cal.mechanism.noise == pytest.approx(z * 2.0)  # Delta_2 = 2C
    assert cal.epsilon <= 2.0 and cal.epsilon == pytest.approx(2.0, rel=1e-3)  # PLD agrees with the analytic value
    assert dp_accounting.get_epsilon_gaussian(z / math.sqrt(20), 1e-5) == pytest.approx(2.0, rel=1e-4)


def test_laplace_calibration_meets_its_target():
    cal = calibrate("laplace", epsilon=4.0, delta=1e-5, clip=0.5, dim=384, k=2, epochs=3)
    assert cal.mechanism.clip_norm == "l1" and cal.epsilon <= 4.0 * 1.001 and cal.epsilon > 3.9
    single = calibrate("laplace", epsilon=1.0, delta=1e-5, clip=0.5, dim=384, k=1, epochs=1)
    assert single.mechanism.noise == pytest.approx(1.0 / 1.0, rel=0.02)  # pure Laplace: b = Delta_1 / eps = 2 * 0.5 / 1


def test_paper_calibration_is_labelled_and_reports_the_true_epsilon():
    cal = calibrate("laplace", epsilon=2.0, delta=1e-5, clip=1.0, dim=16, k=2, epochs=1, calibration="paper")
    assert not cal.valid and NOT_DP in cal.to_json()["label"] and cal.to_json()["valid_dp_guarantee"] is False
    assert cal.mechanism.noise == pytest.approx(2.0 / 2.0) and cal.mechanism.clip_norm == "l2"
    # sqrt(16) = 4 times too little noise for the true L1 sensitivity, composed twice: about 2 * 4 * 2 = 16
    assert 15.0 < cal.epsilon <= 16.0 + 1e-3
    g = calibrate("gaussian", epsilon=1.0, delta=1e-5, clip=1.0, dim=384, k=4, epochs=10, calibration="paper")
    assert g.epsilon > 5.0  # 40 participations


def test_accounting_is_monotone_in_epochs_and_k():
    mech = GaussianEncoding(clip=1.0, noise=20.0, dim=384)
    eps_e = [account(mech, participations(4, e), 1e-5) for e in (1, 2, 5, 10)]
    eps_k = [account(mech, participations(k, 5), 1e-5) for k in (1, 2, 4, 6)]
    assert all(a < b for a, b in zip(eps_e, eps_e[1:])) and all(a < b for a, b in zip(eps_k, eps_k[1:]))
    lap = LaplaceEncoding(clip=1.0, noise=40.0, dim=384)
    eps_l = [account(lap, n, 1e-5) for n in (1, 4, 16)]
    assert all(a < b for a, b in zip(eps_l, eps_l[1:]))
    # for a fixed target, more participations need more noise
    noise = [calibrate("gaussian", epsilon=4, delta=1e-5, clip=1, dim=8, k=k, epochs=3).mechanism.noise for k in (1, 2, 4)]
    assert noise[0] < noise[1] < noise[2]
    assert participations(4, 3, inter=True) == 6


@pytest.mark.parametrize("kw,match", [
    (dict(epsilon=0.0), "epsilon must be > 0"),
    (dict(epsilon=-1.0), "epsilon must be > 0"),
    (dict(delta=0.0), "delta must be in"),
    (dict(delta=1.0), "delta must be in"),
    (dict(clip=0.0), "clipping bound C must be > 0"),
    (dict(clip=-2.0), "clipping bound C must be > 0"),
])
def test_bad_parameters(kw, match):
    args = dict(epsilon=1.0, delta=1e-5, clip=1.0, dim=8, k=2, epochs=1) | kw
    with pytest.raises(PrivnluError, match=match):
        calibrate("gaussian", **args)


def test_dp_release_end_to_end_and_dimension_check():
    cal = calibrate("gaussian", epsilon=8.0, delta=1e-5, clip=1.0, dim=16, k=2, epochs=2)
    hider = DPTextHide(16, 2, dim=16, rng=rng(), mechanism=cal.mechanism)
    payload, key = hide_dataset(hider, torch.randn(40, 16), torch.zeros(40, 2), epochs=2, batch_size=8)
    assert payload.x.shape == (80, 16) and "DPTextHide" in repr(hider)
    with pytest.raises(PrivnluError, match="calibrated for d = 16"):
        DPTextHide(0, 2, dim=32, rng=rng(), mechanism=cal.mechanism)


# -- CLI -------------------------------------------------------------------------
import json  # noqa: E402
import os  # noqa: E402
import stat  # noqa: E402

from privnlu.cli.main import main  # noqa: E402
from conftest import without_release_notice  # noqa: E402


def test_cli_dp_account_and_paper_label(capsys, tmp_path):
    out = tmp_path / "dp.json"
    assert main(["dp", "account", "--dp-epsilon", "4", "--k", "2", "--encodings-per-example", "3", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert rec["kind"] == "dp" and rec["participations"] == 6 and rec["valid_dp_guarantee"] is True
    capsys.readouterr()
    assert main(["dp", "account", "--dp-epsilon", "4", "--dp-calibration", "paper", "--dim", "4", "--k", "1", "--json"]) == 0
    cap = capsys.readouterr()
    assert "NOT a valid DP guarantee" in cap.err and json.loads(cap.out)["valid_dp_guarantee"] is False


@pytest.mark.parametrize("extra,match", [  # checked by argparse (privnlu.cli.options ranges): one usage line
    (["--dp-epsilon", "0"], "--dp-epsilon: '0' is out of range: number in (0, 1000]"),
    (["--dp-epsilon", "1", "--dp-delta", "1"], "--dp-delta: '1' is out of range: number in [1e-15, 1)"),
    (["--dp-epsilon", "1", "--dp-delta", "0"], "--dp-delta: '0' is out of range"),
    (["--dp-epsilon", "1", "--dp-clip", "0"], "--dp-clip: '0' is out of range"),
])
def test_cli_dp_bad_input(capsys, tmp_path, tiny_model, toy_glue, extra, match):  # noqa: F811
    for argv in (["dp", "account", *extra],
                 ["dp", "encode", "--task", "sst2", "--data-dir", str(toy_glue), "--model", str(tiny_model), "--cache-dir",
                  str(tmp_path / "c"), "--out", str(tmp_path / "e.pt"), "--key-out", str(tmp_path / "k.pt"), *extra]):
        assert main(argv) == 2
        err = without_release_notice(capsys.readouterr().err).strip().splitlines()
        assert len(err) == 1 and err[0].startswith("privnlu dp ") and match in err[0]
    assert not (tmp_path / "e.pt").exists() and not (tmp_path / "k.pt").exists()


def test_cli_dp_encode(capsys, tmp_path, tiny_model, toy_glue):  # noqa: F811
    out, key = tmp_path / "e.pt", tmp_path / "k.pt"
    assert main(["dp", "encode", "--task", "sst2", "--data-dir", str(toy_glue), "--model", str(tiny_model), "--cache-dir",
                 str(tmp_path / "c"), "--out", str(out), "--key-out", str(key), "--dp-epsilon", "8", "--k", "2",
                 "--encodings-per-example", "2", "--batch-size", "16", "--quiet"]) == 0
    from privnlu.mechanisms.release import SharedPayload

    blob = SharedPayload.load(out)  # safetensors, whatever the file's name
    assert blob.x.shape == (120, 32) and blob.meta["dp"]["participations"] == 4
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
