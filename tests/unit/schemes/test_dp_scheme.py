"""The dp-ie training scheme: DP TextHide calibrated for a whole training run, through the shared engine and CLI."""

import json

import pytest
import torch

from conftest import toy_glue_dir
from privnlu.cli.main import main
from privnlu.errors import PrivnluError
from privnlu.training.engine import RunSpec, make_hider, with_scheme
from privnlu.mechanisms.dp import DPSettings, DPTextHide
from privnlu.mechanisms.release import SharedPayload
from privnlu.rng import SecretGenerator
from privnlu.training import TrainConfig


def test_runspec_takes_a_scheme_from_the_registry():
    with pytest.raises(PrivnluError, match="privnlu.schemes scheme"):
        RunSpec(task="sst2", scheme="dp")
    base = RunSpec(task="sst2")
    dp = with_scheme(base, m=16, k=4, dp=DPSettings(mechanism="laplace", epsilon=2, calibration="paper"))
    assert dp.scheme.name == "dp-ie" and dp.label == "sst2-dp-texthide-intra-m16-k4-laplace-eps2-paper"
    assert dp.scheme.settings == DPSettings(mechanism="laplace", epsilon=2, calibration="paper")
    assert with_scheme(dp, m=0, k=1).scheme.name == "none"


@pytest.mark.parametrize("bad,match", [(dict(epsilon=0), "epsilon must be > 0"), (dict(delta=1.0), "delta must be in"),
                                       (dict(clip=-1), "clipping bound"), (dict(mechanism="cauchy"), "unknown mechanism")])
def test_dp_settings_reject_bad_values(bad, match):
    with pytest.raises(PrivnluError, match=match):
        DPSettings(**bad)


@pytest.mark.parametrize("epochs", [1, 5])
def test_make_hider_calibrates_for_every_encoding_of_the_run(epochs):
    spec = with_scheme(RunSpec(task="sst2", train=TrainConfig(epochs=epochs)), m=16, k=4, dp=DPSettings(epsilon=4))
    hider = make_hider(spec, 32, SecretGenerator(0, warn=False), None)
    assert isinstance(hider, DPTextHide) and hider.calibration is not None
    assert hider.calibration.participations == 4 * epochs
    assert hider.calibration.epsilon == pytest.approx(4, rel=1e-3)  # accounted over all 4 x epochs encodings


def test_eval_encoding_is_clipped_masked_and_noised():
    """A query at evaluation time gets the mechanism too: noise std = the calibrated scale (fixed seed, 3 %)."""
    spec = with_scheme(RunSpec(task="sst2", train=TrainConfig(epochs=2)), m=16, k=4, dp=DPSettings(epsilon=8, clip=0.5))
    hider = make_hider(spec, 64, SecretGenerator(1, warn=False), None)
    x = torch.zeros(2000, 64)
    x[:, 0] = 100.0  # clipped to norm 0.5, then masked: |coordinate 0| = 0.5 before noise
    z = hider.mask_only(x)
    sigma = hider.mechanism.noise
    assert z[:, 1:].std().item() == pytest.approx(sigma, rel=0.03)
    assert z[:, 0].abs().mean().item() < 0.5 + 0.8 * sigma + 0.1 * sigma  # not 100: clipped before the noise


@pytest.fixture()
def toy_glue(tmp_path):
    return toy_glue_dir(tmp_path, 40)


def test_train_and_encode_with_scheme_dp(capsys, tmp_path, tiny_model, toy_glue, cache_dir):
    args = ["--task", "sst2", "--data-dir", str(toy_glue), "--model", str(tiny_model), "--cache-dir", str(cache_dir), "--quiet"]
    out = tmp_path / "run"
    assert main(["train", *args, "--scheme", "dp-ie", "--dp-mechanism", "laplace", "--dp-epsilon", "4", "--k", "2",
                 "--epochs", "2", "--batch-size", "8", "--seed", "0", "--out", str(out)]) == 0
    rec = json.loads((out / "result.json").read_text())
    assert rec["scheme"] == "dp-ie" and rec["m"] == "0" and rec["k"] == 2  # the paper's Algorithm 1: no sign mask
    assert rec["dp"]["valid_dp_guarantee"] and rec["dp"]["participations"] == 4
    assert rec["dp"]["accounted_epsilon"] == pytest.approx(4, rel=1e-2) and rec["dp"]["clip_norm"] == "l1"
    enc, key = tmp_path / "enc.pt", tmp_path / "key.pt"
    capsys.readouterr()
    assert main(["encode", *args, "--scheme", "dp", "--dp-epsilon", "2", "--dp-calibration", "paper", "--m", "4", "--k", "2",
                 "--out", str(enc), "--key-out", str(key)]) == 0
    assert "'dp' is deprecated" in capsys.readouterr().err  # the old name works for one release, with a notice
    meta = SharedPayload.load(enc).meta
    assert meta["dp"]["calibration"] == "paper" and not meta["dp"]["valid_dp_guarantee"]
    capsys.readouterr()
    code = main(["train", *args, "--scheme", "dp", "--dp-epsilon", "0", "--out", str(tmp_path / "bad")])
    err = capsys.readouterr().err  # a usage error: argparse checks the range (privnlu.cli.options)
    assert code == 2 and "--dp-epsilon: '0' is out of range" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bad" / "result.json").exists()


def test_clean_queries_are_clipped_and_masked_without_noise():
    settings = DPSettings(epsilon=8, clip=0.5, noisy_queries=False)
    spec = with_scheme(RunSpec(task="sst2"), m=1, k=2, dp=settings)
    assert spec.label.endswith("-cleanq")
    hider = make_hider(spec, 16, SecretGenerator(2, warn=False), None)
    x = torch.randn(50, 16) * 10
    q = hider.mask_only(x)
    mask = hider.pool.masks[0]
    assert torch.allclose(q, torch.nn.functional.normalize(x, dim=1) * 0.5 * mask, atol=1e-5)


def test_accounting_tiny_noise_is_finite_and_fast():
    """Paper calibration at huge epsilon gives tiny noise; the accountant must not exhaust memory or overflow."""
    import time

    from privnlu.mechanisms.dp import calibrate

    t0 = time.time()
    cal = calibrate("gaussian", epsilon=1000, delta=1e-5, clip=1, dim=384, k=4, epochs=5, calibration="paper")
    mid = calibrate("gaussian", epsilon=20, delta=1e-5, clip=1, dim=384, k=4, epochs=5, calibration="paper")
    assert time.time() - t0 < 60
    assert cal.epsilon > mid.epsilon > 20 and cal.epsilon < float("inf")
