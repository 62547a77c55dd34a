"""The issue-10 recipes on a tiny model and a toy SST-2: selection on held-out train, curves, public corpus size,
the DP-IE scheme and the report's paper / ours / difference cells."""

import pytest

from conftest import toy_glue_dir
from privnlu.experiments import huang2020, xie2022
from privnlu.training.engine import RunSpec
from privnlu.training.selection import holdout_split
from privnlu.training import TrainConfig

TINY = huang2020.Scale("test", None, None, 2, 8, (1e-3, 3e-3), (3e-5,), min_texthide_steps=30, max_length=16,
                       min_public=100)


@pytest.fixture()
def base(tmp_path, tiny_model):
    glue = toy_glue_dir(tmp_path, 80)
    return RunSpec(task="sst2", model=str(tiny_model), data_dir=str(glue), cache_dir=str(tmp_path / "cache"),
                   train=TrainConfig(seed=0))


def test_holdout_is_ten_percent_of_train_and_disjoint(base):
    from privnlu.training.engine import prepare

    prep = prepare(base, progress=False)
    split = holdout_split(prep)
    held = split.evals["holdout"]
    assert len(held) == 8 and len(split.train) == 72 and list(split.evals)[0] == "dev"
    assert not set(held.texts_a) & set(split.train.texts_a)  # toy sentences are unique
    assert split.eval_x["holdout"].shape[0] == 8 and split.train_x.shape[0] == 72


def test_table1_selects_on_holdout_and_records_curves(tmp_path, base):
    recs = huang2020.table1(tmp_path / "t1", tasks=("sst2",), base=base, progress=False, scale_name=TINY, public="wiki")
    assert [r["variant"] for r in recs] == ["baseline", "texthide-intra", "texthide-inter"]
    for r in recs:
        sel = r["selection"]
        assert len(sel["candidates"]) == 2 and "not dev" in sel["on"]
        assert r["score"] == r["dev_curve"][sel["chosen_epoch"] - 1]
        chosen = max(sel["candidates"], key=lambda c: c["best_holdout"])
        assert chosen["best_epoch"] == sel["chosen_epoch"]
    # TextHide runs get at least 30 optimizer steps: 72 examples / batch 8 = 9 steps per epoch -> 4 epochs
    assert len(recs[0]["dev_curve"]) == 2 and len(recs[1]["dev_curve"]) == 4
    assert recs[2]["n_public"] > recs[2]["n_train"] and recs[2]["spec"]["public"] == "wiki"
    again = huang2020.table1(tmp_path / "t1", tasks=("sst2",), base=base, progress=False, scale_name=TINY, public="wiki")
    assert [r["seconds"] for r in again] == [r["seconds"] for r in recs]  # resumed, not retrained
    assert not [p.name for p in (tmp_path / "t1").iterdir() if p.name.startswith(".")]  # no scratch left behind


def test_selection_reads_back_a_finished_candidate_and_resumes_the_next(tmp_path, base, monkeypatch):
    """An interrupted selection loses at most one epoch: finished candidates are kept beside the output."""
    from privnlu.training import selection

    calls = []
    real = selection.train_run

    def interrupted(spec, split, **kw):
        calls.append(spec.train.lr)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the second candidate is cut short
        return real(spec, split, **kw)

    monkeypatch.setattr(selection, "train_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        huang2020.table1(tmp_path / "t1", tasks=("sst2",), base=base, progress=False, scale_name=TINY,
                         variants=("baseline",))
    assert (tmp_path / "t1" / ".sst2-baseline-frozen.c0.json").exists()
    monkeypatch.setattr(selection, "train_run", lambda spec, split, **kw: (calls.append(spec.train.lr), real(spec, split, **kw))[1])
    rec = huang2020.table1(tmp_path / "t1", tasks=("sst2",), base=base, progress=False, scale_name=TINY,
                           variants=("baseline",))[0]
    assert calls == [1e-3, 3e-3, 3e-3]  # the first candidate was read back, not retrained
    assert len(rec["selection"]["candidates"]) == 2
    assert not [p.name for p in (tmp_path / "t1").iterdir() if p.name.startswith(".")]


def test_xie2022_figure1_uses_the_unmasked_scheme_and_clean_queries(tmp_path, base):
    recs = xie2022.figure1(tmp_path / "f1", tasks=("sst2",), base=base, epsilons=(2.0,), mechanisms=("gaussian",),
                           calibrations=("paper",), scale_name=TINY, progress=False)
    dp = [r for r in recs if r["scheme"] == "dp-ie"]
    assert len(recs) == 3 and len(dp) == 1
    assert dp[0]["m"] == "0" and dp[0]["dp_scheme"] == "dp-ie" and dp[0]["spec"]["dp"]["noisy_queries"] is False
    assert dp[0]["dp"]["calibration"] == "paper" and not dp[0]["dp"]["valid_dp_guarantee"]
    assert dp[0]["accuracy"] is not None
    masked = xie2022.figure1(tmp_path / "f1m", tasks=("sst2",), base=base, epsilons=(2.0,), mechanisms=("gaussian",),
                             calibrations=("paper",), scale_name=TINY, progress=False, masked=True)
    assert [r for r in masked if r["scheme"] == "dp-ie"][0]["dp_scheme"] == "dp-ie-masked"


def test_xie2022_figure1_checkpoints_its_runs_and_completes_a_bare_record(tmp_path, base, monkeypatch):
    """Each run trains with a hidden checkpoint beside its record (an interrupted joint run resumes), and a record
    that train_run wrote just before an interruption (no recipe fields yet) is completed, not retrained."""
    from privnlu.training import engine as pipeline

    kw = dict(tasks=("sst2",), base=base, epsilons=(2.0,), mechanisms=("gaussian",), calibrations=("paper",),
              scale_name=TINY, progress=False)
    outs = []
    real = pipeline.train_run
    monkeypatch.setattr(xie2022, "train_run", lambda spec, prep, **k: (outs.append(k.get("out")), real(spec, prep, **k))[1])
    recs = xie2022.figure1(tmp_path / "f1", **kw)
    assert len(outs) == 3 and all(o is not None and o.parent == tmp_path / "f1" for o in outs)
    bare = {k: v for k, v in recs[-1].items() if k not in ("majority", "accuracy", "dp_scheme", "scale")}
    from privnlu.io import write_json_atomic
    write_json_atomic(outs[-1], bare)
    outs.clear()
    again = xie2022.figure1(tmp_path / "f1", **kw)
    assert outs == [] and again[-1]["dp_scheme"] == "dp-ie" and again[-1]["majority"] == recs[-1]["majority"]
    assert not [p.name for p in (tmp_path / "f1").iterdir() if p.name.startswith(".")]


def _rec(scheme, score, variant="baseline", m="0", k=1, dp=None, group="xie2022", task="sst2", **kw):
    return {"kind": "train", "group": group, "task": task, "scheme": scheme, "variant": variant, "m": m, "k": k,
            "score": score, "metric": "accuracy", "mode": "frozen", "dp": dp, "n_train": 100,
            "spec": {"train": {"epochs": 2, "batch_size": 8}, "dp": {"noisy_queries": False} if dp else None},
            "eval": {"dev": {"accuracy": score / 100, "score": score}}, "encoder": {"model": "m", "layers": 2}, **kw}


def test_dp_report_names_mechanism_epsilon_scheme_and_accounted_epsilon():
    from privnlu.report.dp_sections import dp_utility_md
    from privnlu.report.texthide_sections import run_rows

    dp = lambda e, cal, s: _rec("dp", s, "dp-texthide-intra", "0", 4, {"mechanism": "laplace", "calibration": cal,
                                "target_epsilon": e, "accounted_epsilon": e * 7}, dp_scheme="dp-ie", label="x")
    recs = [_rec("none", 73.0, majority={"score": 50.9, "accuracy": 50.9}),
            _rec("texthide", 68.0, "texthide-intra", "16", 4), dp(1, "paper", 55.0), dp(8, "paper", 61.5),
            dp(8, "correct", 50.9)]
    md = dp_utility_md(recs)
    assert "| laplace, paper (not DP), dp-ie (m=0, k=4), clean queries, frozen | accuracy | 55.00 | 61.50 |" in md
    assert "| laplace, correct, dp-ie (m=0, k=4), clean queries, frozen | accuracy | - | 50.90 |" in md
    assert "| majority class | accuracy | 50.90 | 50.90 |" in md
    assert "| accounted epsilon | 7 | 56 |" in md and "not a valid DP guarantee" in md
    rows = run_rows([{**recs[3], "label": "sst2-dp", "best_score": 62.0, "seconds": 1.0}])
    assert rows[0][3] == "laplace, eps 8 (accounted 56), paper"


def test_dp_report_averages_repeats_and_keeps_budgets_apart():
    from privnlu.report.dp_sections import dp_utility_md

    dp = lambda s, e=20, **kw: _rec("dp", s, "dp-texthide-intra", "0", 4, {"mechanism": "gaussian", "calibration": "correct",
                                    "target_epsilon": e, "accounted_epsilon": e}, dp_scheme="dp-ie", **kw)
    base = {"majority": {"score": 50.9, "accuracy": 50.9}}
    recs = [_rec("none", 84.0, **base), _rec("none", 86.0, **base), dp(74.0), dp(83.0), dp(80.0), dp(50.9, 8), dp(52.0, 8),
            dp(60.0, n_train=900), _rec("none", 70.0, n_train=900, **base)]
    md = dp_utility_md(recs)
    assert "| baseline, frozen | accuracy | 85.00 (84.00 / 86.00) |" in md
    assert "| gaussian, correct, dp-ie (m=0, k=4), clean queries, frozen | accuracy | 51.45 (50.90 / 52.00) | 79.00 (74.00 / 83.00 / 80.00) |" in md
    assert "| 8 | accuracy | 2 | 51.45 | 0.78 | 50.90 | 52.00 | 1 of 2 |" in md  # at the majority class is not above it
    assert md.count("sst2:") == 2 and "| baseline, frozen | accuracy | 70.00 |" in md and "| accuracy | 60.00 |" in md
    assert "| gaussian, correct, dp-ie (m=0, k=4), clean queries, frozen | 20 | accuracy | 3 | 79.00 | 4.58 | 74.00 | 83.00 | 3 of 3 |" in md
    assert "| baseline, frozen | - | accuracy | 2 | 85.00 | 1.41 | 84.00 | 86.00 | 2 of 2 |" in md
    assert md.count("the points run more than once") == 1  # the 900-example budget has no repeats


def test_table1_report_sets_paper_ours_and_difference_side_by_side():
    from privnlu.report.texthide_sections import TABLE1_HEAD, table1_rows

    sel = {"chosen_epoch": 1}
    recs = [_rec("none", 80.0, group="table1", selection=sel, history=[{"eval": {"dev": {"accuracy": 0.8}}}],
                 majority={"score": 50.9}, steps=100, label="sst2-baseline"),
            _rec("texthide", 75.0, "texthide-intra", "256", 4, group="table1", selection=sel, steps=2000, label="b")]
    rows, summary = table1_rows(recs)
    assert len(rows) == 1 and len(rows[0]) == len(TABLE1_HEAD)
    row = dict(zip(TABLE1_HEAD[:8], rows[0]))
    assert row["baseline: paper"] == "92.40" and row["ours"] == "80.00" and row["diff"] == "-12.40"
    assert rows[0][8:11] == ["91.70", "75.00", "-16.70"] and rows[0][11:14] == ["91.30", "-", "-"]
    assert rows[0][-1] == 50.9 and "frozen" in row["our setting"] and row["steps to the reported epoch b / intra / inter"] == "100 / 2000 / -"
    assert all(h for h in TABLE1_HEAD)  # no blank column
    assert "ours 5.00 points over 1 task (paper, same tasks, primary metric: 0.70)" in summary and "1.87" in summary
    # a task whose baseline does not beat the majority class measures no cost: the mean is also given without it
    rte = [{**r, "task": "rte", "label": "rte-" + r["label"], "score": sc, "majority": {"score": 52.7}}
           for r, sc in zip(recs, (52.7, 53.4))]
    rows, summary = table1_rows(recs + rte)
    assert len(rows) == 2 and "ours 2.15 points over 2 tasks (paper, same tasks, primary metric: 3.75)" in summary
    assert "or over the tasks whose baseline beats the majority class: ours 5.00 points over 1 task" in summary
    assert "majority class (no cost can be read there): rte (frozen)" in summary


def test_table6_report_averages_repeated_runs_of_a_cell_and_lists_each():
    from privnlu.report.texthide_sections import TABLE6_HEAD, table6_rows

    inter = lambda corpus, score: _rec("texthide", score, "texthide-inter", "256", 4, group="table6", inter=True,
                                       n_public=125, spec={"public": corpus, "train": {}})
    recs = [inter("wiki", 60.0), _rec("none", 80.0, group="table6", inter=False, spec={"train": {}}),
            inter("wiki", 64.0), inter("tweets", 61.0), inter("wiki", 65.0)]
    rows = [dict(zip(TABLE6_HEAD, row)) for row in table6_rows(recs)]
    assert [(r["run"], r["public corpus"]) for r in rows] == [
        ("baseline", "-"), ("texthide-inter", "tweets"), ("texthide-inter", "wiki")]
    assert rows[0]["paper: acc."] == "92.40" and rows[0]["diff"] == "-12.40" and rows[0]["each run"] == "80.00"
    wiki = rows[2]
    assert wiki["ours (mean of runs)"] == "63.00" and wiki["each run"] == "60.00 / 64.00 / 65.00"
    assert wiki["paper: acc."] == "-" and wiki["n public"] == 125


def test_cli_reproduce_quick_and_bad_input(tmp_path, tiny_model, capsys):
    import json

    from privnlu.cli.main import main

    glue = toy_glue_dir(tmp_path, 40)
    common = ["--model", str(tiny_model), "--data-dir", str(glue), "--cache-dir", str(tmp_path / "c"), "--quiet"]
    out = tmp_path / "t1"
    public = tmp_path / "public.txt"
    public.write_text("".join(f"a public sentence number {i}\n" for i in range(60)))
    assert main(["reproduce", "huang2020-table1", "--quick", "--tasks", "sst2", "--public", str(public), "--epochs", "1",
                 "--out", str(out), *common]) == 0
    recs = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    assert len(recs) == 3 and all(r["scale"] == "quick" and len(r["dev_curve"]) == 1 for r in recs)
    assert max(r.get("n_public") or 0 for r in recs) == 60  # the quick scale's minimum (2,500), capped at the corpus
    capsys.readouterr()
    assert main(["reproduce", "xie2022-figure1", "--dp-epsilons", "1,x", *common]) == 2
    assert "comma-separated numbers" in capsys.readouterr().err


def test_baseline_gets_the_same_step_floor_as_texthide_when_the_scale_says_so(base):
    from dataclasses import replace

    from privnlu.training.engine import with_scheme

    matched = replace(TINY, min_baseline_steps=30)
    hide = with_scheme(base, m=256, k=4)
    # 72 examples / batch 8 = 9 steps per epoch: a floor of 30 steps needs 4 epochs
    assert huang2020.epochs_for(base, 72, TINY) == 2 and huang2020.epochs_for(hide, 72, TINY) == 4
    assert huang2020.epochs_for(base, 72, matched) == 4
    assert huang2020.SCALES["cpu"].min_baseline_steps == huang2020.SCALES["cpu"].min_texthide_steps == 2000


def test_xie2022_figure2_reads_back_a_finished_release_and_redoes_a_different_one(tmp_path, monkeypatch):
    import json

    from privnlu.experiments import xie2021

    out = tmp_path / "f2"
    out.mkdir()
    done = {"kind": "attack", "conditions": {"m16-k4": {"methods": {"nmf": {}}}}, "marker": 1}
    (out / "rec_sst2_texthide_m16_k4.json").write_text(json.dumps(done))
    attacked = []
    monkeypatch.setattr(xie2021, "prepare", lambda spec, progress: attacked.append(spec.task) or (_ for _ in ()).throw(RuntimeError))
    assert xie2021.run_release(out, "rec_sst2_texthide_m16_k4", "sst2", ("16:4",), None, False,
                               methods=("nmf",))["marker"] == 1
    assert attacked == []
    with pytest.raises(RuntimeError):  # other methods: attacked again
        xie2021.run_release(out, "rec_sst2_texthide_m16_k4", "sst2", ("16:4",), None, False)
    attacked.clear()
    with pytest.raises(RuntimeError):  # other conditions: the release is attacked again
        xie2021.run_release(out, "rec_sst2_texthide_m16_k4", "sst2", ("0:4",), None, False)
    assert attacked == ["sst2"]


def test_cli_figure2_takes_its_grid(tmp_path, monkeypatch):
    from privnlu.cli.main import main
    from privnlu.experiments import huang2020 as h

    seen = {}
    monkeypatch.setattr(h, "figure2", lambda out, **kw: seen.update(kw) or [])
    assert main(["reproduce", "huang2020-figure2", "--ms", "0,inf", "--ks", "4", "--out", str(tmp_path), "--quiet"]) == 0
    assert seen["ms"] == (0, float("inf")) and seen["ks"] == (4,)
    seen.clear()
    assert main(["reproduce", "huang2020-figure2", "--out", str(tmp_path), "--quiet"]) == 0
    assert "ms" not in seen and "ks" not in seen  # the recipe's own grid


def test_figure2_and_table6_share_runs_in_one_folder_and_both_report_them(tmp_path, base):
    import json

    from privnlu.report.texthide_sections import sweep_grids, table6_rows

    out = tmp_path / "shared"
    fig = huang2020.figure2(out, base=base, progress=False, scale_name=TINY, ms=(0, 256), ks=(4,))
    t6 = huang2020.table6(out, base=base, progress=False, scale_name=TINY, corpora=("wiki",))
    assert fig[1]["seconds"] == t6[1]["seconds"]  # the (256, 4) intra run was read back, not retrained
    recs = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    assert len(recs) == 4  # (0, 4), (256, 4) shared, baseline, inter-wiki
    shared = [r for r in recs if r["m"] == "256" and not r["inter"]][0]
    assert shared["groups"] == ["figure2", "table6"]
    assert sorted(r[0] for r in table6_rows(recs)) == ["baseline", "texthide-inter", "texthide-intra"]
    grids = sweep_grids(recs)
    assert len(grids) == 1 and set(next(iter(grids.values()))[2]) == {("0", 4), ("256", 4)}


def test_figure2_report_sets_attack_success_against_epsilon_beside_the_papers_texthide_value():
    from privnlu.report.attack_sections import attack_reconstruction
    from privnlu.report.dp_attack_sections import dp_attack_md

    def release(name, m, success, cal=None):
        c = {"m": m, "k": 4, "methods": {"nmf": {"success_lenient": success, "success_strict": success / 2}}}
        if cal:
            c["dp_calibration"] = cal
        return {"kind": "attack", "attack": "reconstruct", "task": "sst2", "conditions": {name: c}}

    cal = lambda e, how, acc: {"mechanism": "gaussian", "calibration": how, "target_epsilon": e, "accounted_epsilon": acc}
    recs = [release("m16-k4", "16", 90.0), release("m0-k4", "0", 2.0, cal(1, "correct", 1.0)),
            release("m0-k4", "0", 4.0, cal(20, "correct", 20.0)), release("m0-k4", "0", 6.0, cal(20, "paper", 5175.0))]
    md = dp_attack_md(recs)
    assert "| TextHide (16, 4), no noise: lenient % (diff to paper) | 85.0 | 90.0 (+5.0) | 90.0 (+5.0) |" in md
    assert "| gaussian, correct: lenient / strict % | - | 2 / 1 | 4 / 2 |" in md
    assert "| gaussian, paper (not DP): lenient / strict % | - | - | 6 / 3 |" in md
    assert "| gaussian, paper (not DP): accounted epsilon | - | - | 5.18e+03 |" in md
    assert md.count("around 85%") == 1
    assert dp_attack_md(recs[:1]) is None  # no DP release: no Figure 2 section
    assert attack_reconstruction(recs[1:], None) is None  # DP releases are not listed again as plain attacks
