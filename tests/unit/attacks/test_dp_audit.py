"""The empirical DP audit (privnlu.attacks.privacy_audit.mechanism, `privnlu dp audit`): sound mechanisms pass,
broken ones are caught.

Seeded statistical tests. For a sound mechanism the audit's bound exceeds the claim with probability <= 5 % over the
draws (95 % Clopper-Pearson); the seeds are fixed, so each assertion is deterministic. The broken mechanisms are
caught by a wide margin (a bound at least 1.3x the claim), so the verdict does not hinge on the seed.
"""

import json
import math

import numpy as np
import pytest
import torch

from privnlu.cli.main import main
from privnlu.attacks.privacy_audit.mechanism import (audit_dchi, audit_encoding, boundary_direction, clopper_pearson,
                                                     epsilon_bound, max_certifiable_epsilon, pick_pairs)
from privnlu.mechanisms.dchi import TokenSpace, m_rep, m_txt
from privnlu.mechanisms.dp import calibrate
from privnlu.rng import SecretGenerator

DRAWS = 20_000


def rng(seed=0):
    return SecretGenerator(seed, warn=False)


def test_clopper_pearson_and_power():
    lo, hi = clopper_pearson(np.array([0, 5, 10]), 10)
    assert lo[0] == 0 and hi[2] == 1 and hi[0] == pytest.approx(1 - 0.025 ** 0.1)
    lo, hi = clopper_pearson(50, 100)
    assert lo < 0.5 < hi and hi - lo == pytest.approx(0.203, abs=0.002)  # the textbook interval (0.398, 0.602)
    # power: ln(n / 3.69) at delta = 0 for large n
    assert max_certifiable_epsilon(10_000) == pytest.approx(math.log(10_000 / 3.689), abs=0.01)
    assert max_certifiable_epsilon(100_000, 1e-5) > max_certifiable_epsilon(10_000, 1e-5)
    assert epsilon_bound(5000, 5000, 10_000, 10_000, 0.0) == 0  # no distinguishing: no evidence


def test_boundary_inputs_in_the_sensitivity_norm():
    lap_paper = calibrate("laplace", epsilon=1, delta=1e-5, clip=2.0, dim=16, k=1, epochs=1, calibration="paper").mechanism
    v = boundary_direction(lap_paper)
    assert torch.linalg.vector_norm(v, 2) == pytest.approx(1) and torch.linalg.vector_norm(2 * 2.0 * v, 1) == pytest.approx(
        lap_paper.sensitivity)  # 2C sqrt(d): the true L1 sensitivity of L2-clipped inputs
    lap = calibrate("laplace", epsilon=1, delta=1e-5, clip=2.0, dim=16, k=1, epochs=1).mechanism
    assert torch.linalg.vector_norm(2 * 2.0 * boundary_direction(lap), 1) == pytest.approx(lap.sensitivity)


@pytest.mark.parametrize("kind,eps,k,epochs", [("gaussian", 1.0, 1, 1), ("laplace", 1.0, 1, 1), ("gaussian", 4.0, 2, 2),
                                               ("laplace", 2.0, 1, 3)])
def test_sound_calibration_passes(kind, eps, k, epochs):
    cal = calibrate(kind, epsilon=eps, delta=1e-5, clip=1.0, dim=16, k=k, epochs=epochs)
    r = audit_encoding(cal, draws=DRAWS, rng=rng(1))
    assert not r.violated and r.eps_lb <= eps and r.draws == DRAWS and r.held_out == DRAWS // 2
    assert r.eps_lb > 0.1 * eps  # the audit sees the mechanism: a real, non-trivial bound
    assert r.power == pytest.approx(max_certifiable_epsilon(DRAWS // 2, 1e-5))


def test_paper_laplace_calibration_is_caught():
    """L1 sensitivity 2C assumed on L2-clipped vectors: the true one is 2C sqrt(d)."""
    cal = calibrate("laplace", epsilon=1.0, delta=1e-5, clip=1.0, dim=64, k=1, epochs=1, calibration="paper")
    r = audit_encoding(cal, draws=DRAWS, rng=rng(2))
    assert r.violated and r.eps_lb > 1.3 * cal.target_epsilon
    assert r.eps_lb <= cal.epsilon  # ... and within what privnlu's accountant says the release really has
    assert "VIOLATION" in r.verdict and r.to_json()["violated"]


@pytest.fixture(scope="module")
def space():
    g = torch.Generator().manual_seed(0)
    special = torch.zeros(120, dtype=torch.bool)
    special[:3] = True
    return TokenSpace(torch.randn(120, 16, generator=g), special, tokens=[f"t{i}" for i in range(120)])


@pytest.mark.parametrize("mechanism", ["rep", "txt"])
def test_dchi_sound_passes_and_under_noised_is_caught(space, mechanism):
    eta = 0.5
    pairs = pick_pairs(space, eta, 2, target=2.0)
    assert all(a != b and a >= 3 and b >= 3 for a, b in pairs)  # regular tokens only
    sound = audit_dchi(space, eta, pairs, mechanism=mechanism, draws=DRAWS, rng=rng(3))
    for r in sound:
        d = float((space.embeddings[r.details["ids"][0]] - space.embeddings[r.details["ids"][1]]).norm())
        assert r.claimed_epsilon == pytest.approx(eta * d) and r.delta == 0
        assert not r.violated and 0 < r.eps_lb <= eta * d
    real = m_rep if mechanism == "rep" else m_txt

    def under_noised(sp, ids, e, g):  # claims eta, adds 10x less noise
        return real(sp, ids, 10 * e, g)

    broken = audit_dchi(space, eta, pairs, mechanism=mechanism, draws=DRAWS, rng=rng(4), sampler=under_noised)
    assert all(r.violated and r.eps_lb > 1.3 * r.claimed_epsilon for r in broken)


def test_cli_dp_audit(capsys, tmp_path):
    out = tmp_path / "audit.json"
    code = main(["dp", "audit", "--dp-mechanism", "laplace", "--dp-calibration", "paper", "--dp-epsilon", "1", "--draws", str(DRAWS),
                 "--seed", "0", "--quiet", "--out", str(out)])
    err = capsys.readouterr().err
    rec = json.loads(out.read_text())
    assert code == 1 and "VIOLATION" in err and rec["kind"] == "dp-audit" and rec["violated"]
    assert rec["results"][0]["draws"] == DRAWS and rec["results"][0]["claimed_epsilon"] == 1
    code = main(["dp", "audit", "--dp-mechanism", "gaussian", "--dp-epsilon", "1", "--draws", str(DRAWS), "--seed", "0", "--quiet"])
    assert code == 0 and "consistent with the claim" in capsys.readouterr().err
    for bad, match in ([["--dp-mechanism", "laplace"], "needs --dp-epsilon"], [["--dchi-mechanism", "rep"], "needs --eta"],
                       [["--dp-epsilon", "-1"], "out of range"]):
        code = main(["dp", "audit", *bad, "--quiet", "--out", str(tmp_path / "bad.json")])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and match in err[-1] and not (tmp_path / "bad.json").exists()


def test_cli_dchi_audit_on_a_model(capsys, tmp_path, tiny_model):
    out = tmp_path / "a.json"
    assert main(["dp", "audit", "--dchi-mechanism", "rep", "--eta", "2", "--model", str(tiny_model), "--pairs", "1",
                 "--draws", "4000", "--seed", "0", "--quiet", "--out", str(out)]) == 0
    r = json.loads(out.read_text())["results"][0]
    assert r["mechanism"] == "dchi-rep" and r["eps_lb"] <= r["claimed_epsilon"] and len(r["details"]["tokens"]) == 2


# -- bounded work: caps and a memory estimate, checked before any draw --------------------------------------------

def test_the_cli_caps_match_the_library():
    from privnlu.attacks.privacy_audit import mechanism as dp_audit
    from privnlu.cli.main import build_parser
    from privnlu.cli.options import walk

    audit = next(p for path, p in walk(build_parser()) if path == ("dp", "audit"))
    acts = {a.dest: a for a in audit._actions}
    assert acts["draws"].type.range.hi == dp_audit.MAX_DRAWS and acts["dim"].type.range.hi == dp_audit.MAX_DIM


def test_work_beyond_the_caps_or_memory_is_refused_before_any_draw(monkeypatch, capsys, tmp_path):
    from privnlu.attacks.privacy_audit import mechanism as dp_audit
    from privnlu.errors import PrivnluError

    dp_audit.check_work(100_000, 384, memory=8 * 2**30)  # the defaults fit a small machine
    assert dp_audit.memory_estimate(10**6, 64) < dp_audit.memory_estimate(10**7, 64)
    assert dp_audit.chunk_rows(64) == dp_audit.CHUNK_ROWS and dp_audit.chunk_rows(10**6) < 20  # wide: small chunks
    with pytest.raises(PrivnluError, match="GiB of memory"):
        dp_audit.check_work(50_000_000, 64, memory=2**30)
    with pytest.raises(PrivnluError, match="noise values"):
        dp_audit.check_work(10**7, 10**4)
    drawn = []
    monkeypatch.setattr(dp_audit, "physical_memory", lambda: 2**28)  # a 256 MiB machine
    monkeypatch.setattr(dp_audit, "audit_encoding", lambda *a, **k: drawn.append(1))
    out = tmp_path / "a.json"
    for argv, says in ([["--draws", "10000000"], "GiB of memory"], [["--draws", "200000000"], "out of range"],
                       [["--dim", "2000000"], "out of range"]):
        code = main(["dp", "audit", "--dp-epsilon", "1", *argv, "--quiet", "--out", str(out)])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and says in err[0] and not out.exists() and not drawn


@pytest.mark.parametrize("argv, says", [
    (["--dp-epsilon", "1", "--pairs", "2"], "--pairs apply to a d_chi claim"),
    (["--dp-epsilon", "1", "--target-loss", "1"], "--target-loss apply to a d_chi claim"),
    (["--scheme", "dchi-token", "--eta", "5", "--dim", "8"], "--dim apply to a DP claim"),
    (["--scheme", "dchi-token", "--eta", "5", "--encodings-per-example", "2"], "apply to a DP claim"),
    (["--scheme", "dchi-token", "--eta", "5", "--dp-epsilon", "1"], "takes no --dp-epsilon"),
])
def test_one_claim_per_audit(capsys, tmp_path, argv, says):
    """A DP and a d_chi claim in one call are refused in one line, never half audited."""
    out = tmp_path / "a.json"
    code = main(["dp", "audit", *argv, "--draws", "8", "--quiet", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and says in err[0] and not out.exists()
