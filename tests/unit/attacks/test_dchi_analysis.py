"""d_chi analyses: k-NN geometry, plausible deniability (exact fast path), inversion attack, eta calibration, report."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from privnlu.attacks.dchi.inversion import NearestNeighbourInversion, inversion_accuracy
from privnlu.cli.main import main
from privnlu.attacks.dchi import analysis as dchi_analysis
from privnlu.mechanisms.dchi import TokenSpace, dchi_noise, m_txt
from privnlu.mechanisms.dchi_stats import (MinPlusStats, brute_min_plus_argmin, knn_distances, min_plus_argmin,
                                          plausible_deniability)
from privnlu.rng import SecretGenerator


def gen(seed: int) -> SecretGenerator:
    return SecretGenerator(seed, warn=False)


@pytest.fixture(scope="module")
def small_space():
    """A 600-token, 24-d random table with 10 special tokens (fast, exact brute force is cheap)."""
    g = np.random.default_rng(0)
    emb = torch.from_numpy(g.standard_normal((600, 24))).float() * 0.2
    special = torch.zeros(600, dtype=torch.bool)
    special[:10] = True
    return TokenSpace(emb, special)


def test_knn_distances_match_brute_force(small_space):
    d = torch.cdist(small_space.regular.double(), small_space.regular.double())
    srt = d.sort(1).values  # column 0 is the token itself
    got = knn_distances(small_space, (1, 5, 100), chunk=64)
    for k in (1, 5, 100, 589):
        assert got[k] == pytest.approx(srt[:, k].mean().item(), rel=1e-4)


def test_min_plus_argmin_equals_brute_force(small_space):
    """The certified fast path returns exactly the full-search argmin, through each of its steps."""
    e, sq = small_space.regular, small_space.regular_sq
    a = torch.addmm(sq.unsqueeze(0), e[:200], e.T, beta=1.0, alpha=-2.0)
    seen = MinPlusStats()
    for eta, seed in ((3.0, 0), (10.0, 1), (40.0, 2), (120.0, 3), (1e4, 4)):
        b = 2.0 * (dchi_noise(300, e.shape[1], eta, gen(seed)) @ e.T)
        ref = brute_min_plus_argmin(a, b)
        for k, k2 in ((2, 2), (4, 16), (16, 64)):
            st = MinPlusStats()
            assert torch.equal(min_plus_argmin(a, b, k=k, k2=k2, stats=st), ref), (eta, k, k2)
            assert st.certified + st.stage2 + st.brute == st.pairs == a.shape[0] * b.shape[0]
            for f in ("certified", "stage2", "brute"):
                setattr(seen, f, getattr(seen, f) + getattr(st, f))
    assert seen.certified > 0 and seen.stage2 > 0 and seen.brute > 0  # every step was exercised


def test_deniability_fast_equals_independent_float64_search(small_space):
    """N_w and S_w equal those of an independent float64 nearest-neighbour search on the same noise bank."""
    draws, eta = 80, 30.0
    rows = torch.arange(0, 590, 7)
    fast = plausible_deniability(small_space, eta, gen(11), draws=draws, rows=rows, word_chunk=1000, k=4, k2=16)
    bank = dchi_noise(draws, small_space.dim, eta, gen(11)).double()  # one chunk: the same first bank
    e = small_space.regular.double()
    for i, w in enumerate(rows.tolist()):
        out = torch.cdist(e[w] + bank, e).argmin(1)
        assert fast.n_w[i] == (out == w).sum() and fast.s_w[i] == out.unique().numel()
    slow = plausible_deniability(small_space, eta, gen(11), draws=draws, rows=rows, word_chunk=1000, exact_search=True)
    assert torch.equal(fast.n_w, slow.n_w) and torch.equal(fast.s_w, slow.s_w) and slow.brute == 1.0
    assert 0 < fast.certified <= 1 and abs(fast.certified + fast.stage2 + fast.brute - 1) < 1e-9


def test_deniability_limits_and_agreement_with_m_txt(small_space):
    hi = plausible_deniability(small_space, 1e7, gen(2), draws=50)
    assert (hi.n_w == 50).all() and (hi.s_w == 1).all()
    # N_w / draws estimates P(M_txt(w) = w): compare with direct M_txt draws, pooled over words (4 s.e.)
    eta, draws = 12.0, 100
    d = plausible_deniability(small_space, eta, gen(3), draws=draws)
    p_fast = d.n_w.sum().item() / (len(d.n_w) * draws)
    ids = small_space.regular_ids.repeat(draws)
    p_direct = (m_txt(small_space, ids, eta, gen(4)) == ids).float().mean().item()
    se = np.sqrt(p_direct * (1 - p_direct) / len(ids)) * 2  # words are shared: be generous
    assert 0.05 < p_fast < 0.95 and abs(p_fast - p_direct) < 4 * se + 0.01
    assert (d.s_w >= 1).all() and (d.s_w <= draws).all() and (d.n_w <= draws).all()


def test_inversion_attack_grants_only_the_public_table(small_space):
    attacker = NearestNeighbourInversion(small_space)
    assert set(vars(attacker)) == {"public_table"}
    ids = small_space.regular_ids[:200]
    assert inversion_accuracy(small_space, ids, 1e7, gen(5)) == 1.0
    low, high = inversion_accuracy(small_space, ids.repeat(5), 20.0, gen(6)), inversion_accuracy(small_space, ids.repeat(5), 200.0, gen(6))
    assert low < high


def test_calibrate_eta_hits_target(small_space):
    ids = small_space.regular_ids.repeat(3)
    rec = dchi_analysis.calibrate_eta(small_space, ids, 0.5, gen(7), eta_range=(1.0, 1e4))
    assert abs(rec["accuracy_at_eta"] - 0.5) < 0.02
    # a fresh evaluation at the calibrated eta lands near the target (sampling error of 1770 tokens, 4 s.e. ~ 0.05)
    assert abs(inversion_accuracy(small_space, ids, rec["eta"], gen(8)) - 0.5) < 0.06


def test_calibrate_eta_bad_target(small_space):
    from privnlu.errors import PrivnluError

    with pytest.raises(PrivnluError, match="outside"):
        dchi_analysis.calibrate_eta(small_space, small_space.regular_ids, 0.5, gen(9), eta_range=(1e5, 1e6))


def test_cli_analyses_and_report(capsys, tmp_path, tiny_model):
    outs = []
    for analysis, extra in [("geometry", ["--sample", "200"]), ("examples", ["--draws", "50"]),
                            ("deniability", ["--sample", "64", "--draws", "100", "--eta", "2000"])]:
        out = tmp_path / f"{analysis}.json"
        assert main(["dchi", "analyze", analysis, "--out", str(out), "--model", str(tiny_model), "--seed", "0", "--etas", "100,1000", *extra]) == 0
        rec = json.loads(out.read_text())
        assert rec["kind"] == "dchi" and rec["analysis"] == analysis
        outs.append(out)
    inv = {"kind": "dchi", "analysis": "inversion", "task": "sst2", "dim": 32, "tokens": 10,
           "rows": [{"eta": 50, "accuracy": 0.1, "paper": 0.0154}, {"eta": 100, "accuracy": 0.5, "paper": 0.3402}]}
    (tmp_path / "inv.json").write_text(json.dumps(inv))
    assert main(["report", *map(str, outs), str(tmp_path / "inv.json"), "--out", str(tmp_path / "rep")]) == 0
    page = next((tmp_path / "rep").glob("*.html")).read_text()
    assert "token inversion accuracy against eta" in page and "plausible deniability" in page and "privatized examples" in page
    for fig in ("dchi_inversion", "dchi_geometry", "dchi_deniability"):
        assert (tmp_path / "rep" / f"{fig}.png").exists()
    den = json.loads(outs[2].read_text())
    assert len(den["word_ids"]) == len(den["n_w"]) == len(den["s_w"]) == 64
    assert abs(den["certified"] + den["stage2"] + den["brute"] - 1) < 1e-9


def test_cli_calibrate_errors(capsys, tiny_model):
    assert main(["dchi", "calibrate", "--target", "1.5", "--model", str(tiny_model)]) == 2
    assert main(["dchi", "analyze", "nonsense", "--out", "x.json", "--model", str(tiny_model)]) == 2
    err = capsys.readouterr().err
    assert "--target: '1.5' is out of range: number in (0, 1)" in err and "invalid choice: 'nonsense'" in err
