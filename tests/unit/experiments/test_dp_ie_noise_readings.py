"""DP instance encoding's two readings of the noise draw: fresh per encoding (DP) and one vector per batch
(Algorithm 1 as printed: not DP), their guarantees, the CLI warning and the empirical distinguishing check."""

import argparse
import json
import math

import pytest
import torch

from privnlu.attacks.privacy_audit.noise_reading import audit_noise_reading
from privnlu.errors import PrivnluError
from privnlu.mechanisms.dp import NOISE_READINGS, DPSettings, DPTextHide, calibrate
from privnlu.options import OPTIONS
from privnlu.rng import SecretGenerator
from privnlu.schemes import create


def _hider(noise: str, *, dim: int = 16, k: int = 4, sigma: float = 0.5) -> DPTextHide:
    from privnlu.mechanisms.dp import GaussianEncoding

    return DPTextHide(0, k, dim=dim, rng=SecretGenerator(0, warn=False), mechanism=GaussianEncoding(clip=1.0, noise=sigma, dim=dim),
                      noise=noise)


def test_the_option_offers_exactly_the_mechanism_readings():
    assert tuple(OPTIONS["noise"].choices) == NOISE_READINGS == ("per-encoding", "per-batch")


def test_per_batch_noise_cancels_in_differences_and_per_encoding_noise_does_not():
    """Per batch, e_i - e_j equals the noise-free mixes' difference (to float rounding); per encoding, the
    difference carries noise of variance 2 sigma^2 per coordinate (tolerance 10 % on the variance, fixed seed)."""
    torch.manual_seed(0)
    x = torch.nn.functional.normalize(torch.randn(64, 16), dim=1) * 0.5  # inside the clip bound: clipping is a no-op
    y = torch.eye(2)[torch.randint(0, 2, (64,))]
    for noise in NOISE_READINGS:
        h = _hider(noise)
        hb = h.hide(x, y)
        clean = (x[hb.partners] * hb.coeffs[..., None]).sum(1)  # the noise-free mixes, from the key
        z = hb.x - clean
        if noise == "per-batch":
            assert torch.allclose(z, z[:1].expand_as(z), atol=1e-5)  # one vector for the whole batch
            assert torch.allclose(hb.x[3] - hb.x[7], clean[3] - clean[7], atol=1e-5)
            assert z[0].std() > 0.3  # and it is real noise of scale sigma = 0.5
        else:
            diff = z[: 32] - z[32:]
            assert abs(float(diff.var()) / (2 * 0.5 ** 2) - 1) < 0.1


def test_per_batch_calibration_claims_no_epsilon():
    fresh = calibrate("gaussian", epsilon=8, delta=1e-5, clip=1.0, dim=32, k=4, epochs=2)
    batch = calibrate("gaussian", epsilon=8, delta=1e-5, clip=1.0, dim=32, k=4, epochs=2, noise="per-batch")
    assert batch.mechanism == fresh.mechanism  # the same noise scale, drawn differently
    assert math.isinf(batch.epsilon) and not batch.valid
    j = batch.to_json()
    assert j["accounted_epsilon"] is None and j["noise_reading"] == "per-batch" and not j["valid_dp_guarantee"]
    assert "NOT DP" in j["label"] and f"{fresh.epsilon:.4g}" in j["label"]  # what fresh draws would give
    assert fresh.valid and fresh.to_json()["noise_reading"] == "per-encoding"
    with pytest.raises(PrivnluError, match="noise reading"):
        calibrate("gaussian", epsilon=8, delta=1e-5, clip=1.0, dim=32, k=4, epochs=2, noise="per-epoch")
    with pytest.raises(PrivnluError, match="per-encoding noise"):
        DPTextHide(0, 4, dim=32, rng=SecretGenerator(0, warn=False), mechanism=fresh.mechanism, calibration=fresh,
                   noise="per-batch")


def test_scheme_guarantee_and_records_of_the_two_readings():
    fresh, batch = create("dp-ie"), create("dp-ie", noise="per-batch")
    assert "noise" not in fresh.params() and batch.params()["noise"] == "per-batch"  # old records keep their params
    assert fresh.label + "-per-batch" == batch.label and fresh.warning is None
    g = batch.guarantee(calibration=batch.calibrate(dim=16, epochs=2).to_json())
    assert g.kind == "none" and g.epsilon is None and "NOT DP" in g.text
    assert fresh.guarantee(calibration=fresh.calibrate(dim=16, epochs=2).to_json()).kind == "dp"
    assert batch.hider(dim=16, rng=SecretGenerator(0, warn=False), epochs=2).noise == "per-batch"
    assert DPSettings().calibrate(dim=16, k=4, epochs=1).noise_reading == "per-encoding"


def test_cli_warns_when_the_per_batch_reading_is_chosen(capsys):
    from privnlu.cli.common import scheme_from_args
    from privnlu.schemes import options

    args = argparse.Namespace(scheme="dp-ie", **{o.dest: None for o in options()})
    args.noise = "per-batch"
    assert scheme_from_args(args).noise == "per-batch"
    assert "NOT DP" in capsys.readouterr().err
    args.noise = None
    scheme_from_args(args)
    assert "NOT DP" not in capsys.readouterr().err


def test_distinguishing_check_refutes_the_per_batch_reading_only():
    """Neighbouring batches of two (k = 1): with one noise vector per batch <e_1 - e_2, u> is noise-free, so the
    95 % lower bound on epsilon reaches the audit's power (> 1 at 400 draws) and refutes epsilon = 1; with fresh
    noise it stays below the claim (fixed seeds)."""
    for noise in NOISE_READINGS:
        cal = calibrate("gaussian", epsilon=1, delta=1e-5, clip=1.0, dim=8, k=1, epochs=1, noise=noise)
        r = audit_noise_reading(cal, noise=noise, draws=400, rng=SecretGenerator(1, warn=False))
        if noise == "per-batch":
            assert r.violated and r.false_positives == 0 and r.misses == 0 and r.eps_lb == pytest.approx(r.power)
        else:
            assert not r.violated and r.eps_lb < 1


def test_report_names_the_attacker_and_the_reading_and_keeps_figure2_rows_as_they_were():
    from privnlu.report import section_markdown
    from privnlu.report.dp_attack_sections import _audit_label

    def dp_attack_md(recs):
        return section_markdown("dp_attack", recs)

    def release(success, reading=None, aware=None):
        cal = {"mechanism": "gaussian", "calibration": "correct", "target_epsilon": 20, "accounted_epsilon": 20.0,
               "noise": 8.2, **({"noise_reading": reading} if reading else {})}
        c = {"m": "0", "k": 4, "dp_calibration": cal, "methods": {"nmf": {"success_lenient": success, "success_strict": 0}},
             "pair_accuracy": {"factorised": {"heldout": 0.61, "release": {"balanced_accuracy": 0.5}}}}
        if aware is not None:
            c["attacker_noise_aware"] = aware
        return {"kind": "attack", "attack": "reconstruct", "task": "sst2", "conditions": {"m0-k4": c}}

    old = dp_attack_md([release(1.0)])  # a record made before the options: noise-free attacker, fresh noise
    assert "| gaussian, correct: lenient / strict % | - | 1 / 0 |" in old
    assert "noise-aware" not in old and "pair network" not in old
    md = dp_attack_md([release(1.0), release(2.0, "per-encoding", True), release(3.0, "per-batch", False),
                       release(4.0, "per-batch", True)])
    assert "| gaussian, correct, noise-aware attacker: lenient / strict % | - | 2 / 0 |" in md
    assert "| gaussian, correct, one noise per batch (not DP): lenient / strict % | - | 3 / 0 |" in md
    assert "| gaussian, correct, one noise per batch (not DP), noise-aware attacker: lenient / strict % | - | 4 / 0 |" in md
    assert "| gaussian, correct, noise-aware attacker: pair network accuracy, held-out / real release % | - | 61 / 50 |" in md
    assert md.count("noise sigma per coordinate") == 1
    assert _audit_label("dp-laplace-correct-per-batch") == "laplace, correct, one noise per batch (not DP)"
    assert _audit_label("dp-gaussian-paper") == "gaussian, paper (not DP)"


def test_cli_trains_the_per_batch_reading_with_a_warning_and_no_guarantee(capsys, tmp_path, tiny_model, cache_dir):
    import json

    from conftest import toy_glue_dir
    from privnlu.cli.main import main

    glue = toy_glue_dir(tmp_path, 24)
    out = tmp_path / "run"
    assert main(["train", "--task", "sst2", "--data-dir", str(glue), "--model", str(tiny_model), "--cache-dir",
                 str(cache_dir), "--quiet", "--scheme", "dp-ie", "--dp-epsilon", "8", "--dp-noise", "per-batch",
                 "--epochs", "1", "--batch-size", "8", "--seed", "0", "--out", str(out)]) == 0
    assert "--dp-noise per-batch (Algorithm 1 as printed: one noise vector per batch) is NOT DP" in capsys.readouterr().err
    rec = json.loads((out / "result.json").read_text())
    assert rec["dp"]["noise_reading"] == "per-batch" and rec["dp"]["accounted_epsilon"] is None
    assert not rec["dp"]["valid_dp_guarantee"]
    cards = [p.read_text() for p in out.rglob("README.md")]  # the model card (it once failed on the null epsilon)
    assert cards and all("one noise vector per batch" in c for c in cards)


def test_dp_account_states_that_the_per_batch_reading_claims_no_epsilon(capsys):
    from privnlu.cli.main import main

    args = ["dp", "account", "--dp-epsilon", "8", "--k", "4", "--encodings-per-example", "50", "--json"]
    assert main([*args, "--dp-noise", "per-batch"]) == 0
    out, err = capsys.readouterr()
    rec = json.loads(out)
    assert rec["noise_reading"] == "per-batch" and rec["accounted_epsilon"] is None and not rec["valid_dp_guarantee"]
    assert "NOT DP" in err and "--dp-calibration paper" not in err
    assert main(args) == 0  # the default reading: the same noise scale, and the target epsilon holds
    fresh = json.loads(capsys.readouterr().out)
    assert fresh["noise_reading"] == "per-encoding" and fresh["valid_dp_guarantee"] and fresh["noise"] == rec["noise"]
