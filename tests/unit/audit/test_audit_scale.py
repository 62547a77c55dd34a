"""The audit's answer on anyone's data: one leakage scale across threats (advantage over each threat's own chance
line), an empirical epsilon beside every formal one, and flags that come from intervals."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from privnlu.audit.frontier import NO_USEFUL_UTILITY, Point, recommend
from privnlu.audit.leakage import advantage, decision_epsilon, on_scale, ranking_epsilon, release_epsilon
from privnlu.stats import clopper_pearson

WORDS = ["river", "stone", "cloud", "amber", "violet", "harbor", "meadow", "lantern", "copper", "willow"]


# -- the scale and the empirical epsilon, as formulas --------------------------------------------------------------


def test_advantage_maps_the_chance_line_to_zero_and_keeps_the_interval():
    assert advantage(16.7, 16.7) == 0 and advantage(100.0, 4.8) == 100.0
    assert advantage(14.0, 100 / 6) == pytest.approx(100 * (14 - 100 / 6) / (100 - 100 / 6))
    lo, hi = clopper_pearson(14, 100)
    s = on_scale(14.0, [100 * lo, 100 * hi], 100 / 6)
    assert s["advantage_ci95"][0] < 0 < s["advantage_ci95"][1] and s["at_chance"]  # 14 % against 16.7 %: chance
    lo, hi = clopper_pearson(22, 100)
    s = on_scale(22.0, [100 * lo, 100 * hi], 100 / 6)
    assert s["advantage"] == pytest.approx(6.4, abs=0.05) and s["at_chance"]  # 22 % against 16.7 % with n = 100
    s = on_scale(22.0, [100 * lo, 100 * hi], 100 / 21)
    assert not s["at_chance"]  # the same 22 % against a 4.8 % line is a leak


def test_release_epsilon_is_the_clopper_pearson_bound_and_zero_for_a_blind_guess():
    # every private sentence named, no non-member: the largest bound n = 100 against 2,000 can certify
    full = release_epsilon(100, 100, 0, 2000, 1e-5)["epsilon_lb"]
    fnr_hi = 1 - (0.025) ** (1 / 100)  # the upper end of a two-sided 95 % interval of 0 misses
    fpr_hi = 1 - (0.025) ** (1 / 2000)
    assert full == pytest.approx(math.log((1 - 1e-5 - fnr_hi) / fpr_hi), abs=1e-3)
    assert release_epsilon(0, 100, 100, 2000, 1e-5)["epsilon_lb"] == 0.0
    # a blind attacker (names at random) gets a bound of about 0: 95 % of the draws give exactly 0 (fixed seed)
    rng = np.random.default_rng(0)
    bounds = []
    for _ in range(200):
        named = rng.choice(2100, size=100, replace=False)
        tp = int((named < 100).sum())
        bounds.append(decision_epsilon(tp, 100, 100 - tp, 2000, 1e-5))
    assert np.mean(np.asarray(bounds) > 0) <= 0.05  # stated tolerance: the bound's 5 % error rate


def _dp_sgd_membership(under_noise: float | None) -> tuple[float, float]:
    """A DP-SGD head (the audit's trainer) claimed at epsilon 1 on 500 random-label rows in 2,048 dimensions, 500
    more rows held out; the audit's ranking rule on the label confidence. (empirical lower bound, claim)."""
    from privnlu.attacks.membership.inference import logit_confidence
    from privnlu.training.dp_sgd import DPSGDConfig, plan_noise, train_head

    g = torch.Generator().manual_seed(0)
    n = 500
    x, y = torch.randn(2 * n, 2048, generator=g), torch.randint(0, 2, (2 * n,), generator=g)
    config = DPSGDConfig(epsilon=1.0, delta=1e-5, clip=1.0, epochs=3, batch_size=n, lr=0.01, seed=0)
    sigma = plan_noise(n, config)["noise_multiplier"] / (under_noise or 1.0)
    res = train_head(x[:n], y[:n], num_outputs=2, config=dataclasses.replace(config, noise_multiplier=sigma), hidden=())
    with torch.no_grad():
        scores = logit_confidence(res.model(x), y)
    return ranking_epsilon(scores, torch.arange(2 * n) < n, 1e-5)["epsilon_lb"], config.epsilon


def test_empirical_epsilon_refutes_an_under_noised_dp_sgd_and_not_a_sound_one():
    broken, claim = _dp_sgd_membership(under_noise=20.0)
    assert broken > claim  # the noise divided by 20: the claim of epsilon 1 is refuted (seeded; about 1.8 here)
    sound, claim = _dp_sgd_membership(under_noise=None)
    assert sound <= claim  # the calibrated noise: not refuted (about 0 here)


# -- the issue's case: membership non-members only from dev, every view on one scale ----------------------------


def _threat(name, rate, chance, n=100, eps=0.0, **extra):
    lo, hi = clopper_pearson(round(rate * n / 100), n)
    ci = [round(100 * float(lo), 2), round(100 * float(hi), 2)]
    return {"threat": name, "rate": rate, "ci95": ci, "random_guess": chance, "identified": round(rate * n / 100),
            "n_private": n, "attack": "LiRA" if name == "model" else "search", **on_scale(rate, ci, chance),
            "empirical_epsilon": {"epsilon_lb": eps}, "candidates": 2100, "distractors": 2000,
            **({"auc": 0.5, "tpr_at_fpr": {"0.01": None, "0.001": None}} if name == "model" else {}), **extra}


def _point(scheme, title, setting, utility, ci, threats, guarantee="none", formal=None):
    worst = max(threats, key=lambda t: t["advantage"])
    return {"kind": "audit", "task": "mine", "mode": "frozen", "metric": "accuracy", "scheme": scheme,
            "scheme_title": title, "setting": setting, "utility": utility, "utility_ci95": ci, "n_train": 1000,
            "seconds": 3.0, "random_guess_reid": 4.76, "chance_utility": 42.3, "own_leakage": {},
            "guarantee": {"kind": "dp" if formal else "none", "text": guarantee, **({"epsilon": formal} if formal else {})},
            "reid": worst, "threats": {t["threat"]: t for t in threats},
            "examples": [{"private": "a secret", "released": "noise", "recovered": "a secret"}]}


MEMBER_CHANCE = 100 * 100 / 600  # 100 members among 600 candidates: non-members only from the dev file
RELEASE_CHANCE = 100 * 100 / 2100

ISSUE = [
    _point("none", "no privacy", "", 85.0, [82.6, 87.2],
           [_threat("release", 100.0, RELEASE_CHANCE, eps=6.3), _threat("model", 30.0, MEMBER_CHANCE, eps=0.4)]),
    _point("texthide", "TextHide", "m = 256, k = 4", 82.0, [79.5, 84.3],
           [_threat("release", 60.0, RELEASE_CHANCE, eps=3.1), _threat("model", 18.0, MEMBER_CHANCE)]),
    _point("dp-ie", "DP instance encoding", "epsilon = 1", 60.0, [56.9, 63.0],
           [_threat("release", 5.0, RELEASE_CHANCE), _threat("model", 22.0, MEMBER_CHANCE)],
           "(1, 1e-05)-DP", 1.0),
    _point("dp-sgd", "DP-SGD", "epsilon = 3", 79.0, [76.4, 81.4], [_threat("model", 17.0, MEMBER_CHANCE)],
           "(3, 1e-04)-DP", 3.0),
    _point("dp-sgd", "DP-SGD", "epsilon = 8", 81.0, [78.5, 83.3], [_threat("model", 14.0, MEMBER_CHANCE)],
           "(8, 1e-04)-DP", 8.0),
]


def test_a_point_at_its_own_chance_line_is_at_chance_on_the_frontier_in_the_table_and_the_bottom_line():
    from privnlu.report.audit_sections import analysis, detail_rows, frontier_axes, rows

    points, _, _, advice = analysis(ISSUE)
    by = {p.label: p for p in points}
    sgd8 = by["DP-SGD, epsilon = 8"]
    assert sgd8.leak == pytest.approx(advantage(14.0, MEMBER_CHANCE), abs=0.01) and sgd8.leak < 0
    # the frontier plots the advantage (x), not the raw 14 % against a 4.8 % line
    fig = frontier_axes(ISSUE)
    xs = sorted(round(float(x), 2) for coll in fig.axes[0].collections for x, _ in coll.get_offsets())
    assert round(sgd8.leak, 2) in xs and 14.0 not in xs
    dpie = by["DP instance encoding, epsilon = 1"]
    assert dpie.leak == pytest.approx(advantage(22.0, MEMBER_CHANCE), abs=0.01) and dpie.threat == "model"
    # the table: each threat against its own chance line, the point at chance
    table = {r[0] + r[1]: r for r in rows(ISSUE)}
    row = table["DP-SGDepsilon = 8"]
    assert row[3].endswith(", at chance") and row[4] == "model"
    details = {r[0] + r[1]: r for r in detail_rows(ISSUE)}
    assert details["DP-SGDepsilon = 8"][3].endswith("14.0 vs 16.7") and details["DP-SGDepsilon = 8"][2] == "-"
    assert details["DP instance encodingepsilon = 1"][2] == "5.0 vs 4.8"
    # the bottom line: the most useful setting at chance, against its own line, with its guarantee
    assert advice[0].startswith("Bottom line: use DP-SGD, epsilon = 8; it keeps 95 % of the non-private utility")
    assert "re-identifies 14.0 % of the private sentences against a chance line of 16.7 %" in advice[0]
    assert "no better than random guessing" in advice[0] and advice[0].endswith("formal guarantee: (8, 1e-04)-DP.")
    assert "treat the data as exposed" not in advice[0] and "4.8" not in advice[0]
    assert any(a.startswith("3 of 4 privatized settings are at chance") for a in advice)


def test_when_no_setting_is_at_chance_the_least_leaking_useful_one_is_named_on_the_common_scale():
    leaky = [ISSUE[0], ISSUE[1],
             _point("dp-ie", "DP instance encoding", "epsilon = 8", 70.0, [67.1, 72.8],
                    [_threat("release", 20.0, RELEASE_CHANCE), _threat("model", 19.0, MEMBER_CHANCE)], "(8, 1e-05)-DP", 8.0)]
    from privnlu.report.audit_sections import analysis

    _, _, _, advice = analysis(leaky)
    assert advice[0].startswith("Bottom line: no useful setting we measured keeps every attack at chance; the least "
                                "leaking useful one is DP instance encoding, epsilon = 8")
    assert f"advantage over chance {advantage(20.0, RELEASE_CHANCE):.1f} %" in advice[0]
    assert "against a chance line of 4.8 %" in advice[0] and advice[0].endswith("treat the data as exposed.")


def test_a_score_interval_that_reaches_the_majority_class_is_flagged():
    from privnlu.report.audit_sections import NO_USEFUL_LABEL, frontier_axes, rows, utility_cell

    near = _point("dp-ie", "DP instance encoding", "epsilon = 1", 42.67, [37.0, 48.4],
                  [_threat("release", 5.0, RELEASE_CHANCE)], "(1, 1e-05)-DP", 1.0)
    above = _point("dp-ie", "DP instance encoding", "epsilon = 8", 43.0, [42.4, 43.6],
                   [_threat("release", 5.0, RELEASE_CHANCE)], "(8, 1e-05)-DP", 8.0)
    assert NO_USEFUL_UTILITY in utility_cell(near)  # 42.67 > 42.3, but its interval reaches it
    assert NO_USEFUL_UTILITY not in utility_cell(above) and "(42.4-43.6)" in utility_cell(above)
    recs = [ISSUE[0], near, above]
    assert NO_USEFUL_UTILITY in rows(recs)[1][2]
    handles, labels = frontier_axes(recs).axes[0].get_legend_handles_labels()
    crossed = handles[labels.index(NO_USEFUL_LABEL)].get_offsets().tolist()
    assert [y for _, y in crossed] == [42.67]
    advice = recommend([Point.from_record(r) for r in recs], baseline=Point.from_record(ISSUE[0]), metric="accuracy",
                       chance_utility=42.3)
    assert "use DP instance encoding, epsilon = 8" in advice[0]  # the same rule in the recommendation
    assert advice[-1].startswith("No useful utility") and "epsilon = 1 (42.7)" in advice[-1]


class _Figures:
    """A report context that keeps no figure file (the section's HTML is what is checked)."""

    def figure(self, fig, name, alt):
        return ""


def test_an_empirical_epsilon_above_the_formal_claim_is_a_red_flag_at_the_top():
    from privnlu.report import section_html, section_markdown

    broken = _point("dp-ie", "DP instance encoding", "epsilon = 1", 80.0, [77.0, 82.8],
                    [_threat("model", 60.0, MEMBER_CHANCE, eps=2.4)], "(1, 1e-05)-DP", 1.0)
    recs = [ISSUE[0], broken]
    md = section_markdown("audit", recs)
    assert md.index("Red flag: the attacks on DP instance encoding, epsilon = 1 give an empirical epsilon of at least "
                    "2.40") < md.index("Bottom line")
    assert "REFUTES the formal 1" in md
    page = str(section_html("audit", recs, _Figures()))
    assert page.index('class="red-flag"') < page.index("Bottom line")
    ok = _point("dp-ie", "DP instance encoding", "epsilon = 8", 80.0, [77.0, 82.8],
                [_threat("model", 20.0, MEMBER_CHANCE, eps=0.3)], "(8, 1e-05)-DP", 8.0)
    assert not any(a.startswith("Red flag") for a in recommend([Point.from_record(r) for r in (ISSUE[0], ok)],
                                                              baseline=Point.from_record(ISSUE[0]), metric="accuracy"))


# -- the score's interval -----------------------------------------------------------------------------------------


def test_score_intervals_exact_for_accuracy_and_a_bootstrap_that_covers_for_f1_and_mcc():
    from privnlu.data.metrics import compute, score_interval

    gold = np.array([0, 1] * 50)
    pred = gold.copy()
    pred[:20] = 1 - pred[:20]
    lo, hi = clopper_pearson(80, 100)
    assert score_interval("accuracy", pred, gold) == [round(100 * float(lo), 2), round(100 * float(hi), 2)]
    for metric in ("f1_accuracy", "matthews"):
        ci = score_interval(metric, pred, gold)
        assert ci[0] < compute(metric, pred, gold)["score"] < ci[1]
    # coverage: 200 samples of 200 examples from a fixed population, seeded; stated tolerance 88-100 % for 95 %
    rng = np.random.default_rng(1)
    pop_gold = rng.integers(0, 2, 20000)
    pop_pred = np.where(rng.random(20000) < 0.8, pop_gold, 1 - pop_gold)
    for metric in ("f1_accuracy", "matthews"):
        truth = compute(metric, pop_pred, pop_gold)["score"]
        hits = 0
        for _ in range(200):
            idx = rng.integers(0, 20000, 200)
            lo, hi = score_interval(metric, pop_pred[idx], pop_gold[idx])
            hits += lo <= truth <= hi
        assert 0.88 <= hits / 200 <= 1.0, (metric, hits)
    assert score_interval("pearson_spearman", [0.1, 0.2], [0.3, 0.1]) is None


# -- end to end with a tiny model ---------------------------------------------------------------------------------


def _own_files(tmp_path, n_train, n_dev):
    """Learnable rows: the label is carried by a word; no spare training rows (the audit uses the whole file)."""
    rows = [f"the {WORDS[i % 10]} {'shines bright' if i % 2 else 'falls dark'} near {WORDS[(i // 10) % 10]} {i}"
            for i in range(n_train + n_dev)]
    (tmp_path / "train.csv").write_text("text,label\n" + "".join(f"{t},{i % 2}\n" for i, t in enumerate(rows[:n_train])))
    (tmp_path / "dev.csv").write_text("text,label\n" + "".join(f"{t},{i % 2}\n" for i, t in enumerate(rows[n_train:])))
    return ["--task", "mine", "--train-file", str(tmp_path / "train.csv"), "--dev-file", str(tmp_path / "dev.csv")]


def test_own_file_audit_puts_each_threat_against_its_own_chance_line(tiny_model, cache_dir, tmp_path):
    from privnlu.cli.main import main

    out = tmp_path / "audit"
    rc = main(["audit", *_own_files(tmp_path, 160, 40), "--model", str(tiny_model), "--schemes", "none,dp-sgd",
               "--dp-sgd-epsilons", "8", "--private", "8", "--distractors", "60", "--aux-size", "20", "--public-size",
               "40", "--epochs", "1", "--mi-references", "2", "--cache-dir", str(cache_dir), "--out", str(out), "--seed",
               "0", "--quiet"])
    assert rc == 0
    recs = {r["scheme"]: r for r in (json.loads(p.read_text()) for p in (out / "points").glob("*.json"))}
    model = recs["dp-sgd"]["threats"]["model"]
    # no spare training rows: the non-members are the 40 dev rows, so the model threat's line is 8 / 48
    assert model["n_nonmembers"] == 40 and model["chance"] == pytest.approx(100 * 8 / 48, abs=1e-3)
    release = recs["none"]["threats"]["release"]
    assert release["chance"] == pytest.approx(100 * 8 / 68, abs=1e-3)  # 60 distractors from the training rows
    for r in recs.values():
        worst = max(r["threats"].values(), key=lambda t: t["advantage"])
        assert r["reid"]["advantage"] == worst["advantage"]  # the worst threat is chosen on the common scale
        assert r["at_chance"] == all(t["advantage_ci95"][0] <= 0 for t in r["threats"].values())
    md = (out / "report" / "index.html").read_text()
    assert "vs 16.7" in md and "empirical epsilon" in md and "Every threat against its own chance line" in md
    csv_rows = (out / "points.csv").read_text().splitlines()
    assert csv_rows[0].startswith("name,scheme,setting,utility,utility_lo") and len(csv_rows) == 3


def test_a_joint_mode_point_is_attacked_with_lira_and_reference_models_fine_tuned_by_its_recipe(
        tiny_model, cache_dir, tmp_path, monkeypatch):
    import privnlu.audit.membership as mem
    from privnlu.audit import AuditSettings
    from privnlu.audit.run import run_audit

    modes = []
    real = mem.train_run
    monkeypatch.setattr(mem, "train_run", lambda spec, *a, **k: modes.append((spec.mode, spec.train.seed)) or real(spec, *a, **k))
    s = AuditSettings(task="tweets", model=str(tiny_model), mode="joint", train_limit=60, dev_limit=24, epochs=1,
                      seed=0, n_private=6, distractors=30, aux_size=12, public_size=20, schemes=("none",),
                      cache_dir=str(cache_dir))
    rec = run_audit(s, tmp_path / "audit", progress=False)[0]
    model = rec["threats"]["model"]
    assert "LiRA" in model["attack"] and "fine-tuned" in model["attack"] and "4 reference models" in model["attack"]
    assert [m for m, _ in modes] == ["joint"] * 4  # four fine-tuning runs, each with a seed that is not the owner's
    assert 0 not in {seed for _, seed in modes} and len({seed for _, seed in modes}) == 4
    assert model["empirical_epsilon"]["rules"] >= 1 and "advantage" in model


def test_reference_models_never_take_the_audited_models_seed():
    from privnlu.audit.membership import reference_seed

    assert reference_seed(None, 0) is None
    assert all(reference_seed(s, r) != s for s in (0, 1, 42) for r in range(16))
    assert len({reference_seed(0, r) for r in range(16)}) == 16
