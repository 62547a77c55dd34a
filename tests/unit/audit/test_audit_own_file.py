"""privnlu audit on a user's own small file: defaults that fit the data, resume and refusal of a mixed folder,
progress that moves, and a recommendation that never calls a majority-class point useful."""

from __future__ import annotations

import json

import pytest

from privnlu.audit.frontier import NO_USEFUL_UTILITY, Point, clopper_pearson, recommend

WORDS = ["river", "stone", "cloud", "amber", "violet", "harbor", "meadow", "lantern", "copper", "willow"]


def _own_files(tmp_path, n_train=160, n_dev=40):
    rows = [f"the {WORDS[i % 10]} and the {WORDS[(i // 10) % 10]} number {i}" for i in range(n_train + n_dev)]
    (tmp_path / "train.csv").write_text("text,label\n" + "".join(f"{t},{i % 2}\n" for i, t in enumerate(rows[:n_train])))
    (tmp_path / "dev.csv").write_text("text,label\n" + "".join(f"{t},{i % 2}\n" for i, t in enumerate(rows[n_train:])))
    return ["--task", "mine", "--train-file", str(tmp_path / "train.csv"), "--dev-file", str(tmp_path / "dev.csv")]


# -- defaults that fit the data -----------------------------------------------------------------


def test_defaults_scale_to_the_data():
    from privnlu.audit import AuditSettings
    from privnlu.audit.grid import fit_to_data

    s = AuditSettings(task="mine")
    small = fit_to_data(s, 600, 150)
    assert (small.n_private, small.aux_size, small.attack_epochs) == (60, 270, 20)
    assert small.n_private + small.aux_size <= 600 and small.dp_sgd_batch_size == 150 and small.mi_references == 4
    large = fit_to_data(s, 67349, 872)
    assert (large.n_private, large.aux_size, large.dp_sgd_batch_size, large.mi_references) == (100, 2000, 256, 8)
    tiny = fit_to_data(s, 40, 10)  # the smallest sample the attack takes
    assert tiny.n_private == 4 and tiny.aux_size >= 4
    # what the user gives is kept
    assert fit_to_data(AuditSettings(task="mine", aux_size=100, attack_epochs=5), 600, 150).aux_size == 100


@pytest.mark.parametrize("flags, words", [
    (["--aux-size", "2000"], ("--aux-size 2000", "--private")),
    (["--private", "590"], ("--private 590", "--aux-size")),
    (["--distractors", "100000"], ("--distractors 100000", "--public-size")),
])
def test_a_default_or_choice_that_cannot_fit_is_refused_before_any_work(tmp_path, capsys, monkeypatch, flags, words):
    import privnlu.audit.run as run_mod
    from privnlu.cli.main import main

    monkeypatch.setattr(run_mod, "build_context", lambda *a, **k: pytest.fail("work started"))
    out = tmp_path / "audit"
    assert main(["audit", *_own_files(tmp_path, 600, 60), *flags, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words) and "--queries" not in err and err.count("\n") == 1, err
    assert not out.exists()


# -- resume, refusal of a mixed folder, --force --------------------------------------------------------


def _settings(model, cache, **kw):
    from privnlu.audit import AuditSettings

    base = dict(task="tweets", model=str(model), train_limit=120, dev_limit=40, epochs=1, seed=0, n_private=8,
                distractors=60, attack_epochs=3, aux_size=20, public_size=40, schemes=("none", "dp-sgd"),
                dp_sgd_epsilons=(8.0,), mi_references=2, cache_dir=str(cache))
    base.update(kw)
    return AuditSettings(**base)


def test_audit_resumes_and_refuses_a_mixed_folder(tiny_model, cache_dir, tmp_path, monkeypatch):
    import privnlu.audit.run as run_mod
    from privnlu.errors import PrivnluError

    computed: list[str] = []
    real = run_mod.run_point
    monkeypatch.setattr(run_mod, "run_point", lambda ctx, p: computed.append(p.name) or real(ctx, p))
    out = tmp_path / "audit"
    s = _settings(tiny_model, cache_dir)
    first = run_mod.run_audit(s, out, progress=False)
    assert computed == ["none", "dp-sgd-eps8"]
    kept = (out / "points" / "none.json").read_text()
    (out / "points" / "dp-sgd-eps8.json").unlink()  # interrupted before its point was written
    with pytest.raises(PrivnluError, match="--resume"):  # a folder with points, neither --resume nor --force
        run_mod.run_audit(s, out, progress=False)
    computed.clear()
    again = run_mod.run_audit(s, out, resume=True, progress=False)
    assert computed == ["dp-sgd-eps8"]  # the finished point was kept, not recomputed
    assert (out / "points" / "none.json").read_text() == kept and [r["name"] for r in again] == [r["name"] for r in first]
    computed.clear()
    assert run_mod.run_audit(s, out, resume=True, progress=False) and computed == []  # all finished: nothing to do
    # points made with other settings, the attacker's included, are refused with --resume, nothing touched
    for changed, word in ((dict(distractors=50), "distractors 60 -> 50"), (dict(epochs=2), "epochs 1 -> 2"),
                          (dict(mi_references=3), "mi_references 2 -> 3")):
        with pytest.raises(PrivnluError, match=word):
            run_mod.run_audit(_settings(tiny_model, cache_dir, **changed), out, resume=True, progress=False)
    assert computed == [] and (out / "points" / "none.json").read_text() == kept
    with pytest.raises(PrivnluError, match="one of them"):
        run_mod.run_audit(s, out, resume=True, force=True, progress=False)
    # --force replaces the folder's points: a point of the old grid does not stay to mix into the report
    forced = run_mod.run_audit(_settings(tiny_model, cache_dir, epochs=2, schemes=("none",)), out, force=True, progress=False)
    assert computed == ["none"] and forced[0]["settings"]["epochs"] == 2
    assert sorted(p.name for p in (out / "points").glob("*.json")) == ["none.json"]


def test_cli_resume_and_force_flags(tiny_model, cache_dir, tmp_path, capsys):
    from privnlu.cli.main import main

    out = tmp_path / "audit"
    args = ["audit", *_own_files(tmp_path), "--model", str(tiny_model), "--schemes", "none", "--private", "8",
            "--distractors", "60", "--aux-size", "20", "--public-size", "40", "--epochs", "1", "--mi-references", "2",
            "--cache-dir", str(cache_dir), "--out", str(out), "--seed", "0", "--quiet", "--no-report"]
    assert main(args) == 0
    capsys.readouterr()
    assert main(args) == 2 and "--resume" in capsys.readouterr().err
    assert main(args + ["--resume"]) == 0 and "1 of 1 points already finished" in capsys.readouterr().err
    assert main(args[:-4] + ["--private", "9", "--resume", "--quiet", "--no-report"]) == 2
    assert "n_private 8 -> 9" in capsys.readouterr().err
    assert main(args + ["--force"]) == 0


# -- progress --------------------------------------------------------------------------------------


def test_a_long_stage_moves_its_bar(monkeypatch):
    import time
    from types import SimpleNamespace

    import privnlu.audit.run as run_mod

    bars = []

    class Bar:  # records what the stage does to its bar
        def __init__(self, total=None, **kw):
            self.total, self.n, self.kw = total, 0, kw
            bars.append(self)

        def update(self, k):
            self.n += k

        def refresh(self):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(run_mod, "tqdm", Bar)
    monkeypatch.setattr(run_mod, "TICK", 0.02)
    ctx = SimpleNamespace(progress=True, _seconds=None)
    with run_mod._stage(ctx, "attacking", "reconstruction"):
        time.sleep(0.6)
    assert bars[0].total is None and bars[0].n >= 5  # it moved while it ran, not one frozen 0/1
    assert ctx._seconds["reconstruction"] == pytest.approx(0.6, abs=0.4)
    with run_mod._stage(ctx, "attacking again", "reconstruction"):  # the next one is measured against the last
        time.sleep(0.3)
    assert bars[1].total == 2 and "% of an estimated" in bars[1].kw["bar_format"] and bars[1].n == 1  # stays under


# -- a majority-class point is never "the best utility" ---------------------------------------------


def _record(scheme, title, setting, utility, rate, chance=56.0, keyless=None, guarantee="none"):
    lo, hi = clopper_pearson(round(rate * 60 / 100), 60)
    return {"kind": "audit", "task": "mine", "mode": "frozen", "metric": "accuracy", "scheme": scheme,
            "scheme_title": title, "setting": setting, "utility": utility, "n_train": 600, "seconds": 3.0,
            "random_guess_reid": 1.96, "chance_utility": chance,
            "own_leakage": {} if keyless is None else {"keyless_abs_head": keyless},
            "guarantee": {"kind": "none", "text": guarantee},
            "reid": {"rate": rate, "identified": int(rate), "n_private": 60, "ci95": [lo, hi], "attack": "search",
                     "candidates": 5060, "distractors": 5000, "threat": "release"},
            "examples": [{"private": "a secret", "released": "noise", "recovered": "a secret"}]}


RECORDS = [_record("none", "no privacy", "", 82.0, 100.0),
           _record("texthide", "TextHide", "m = 256, k = 4", 56.0, 30.0, keyless=98.0),
           _record("dp-ie", "DP instance encoding", "epsilon = 1", 50.0, 1.0, guarantee="(1, 1e-05)-DP"),
           _record("dp-ie", "DP instance encoding", "epsilon = 64", 75.0, 4.0, guarantee="(64, 1e-05)-DP")]


def test_a_majority_class_point_is_flagged_in_table_plot_and_recommendation():
    from privnlu.report.audit_sections import NO_USEFUL_LABEL, analysis, detail_rows, frontier_axes, rows

    table = rows(RECORDS)
    assert NO_USEFUL_UTILITY in table[2][2] and NO_USEFUL_UTILITY in table[1][2]  # 50 < 56 and 56 == 56
    assert NO_USEFUL_UTILITY not in table[0][2] and NO_USEFUL_UTILITY not in table[3][2]
    assert detail_rows(RECORDS)[1][5] == "keyless abs(x~) head 98.0, beats the owner's 56.0"
    assert all(len(str(cell)) <= 60 for row in table for cell in row)  # short cells: one line or two
    points, front, _, advice = analysis(RECORDS)
    assert [p.label for p in front] == ["DP instance encoding, epsilon = 64", "no privacy"]  # eps 1 is not "optimal"
    fig = frontier_axes(RECORDS)
    handles, labels = fig.axes[0].get_legend_handles_labels()
    assert NO_USEFUL_LABEL in labels and "majority class (utility)" in labels
    crossed = sorted(map(tuple, handles[labels.index(NO_USEFUL_LABEL)].get_offsets().tolist()))
    adv = lambda rate: 100 * (rate - 1.96) / (100 - 1.96)  # noqa: E731 - the advantage over the chance line
    assert crossed == [pytest.approx((adv(1.0), 50.0), abs=0.01), pytest.approx((adv(30.0), 56.0), abs=0.01)]
    assert fig.axes[0].get_lines()[-1].get_ydata()[0] == 56.0  # the majority-class line
    # the recommendation opens with a plain bottom line and never calls the eps = 1 point the best utility
    assert advice[0].startswith("Bottom line: use DP instance encoding, epsilon = 64; it keeps 91 % of the non-private "
                                "utility") and "re-identifies 4.0 % of the private sentences against a chance line of 2.0 %" in advice[0]
    text = " ".join(advice)
    assert "best utility is 50.0" not in text and "best utility is 56.0" not in text
    at1 = next(a for a in advice if a.startswith("Leakage at most 1 %"))
    assert NO_USEFUL_UTILITY in at1 and "majority class (56.0)" in at1
    assert any(a.startswith("No useful utility") and "epsilon = 1 (50.0)" in a for a in advice)
    # the keyless attacker's classifier beats the owner's own head: said right after the bottom line
    assert advice[1].startswith("Warning for TextHide") and "98.0" in advice[1] and "56.0" in advice[1]


def test_bottom_line_when_nothing_is_useful_or_private():
    base = Point("no privacy", 80.0, 100.0)
    flat = recommend([base, Point("DP-IE, epsilon = 1", 22.2, 1.0)], baseline=base, metric="accuracy",
                     chance_utility=29.0)
    assert flat[0].startswith("Bottom line: no privatized setting we measured is clearly better than always guessing")
    assert "best utility" not in " ".join(flat)
    leaky = recommend([base, Point("TextHide", 70.0, 60.0)], baseline=base, metric="accuracy", chance_utility=29.0)
    assert "least leaking useful one is TextHide" in leaky[0] and "treat the data as exposed" in leaky[0]
    hopeless = recommend([Point("no privacy", 29.0, 100.0), Point("X", 28.0, 1.0)], baseline=Point("no privacy", 29.0, 100.0),
                         metric="accuracy", chance_utility=29.0)
    assert "even without privacy" in hopeless[0]


def test_markdown_and_html_lead_with_the_bottom_line(tmp_path):
    from privnlu.report import build_report, markdown_report

    (tmp_path / "points").mkdir()
    for i, r in enumerate(RECORDS):
        (tmp_path / "points" / f"{i}.json").write_text(json.dumps(r))
    md = markdown_report([tmp_path / "points"])
    assert "**mine (frozen)**: Bottom line: use DP instance encoding, epsilon = 64" in md
    assert f"50.00 ({NO_USEFUL_UTILITY}: majority class 56.00)" in md
    page = build_report([tmp_path / "points"], tmp_path / "report", title="audit").read_text()
    assert page.index("Bottom line") < page.index("audit_frontier_mine_frozen.png") and NO_USEFUL_UTILITY in page


# -- the other utility plots and the training summary ----------------------------------------------------


class _Figures:
    """A report context that keeps the figures instead of writing them."""

    def __init__(self):
        self.figs = []

    def figure(self, fig, name, alt):
        self.figs.append(fig)
        return ""


def test_sweep_plot_draws_the_majority_class_and_crosses_out_points_under_it():
    from privnlu.report import section_html

    recs = [{"kind": "train", "group": "sweep", "task": "mine", "inter": False, "mode": "frozen", "m": m, "k": k,
             "score": score, "majority": {"score": 56.0}, "spec": {}}
            for m, k, score in (("0", 1, 80.0), ("256", 4, 55.0), ("16", 4, 70.0))]
    ctx = _Figures()
    section_html("texthide_sweep", recs, ctx)
    handles, labels = ctx.figs[0].axes[0].get_legend_handles_labels()
    assert "majority class" in labels and "no useful utility (at or below the majority class)" in labels
    crossed = handles[labels.index("no useful utility (at or below the majority class)")].get_offsets().tolist()
    assert [y for _, y in crossed] == [55.0]


def test_train_summary_flags_a_majority_class_result(monkeypatch, capsys, tmp_path):
    import privnlu.training.engine as engine
    from privnlu.cli.main import main

    rec = {"label": "x", "metric": "accuracy", "score": 40.0, "best_score": 41.0, "eval": {"dev": {}}, "dp": {"epsilon": 1}}
    monkeypatch.setattr(engine, "train", lambda *a, **k: rec)
    files = _own_files(tmp_path)  # labels alternate: the majority class scores 50 on dev
    assert main(["train", *files, "--scheme", "dp-sgd", "--dp-epsilon", "1", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "no useful utility: 40.00 is at or below always predicting the majority class (50.00)" in err
    rec["score"] = 75.0
    assert main(["train", *files, "--scheme", "dp-sgd", "--dp-epsilon", "1", "--out", str(tmp_path / "run2"), "--quiet"]) == 0
    assert "no useful utility" not in capsys.readouterr().err


def test_dp_plot_crosses_out_points_at_or_below_the_majority_class():
    from privnlu.report import section_html

    def rec(scheme, score, variant="baseline", m="0", k=1, dp=None, **kw):
        return {"kind": "train", "group": "xie2022", "task": "sst2", "scheme": scheme, "variant": variant, "m": m, "k": k,
                "score": score, "metric": "accuracy", "mode": "frozen", "dp": dp, "n_train": 100,
                "spec": {"train": {"epochs": 2, "batch_size": 8}, "dp": {"noisy_queries": False} if dp else None},
                "eval": {"dev": {"accuracy": score / 100, "score": score}}, "encoder": {"model": "m", "layers": 2}, **kw}

    dp = lambda e, s: rec("dp", s, "dp-texthide-intra", "0", 4, {"mechanism": "gaussian", "calibration": "correct",
                          "target_epsilon": e, "accounted_epsilon": e}, dp_scheme="dp-ie", label="x")
    ctx = _Figures()
    section_html("dp_utility", [rec("none", 73.0, majority={"score": 50.9, "accuracy": 50.9}), dp(1, 48.0), dp(8, 61.5)],
                 ctx)
    handles, labels = ctx.figs[0].axes[0].get_legend_handles_labels()
    assert "majority class" in labels
    crossed = handles[labels.index("no useful utility (at or below the majority class)")].get_offsets().tolist()
    assert crossed == [[1.0, 48.0]]
