"""privnlu audit: frontier, Pareto front and recommendation from synthetic points; a tiny end-to-end audit."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial

import pytest

from privnlu.audit.frontier import Point, clopper_pearson, dominates, pareto_front, recommend


def P(label, u, leak, g="none", ci=None, **kw):
    return Point(label, u, leak, g, leak_ci=ci, **kw)


def test_dominates_and_pareto_front():
    pts = [P("base", 90, 100), P("a", 80, 40), P("b", 70, 40), P("c", 60, 2), P("d", 85, 60), P("e", 50, 2), P("f", 80, 40)]
    assert dominates(pts[1], pts[2]) and not dominates(pts[2], pts[1])
    assert not dominates(pts[1], pts[6]) and not dominates(pts[6], pts[1])  # equal points do not dominate each other
    front = pareto_front(pts)
    assert [p.label for p in front] == ["c", "a", "f", "d", "base"]  # sorted by leakage; b and e dominated
    assert pareto_front([]) == []


def test_recommendation_is_computed_from_the_numbers():
    base = P("no privacy", 90, 100, ci=(98, 100))
    pts = [base, P("scheme A, x = 1", 80, 40, "none", (30, 50)), P("scheme B, y = 2", 60, 0.8, "eps 8", (-1.0, 3.0)),
           P("scheme C", 55, 0.5, "eta 9", (-2.0, 2.5))]
    text = recommend(pts, baseline=base, metric="accuracy", ceilings=(1, 5, 50))
    # the bottom line: the most useful setting at chance (its interval reaches 0)
    assert text[0].startswith("Bottom line: use scheme B, y = 2; it keeps 67 % of the non-private utility (60.0 accuracy")
    assert "no better than random guessing (advantage over chance 0.8 %, 95 % CI -1.0 to 3.0)" in text[0]
    assert text[0].endswith("formal guarantee: eps 8.")
    text = text[1:]
    assert text[0].startswith("Leakage at most 1 % above chance: the best utility is 60.0 accuracy from scheme B")
    assert "30.0 points below no privacy (90.0)" in text[0]
    assert "60.0 accuracy from scheme B, y = 2" in text[1] and "eps 8" in text[1]
    assert "80.0 accuracy from scheme A, x = 1" in text[2]
    assert text[3].startswith("2 of 3 privatized settings are at chance under every threat")
    assert "the most useful of them is scheme B, y = 2 at 60.0" in text[3]
    # other numbers, other words: nothing hard-coded
    moved = [base, replace(pts[1], leak=0.2), pts[2], pts[3]]
    assert "80.0 accuracy from scheme A" in recommend(moved, baseline=base, metric="accuracy", ceilings=(1,))[1]
    none = recommend([base, P("X", 70, 30, ci=(20, 40))], baseline=base, metric="mcc", ceilings=(5,))
    assert none[1:] == ["Leakage at most 5 % above chance: no measured setting gets there; the lowest is 30.0 % from X (70.0 mcc)."]
    assert recommend([base], baseline=base, metric="accuracy")[0].startswith("No privatized setting")
    # a point whose utility reaches the majority class is never the best utility
    at_chance = recommend(pts, baseline=base, metric="accuracy", ceilings=(1, 50), chance_utility=56.0)
    assert at_chance[1].startswith("Leakage at most 1 % above chance: the best utility is 60.0")
    assert at_chance[-1].startswith("No useful utility") and "scheme C (55.0)" in at_chance[-1]


def test_recommendation_names_the_worst_threat_and_the_only_useful_scheme():
    from privnlu.audit.run import worst_threat

    base = P("no privacy", 80, 100)
    sgd = Point("DP-SGD, epsilon = 8", 70, 1.0, "(8, 1e-05)-DP", "model", leak_ci=(-3.0, 6.0))
    pts = [base, sgd, Point("DP-SGD, epsilon = 1", 52, 0.5, "(1, 1e-05)-DP", "model", leak_ci=(-3.0, 5.0)),
           Point("TextHide, m = 256, k = 4", 50, 80.0, "none", "release", leak_ci=(70.0, 88.0))]
    text = recommend(pts, baseline=base, metric="accuracy", ceilings=(10,), chance_utility=42.0)
    assert text[0].startswith("Bottom line: use DP-SGD, epsilon = 8")
    assert "through the trained model (membership inference), its worst threat" in text[1]
    assert "Only DP-SGD gives both useful utility" in text[2] and "DP-SGD, epsilon = 8 at 70.0" in text[2]
    # a second scheme that is useful and private too: no "only" sentence
    other = Point("DP instance encoding, epsilon = 8", 60, 0.0, "(8, 1e-05)-DP", "release", leak_ci=(-2.0, 3.0))
    assert not any(t.startswith("Only") for t in recommend(pts + [other], baseline=base, metric="accuracy",
                                                               ceilings=(10,), chance_utility=42.0))
    # the worst threat is the largest advantage over its own chance line, not the largest rate
    threats = {"release": {"rate": 30.0, "random_guess": 25.0}, "model": {"rate": 12.0, "random_guess": 4.0}}
    assert worst_threat(threats) == threats["model"]
    scaled = {"release": {"rate": 30.0, "advantage": 6.7}, "model": {"rate": 12.0, "advantage": 8.3}}
    assert worst_threat(scaled) == scaled["model"]


def test_clopper_pearson_and_reidentification():
    from privnlu.audit.run import reidentification

    lo, hi = clopper_pearson(0, 20)
    assert lo == 0 and hi == pytest.approx(16.84, abs=0.01)  # 1 - 0.025 ** (1 / 20)
    lo, hi = clopper_pearson(20, 20)
    assert hi == 100 and lo == pytest.approx(83.16, abs=0.01)
    r = reidentification([0, 0, 3, 7, 12], n=10)  # candidates 0..9 are private; a name counts once
    assert r["identified"] == 3 and r["rate"] == 30.0


def _tiny_settings(model, cache, **kw):
    from privnlu.audit import AuditSettings

    base = dict(task="tweets", model=str(model), train_limit=120, dev_limit=40, epochs=1, seed=0, n_private=8, distractors=60,
                attack_epochs=3, aux_size=20, public_size=40, dp_epsilons=(8.0,), dp_sgd_epsilons=(8.0,),
                dchi_targets=(0.34,), calibration_tokens=300,
                cache_dir=str(cache))
    base.update(kw)
    return AuditSettings(**base)


@pytest.fixture()
def small_attack(monkeypatch):
    """A cheaper reconstruction attacker: the logic is the same, the pair network sees fewer pairs."""
    import privnlu.audit.run as run_mod
    from privnlu.attacks.reconstruction.attack import ReconstructionConfig

    monkeypatch.setattr(run_mod, "ReconstructionConfig", partial(ReconstructionConfig, sim_releases=1, pairs_per_release=2000,
                                                                 train_epochs=1, ls_iters=10, ls_restarts=1, nmf_iters=20))


def test_tiny_audit_end_to_end_resumes_and_reports(tiny_model, cache_dir, tmp_path, small_attack, monkeypatch):
    import privnlu.audit.run as run_mod
    from privnlu.audit.run import run_audit
    from privnlu.schemes import names
    from privnlu.report import build_report, markdown_report

    out = tmp_path / "audit"
    s = _tiny_settings(tiny_model, cache_dir)
    recs = run_audit(s, out, progress=False)
    assert [r["scheme"] for r in recs] == list(names())
    for r in recs:
        assert r["kind"] == "audit" and 0 <= r["reid"]["rate"] <= 100 and r["reid"]["candidates"] == 68
        assert r["random_guess_reid"] == pytest.approx(100 * 8 / 68, abs=1e-3)
        assert (out / "points" / f"{r['name']}.json").exists()
        model = r["threats"]["model"]  # membership inference on every point's model, 8 members among 60 non-members
        assert model["n_members"] == 8 and model["n_nonmembers"] == 60 and 0 <= model["auc"] <= 1
        assert model["random_guess"] == pytest.approx(100 * 8 / 68, abs=1e-3) and "LiRA" in model["attack"]
        assert model["tpr_at_fpr"]["0.001"] is None  # unresolved with fewer than 1,000 non-members
        assert r["reid"]["threat"] in r["threats"]
        if r["scheme"] != "dp-sgd":
            assert len(r["examples"]) == 3 and all(e["private"] for e in r["examples"])
    by = {r["scheme"]: r for r in recs}
    assert set(by["dp-sgd"]["threats"]) == {"model"} and by["dp-sgd"]["reid"]["threat"] == "model"  # only the model
    assert by["dp-sgd"]["guarantee"]["kind"] == "dp" and by["dp-sgd"]["guarantee"]["epsilon"] <= 8.0 + 1e-6
    assert by["none"]["reid"]["rate"] == 100.0  # the clean representation is found exactly
    assert by["texthide"]["guarantee"]["kind"] == "none"
    assert by["dp-ie"]["guarantee"]["epsilon"] == pytest.approx(8.0, rel=0.05)
    assert by["dchi-text"]["guarantee"]["eta"] > 0 and 0 <= by["dchi-text"]["own_leakage"]["token_survival"] <= 1
    assert "keyless_abs_head" in by["texthide-inter"]["own_leakage"]
    assert by["texthide"]["examples"][0]["released"] == "3 mixed, masked encodings"
    assert by["dp-ie"]["examples"][0]["released"] == "3 mixed, noised encodings"  # the paper's Algorithm 1: no mask
    # a rerun with the same settings trains nothing
    monkeypatch.setattr(run_mod, "run_point", lambda *a, **k: pytest.fail("a finished point was rerun"))
    assert [r["name"] for r in run_audit(s, out, resume=True, progress=False)] == [r["name"] for r in recs]
    # the report leads with the audit
    page = build_report([out / "points"], tmp_path / "report").read_text()
    assert page.index("<section") == page.index('<section id="audit"')
    assert "audit_frontier_tweets_frozen.png" in page and "Leakage at most 5 % above chance" in page
    md = markdown_report([out / "points"])
    assert "Pareto front" in md and "model: AUC" in md and "LiRA, online, 4 reference models" in md  # small data: 4
    assert md.index("Bottom line:") < md.index("| scheme |") and "| empirical epsilon |" in md
    for r in recs:  # every threat on the common scale, with its chance line and an empirical epsilon
        for t in r["threats"].values():
            lo, hi = t["advantage_ci95"]
            assert lo <= t["advantage"] <= hi and t["at_chance"] == (lo <= 0)
            assert t["advantage"] == pytest.approx(100 * (t["rate"] - t["chance"]) / (100 - t["chance"]), abs=0.02)
            assert t["empirical_epsilon"]["epsilon_lb"] >= 0
        assert r["empirical_epsilon"] == max(t["empirical_epsilon"]["epsilon_lb"] for t in r["threats"].values())
        lo, hi = r["utility_ci95"]
        assert lo <= r["utility"] <= hi and r["useful"] == (lo > r["chance_utility"])
    release = by["none"]["threats"]["release"]  # all 60 distractors are training rows here: chance 8 / 68
    assert release["task_distractors"] == 60 and release["chance"] == pytest.approx(100 * 8 / 68, abs=1e-3)
    assert release["advantage"] == 100.0 and not release["at_chance"] and release["empirical_epsilon"]["epsilon_lb"] > 0


def test_changed_settings_are_refused_then_replaced_with_force(tiny_model, cache_dir, tmp_path, small_attack):
    from privnlu.audit.run import run_audit
    from privnlu.errors import PrivnluError

    out = tmp_path / "audit"
    s = _tiny_settings(tiny_model, cache_dir, schemes=("none",))
    run_audit(s, out, progress=False)
    first = json.loads((out / "points" / "none.json").read_text())
    s2 = replace(s, epochs=2)
    with pytest.raises(PrivnluError, match="epochs 1 -> 2"):
        run_audit(s2, out, resume=True, progress=False)
    run_audit(s2, out, force=True, progress=False)
    second = json.loads((out / "points" / "none.json").read_text())
    assert first["settings"]["epochs"] == 1 and second["settings"]["epochs"] == 2
    # another grid around it does not invalidate the point
    assert replace(s2, dp_epsilons=(2.0,), dchi_targets=(0.5,)).key(None) == s2.key(None)


def test_cli_refuses_bad_input_before_work(capsys, tmp_path):
    from privnlu.cli.main import main

    assert main(["audit", "--task", "stsb", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "classification task" in err and err.count("\n") == 1
    assert main(["audit", "--task", "tweets", "--schemes", "none,nosuch"]) == 2
    assert not (tmp_path / "a").exists()


def _synthetic(scheme, title, setting, utility, rate, guarantee="none"):
    return {"kind": "audit", "task": "tweets", "mode": "frozen", "metric": "accuracy", "scheme": scheme, "scheme_title": title,
            "setting": setting, "utility": utility, "n_train": 1000, "seconds": 3.0, "random_guess_reid": 4.76,
            "chance_utility": 40.0, "own_leakage": {}, "guarantee": {"kind": "none", "text": guarantee},
            "reid": {"rate": rate, "identified": int(rate), "n_private": 100, "ci95": [0.0, 100.0], "attack": "search",
                     "candidates": 2100, "distractors": 2000},
            "examples": [{"private": "a secret", "released": "noise", "recovered": "a secret"}]}


def _synthetic_report(tmp_path):
    from privnlu.report import build_report

    recs = [_synthetic("none", "no privacy", "", 70.0, 100.0), _synthetic("dp-ie", "DP instance encoding", "epsilon = 8", 60.0, 3.0, "(8, 1e-05)-DP"),
            _synthetic("dchi-sequence", "d_chi sequence-rep", "eta = 50", 65.0, 40.0)]
    (tmp_path / "points").mkdir()
    for i, r in enumerate(recs):
        (tmp_path / "points" / f"{i}.json").write_text(json.dumps(r))
    return build_report([tmp_path / "points"], tmp_path / "report", title="audit")


def test_landing_page_summary_navigation_and_headers(tmp_path):
    import re

    page = _synthetic_report(tmp_path).read_text()
    assert "3 audit points on 1 task (tweets)." in page and "3 result records" in page
    assert '<nav>' in page and 'href="#audit"' in page
    assert "<th></th>" not in page
    assert re.search(r"Leakage at most 5 % above chance: the best utility is 60.0 accuracy from DP instance encoding, epsilon = 8", page)
    assert page.index("<section") == page.index('<section id="audit"')  # the audit leads


def test_report_screenshots_in_headless_chromium(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[3] / "scripts" / "screenshot_report.py"
    sys.path.insert(0, str(script.parent))
    try:
        from screenshot_report import find_browser
    finally:
        sys.path.pop(0)
    if find_browser() is None:
        pytest.skip("no Chromium on PATH (apt-get install chromium)")
    from PIL import Image

    page = _synthetic_report(tmp_path)
    subprocess.run([sys.executable, str(script), str(page), "--out", str(tmp_path / "shots"), "--full-height", "3000"],
                   check=True, timeout=240)
    top = Image.open(tmp_path / "shots" / "top.png")
    full = Image.open(tmp_path / "shots" / "full.png")
    assert top.size == (1280, 900) and full.width == 1280 and 900 < full.height < 3000  # trimmed to the content
    assert len(set(top.convert("L").getdata())) > 10  # something was drawn, not a blank page


def test_demo_grid_covers_every_scheme(capsys):
    from privnlu.audit import DEMO, grid
    from privnlu.cli.main import main
    from privnlu.schemes import names

    pts = grid(DEMO)
    assert {p.scheme for p in pts} == set(names()) and len(pts) == 11 and DEMO.task == "tweets"
    assert main(["demo", "--help"]) == 0
    assert "privacy-utility frontier" in capsys.readouterr().out


def test_cli_audit_on_the_users_own_files(tiny_model, cache_dir, tmp_path):
    from privnlu.cli.main import main

    words = ["river", "stone", "cloud", "amber", "violet", "harbor", "meadow", "lantern", "copper", "willow"]
    rows = [f"the {words[i % 10]} and the {words[(i // 10) % 10]} number {i}" for i in range(200)]
    (tmp_path / "train.csv").write_text("text,label\n" + "".join(f"{t},{i % 2}\n" for i, t in enumerate(rows[:160])))
    (tmp_path / "dev.csv").write_text("text,label\n" + "".join(f"{t},{i % 2}\n" for i, t in enumerate(rows[160:])))
    out = tmp_path / "audit"
    rc = main(["audit", "--task", "mine", "--train-file", str(tmp_path / "train.csv"), "--dev-file", str(tmp_path / "dev.csv"),
               "--model", str(tiny_model), "--schemes", "none,dchi-sequence", "--private", "8", "--distractors", "60",
               "--aux-size", "20", "--public-size", "40", "--epochs", "1", "--dchi-targets", "0.34", "--calibration-tokens", "200",
               "--cache-dir", str(cache_dir), "--out", str(out), "--seed", "0", "--quiet"])
    assert rc == 0
    recs = [json.loads(p.read_text()) for p in sorted((out / "points").glob("*.json"))]
    assert sorted(r["scheme"] for r in recs) == ["dchi-sequence", "none"] and all(r["task"] == "mine" for r in recs)
    assert (out / "report" / "index.html").exists()
