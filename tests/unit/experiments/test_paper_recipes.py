"""The paper recipes on a tiny model and a toy SST-2: selection on held-out train, curves, the public corpus
size, repeats, the DP-IE scheme, resume from an interrupted selection, and the report's paper / ours / difference
cells."""

import json

import pytest

from conftest import toy_glue_dir
from privnlu.cli.main import main
from privnlu.experiments import huang2020, registry
from privnlu.io import repeat_of
from privnlu.training import TrainConfig
from privnlu.training.engine import RunSpec
from privnlu.training.selection import holdout_split

TINY = huang2020.Scale("test", None, None, 2, 8, (1e-3, 3e-3), (3e-5,), min_texthide_steps=30, max_length=16,
                       min_public=100)


@pytest.fixture()
def base(tmp_path, tiny_model):
    glue = toy_glue_dir(tmp_path, 80)
    return RunSpec(task="sst2", model=str(tiny_model), data_dir=str(glue), cache_dir=str(tmp_path / "cache"),
                   train=TrainConfig(seed=0))


@pytest.fixture()
def cli(tmp_path, tiny_model):
    """``privnlu reproduce`` on the tiny model and an 80-example toy SST-2 (the quick scale, 2 head lrs)."""
    glue = toy_glue_dir(tmp_path, 80)
    common = ["--model", str(tiny_model), "--data-dir", str(glue), "--cache-dir", str(tmp_path / "c"), "--quiet"]

    def run(recipe: str, out, *opts: str) -> int:
        return main(["reproduce", recipe, "--out", str(out), *opts, *common])

    return run


def _records(folder) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def test_holdout_is_ten_percent_of_train_and_disjoint(base):
    from privnlu.training.engine import prepare

    prep = prepare(base, progress=False)
    split = holdout_split(prep)
    held = split.evals["holdout"]
    assert len(held) == 8 and len(split.train) == 72 and list(split.evals)[0] == "dev"
    assert not set(held.texts_a) & set(split.train.texts_a)  # toy sentences are unique
    assert split.eval_x["holdout"].shape[0] == 8 and split.train_x.shape[0] == 72


def test_table1_selects_on_holdout_records_curves_and_resumes(tmp_path, cli):
    out = tmp_path / "t1"
    assert cli("huang2020-table1", out, "--scale", "quick", "--tasks", "sst2", "--public", "wiki", "--epochs", "2",
               "--batch-size", "8", "--lrs", "0.001,0.003") == 0
    recs = _records(out)
    assert sorted(recs) == ["sst2-baseline-frozen", "sst2-texthide-inter-m256-k4-wiki-frozen",
                            "sst2-texthide-intra-m256-k4-frozen"]
    for r in recs.values():
        sel = r["selection"]
        assert len(sel["candidates"]) == 2 and "not dev" in sel["on"]
        assert r["score"] == r["dev_curve"][sel["chosen_epoch"] - 1]
        chosen = max(sel["candidates"], key=lambda c: c["best_holdout"])
        assert chosen["best_epoch"] == sel["chosen_epoch"]
        assert r["budget"]["lrs"] == [0.001, 0.003] and r["scale"] == "quick" and len(r["dev_curve"]) == 2
    inter = recs["sst2-texthide-inter-m256-k4-wiki-frozen"]
    assert inter["n_public"] > inter["n_train"] and inter["spec"]["public"] == "wiki"
    assert not [s for r in recs.values() for s in registry.absolute_paths(r)]  # the tiny model's path is its name
    assert inter["spec"]["model"] == "bert"
    assert cli("huang2020-table1", out, "--scale", "quick", "--tasks", "sst2", "--public", "wiki", "--epochs", "2",
               "--batch-size", "8", "--lrs", "0.001,0.003") == 0
    assert _records(out) == recs  # resumed: nothing retrained
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no scratch left behind


def test_training_points_run_in_worker_processes(tmp_path, cli):
    opts = ("--scale", "quick", "--tasks", "sst2", "--public", "wiki", "--epochs", "1", "--batch-size", "8")
    assert cli("huang2020-table1", tmp_path / "p", *opts, "--jobs", "2") == 0
    recs = _records(tmp_path / "p")
    assert len(recs) == 3 and all(r["selection"]["chosen_epoch"] == 1 for r in recs.values())
    assert not [p.name for p in (tmp_path / "p").iterdir() if p.name.startswith(".")]


def test_an_interrupted_selection_reads_back_its_finished_candidate(tmp_path, cli, monkeypatch):
    """An interrupted selection loses at most one epoch: finished candidates are kept beside the output."""
    from privnlu.training import selection

    calls = []
    real = selection.train_run

    def interrupted(spec, split, **kw):
        calls.append(spec.train.lr)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the second candidate is cut short
        return real(spec, split, **kw)

    opts = ("--scale", "quick", "--tasks", "sst2", "--variants", "baseline", "--epochs", "2", "--batch-size", "8",
            "--lrs", "0.001,0.003")
    monkeypatch.setattr(selection, "train_run", interrupted)
    assert cli("huang2020-table1", tmp_path / "t1", *opts) == 130
    assert [p.name for p in (tmp_path / "t1").glob(".*.c0.json")]
    monkeypatch.setattr(selection, "train_run", lambda spec, split, **kw: (calls.append(spec.train.lr), real(spec, split, **kw))[1])
    assert cli("huang2020-table1", tmp_path / "t1", *opts) == 0
    assert calls == [1e-3, 3e-3, 3e-3]  # the first candidate was read back, not retrained
    rec = _records(tmp_path / "t1")["sst2-baseline-frozen"]
    assert len(rec["selection"]["candidates"]) == 2
    assert not [p.name for p in (tmp_path / "t1").iterdir() if p.name.startswith(".")]


def test_repeats_are_points_of_one_folder(tmp_path, cli, capsys):
    out = tmp_path / "t6"
    assert cli("huang2020-table6", out, "--scale", "quick", "--public", "wiki", "--epochs", "1", "--batch-size", "8",
               "--repeats", "2", "--dry-run") == 0
    names = [line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("run ")]
    assert names == ["sst2-baseline-frozen", "sst2-baseline-frozen-r2", "sst2-texthide-intra-m256-k4-frozen",
                     "sst2-texthide-intra-m256-k4-frozen-r2", "sst2-texthide-inter-m256-k4-wiki-frozen",
                     "sst2-texthide-inter-m256-k4-wiki-frozen-r2"]
    assert [repeat_of(n) for n in names] == [1, 2] * 3  # the report reads a run's repeat back from its name
    assert repeat_of("sst2-baseline-frozen-r12") == 12 and repeat_of("run-rate") == 1 and repeat_of("run-r") == 1
    assert cli("huang2020-table6", out, "--scale", "quick", "--public", "wiki", "--epochs", "1", "--batch-size", "8",
               "--repeats", "2-2", "--variants", "x", "--dry-run") == 2  # table6 takes no --variants


def test_figure2_takes_its_grid_or_its_points(tmp_path, cli, capsys):
    assert cli("huang2020-figure2", tmp_path / "f", "--ms", "0,inf", "--ks", "4", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "run   sst2-texthide-intra-m0-k4-frozen" in out and "run   sst2-texthide-intra-minf-k4-frozen" in out
    assert "2 to run" in out and "--ms 0,inf --ks 4" in out
    assert cli("huang2020-figure2", tmp_path / "f", "--points", "0:1,256:4", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "run   sst2-baseline-frozen" in out and "run   sst2-texthide-intra-m256-k4-frozen" in out and "2 to run" in out


def test_xie2022_figure1_uses_the_unmasked_scheme_and_clean_queries(tmp_path, cli):
    dp = ("--scale", "quick", "--tasks", "sst2", "--dp-epsilons", "2", "--dp-mechanisms", "gaussian",
          "--dp-calibrations", "paper", "--epochs", "1", "--batch-size", "8")
    assert cli("xie2022-figure1", tmp_path / "f1", *dp) == 0
    recs = _records(tmp_path / "f1")
    dps = [r for r in recs.values() if r["scheme"] == "dp-ie"]
    assert len(recs) == 3 and len(dps) == 1
    assert dps[0]["m"] == "0" and dps[0]["dp_scheme"] == "dp-ie" and dps[0]["spec"]["dp"]["noisy_queries"] is False
    assert dps[0]["dp"]["calibration"] == "paper" and not dps[0]["dp"]["valid_dp_guarantee"]
    assert dps[0]["accuracy"] is not None and all(r["majority"] for r in recs.values())
    assert cli("xie2022-figure1", tmp_path / "f1m", *dp, "--masked") == 0
    assert [r for r in _records(tmp_path / "f1m").values() if r["scheme"] == "dp-ie"][0]["dp_scheme"] == "dp-ie-masked"


def test_xie2022_figure1_completes_a_record_the_engine_wrote_before_an_interruption(tmp_path, cli, monkeypatch):
    """A run trains with its scratch record beside the results (an interrupted joint run resumes from its
    checkpoint); a complete engine record found there is completed, not retrained."""
    from privnlu.experiments import xie2022
    from privnlu.training import engine

    dp = ("--scale", "quick", "--tasks", "sst2", "--dp-epsilons", "2", "--dp-mechanisms", "gaussian",
          "--dp-calibrations", "paper", "--epochs", "1", "--batch-size", "8")
    assert cli("xie2022-figure1", tmp_path / "a", *dp) == 0
    done = _records(tmp_path / "a")
    name = "sst2-baseline-frozen"
    bare = {k: v for k, v in done[name].items() if k not in ("majority", "accuracy", "dp_scheme", "scale", "provenance")}
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / f".{name}.part.json").write_text(json.dumps(bare))
    trained = []
    real = engine.train_run
    monkeypatch.setattr(engine, "train_run", lambda *a, **k: (trained.append(1), real(*a, **k))[1])
    assert cli("xie2022-figure1", tmp_path / "b", *dp) == 0
    again = _records(tmp_path / "b")
    assert len(trained) == 2 and again[name]["seconds"] == done[name]["seconds"]
    assert again[name]["majority"] == done[name]["majority"] and xie2022.GROUP == again[name]["group"]
    assert not [p.name for p in (tmp_path / "b").iterdir() if p.name.startswith(".")]


def test_baseline_gets_the_same_step_floor_as_texthide_when_the_scale_says_so(base):
    from dataclasses import replace

    from privnlu.training.engine import with_scheme

    matched = replace(TINY, min_baseline_steps=30)
    hide = with_scheme(base, m=256, k=4)
    # 72 examples / batch 8 = 9 steps per epoch: a floor of 30 steps needs 4 epochs
    assert huang2020.epochs_for(base, 72, TINY) == 2 and huang2020.epochs_for(hide, 72, TINY) == 4
    assert huang2020.epochs_for(base, 72, matched) == 4
    assert huang2020.SCALES["cpu"].min_baseline_steps == huang2020.SCALES["cpu"].min_texthide_steps == 2000


def test_a_release_attacked_with_other_methods_is_refused_and_the_same_is_read_back(tmp_path, monkeypatch, capsys):
    from privnlu.experiments import xie2022

    monkeypatch.chdir(tmp_path)
    recipe = registry.get("xie2022-figure2")
    point = recipe.points(recipe.defaults)[0]
    s = point.settings
    rec = {"kind": "attack", "attack": "reconstruct", "task": s["task"], "n_queries": 100, "epochs": 50,
           "aux_size": 2000, "experiment_seed": 0, "config": s["config"],
           "conditions": {"m16-k4": {"methods": {"nmf": {}}}}}
    out = tmp_path / "f2"
    out.mkdir()
    (out / f"{point.name}.json").write_text(json.dumps(rec))
    argv = ["reproduce", "xie2022-figure2", "--tasks", s["task"], "--dp-epsilons", "1", "--dp-mechanisms", "gaussian",
            "--dp-calibrations", "correct", "--out", str(out), "--dry-run"]
    assert main(argv) == 0
    assert f"done  {point.name}" in capsys.readouterr().out
    assert xie2022.ATTACK_CONDITION == "16:4"
    assert main([*argv[:-1], "--methods", "nmf,clique", "--dry-run"]) == 2
    assert "other settings (methods" in capsys.readouterr().err


def _rec(scheme, score, variant="baseline", m="0", k=1, dp=None, group="xie2022", task="sst2", **kw):
    return {"kind": "train", "group": group, "task": task, "scheme": scheme, "variant": variant, "m": m, "k": k,
            "score": score, "metric": "accuracy", "mode": "frozen", "dp": dp, "n_train": 100,
            "spec": {"train": {"epochs": 2, "batch_size": 8}, "dp": {"noisy_queries": False} if dp else None},
            "eval": {"dev": {"accuracy": score / 100, "score": score}}, "encoder": {"model": "m", "layers": 2}, **kw}


def test_dp_report_names_mechanism_epsilon_scheme_and_accounted_epsilon():
    from privnlu.report import section_markdown
    from privnlu.report.texthide_sections import run_rows

    dp = lambda e, cal, s: _rec("dp", s, "dp-texthide-intra", "0", 4, {"mechanism": "laplace", "calibration": cal,
                                "target_epsilon": e, "accounted_epsilon": e * 7}, dp_scheme="dp-ie", label="x")
    recs = [_rec("none", 73.0, majority={"score": 50.9, "accuracy": 50.9}),
            _rec("texthide", 68.0, "texthide-intra", "16", 4), dp(1, "paper", 55.0), dp(8, "paper", 61.5),
            dp(8, "correct", 50.9)]
    md = section_markdown("dp_utility", recs)
    assert "| laplace, paper (not DP), dp-ie (m=0, k=4), clean queries, frozen | accuracy | 55.00 | 61.50 |" in md
    assert "| laplace, correct, dp-ie (m=0, k=4), clean queries, frozen | accuracy | - | 50.90 |" in md
    assert "| majority class | accuracy | 50.90 | 50.90 |" in md
    assert "| accounted epsilon | 7 | 56 |" in md and "not a valid DP guarantee" in md
    rows = run_rows([{**recs[3], "label": "sst2-dp", "best_score": 62.0, "seconds": 1.0}])
    assert rows[0][3] == "laplace, eps 8 (accounted 56), paper"


def test_dp_report_averages_repeats_and_keeps_budgets_apart():
    from privnlu.report import section_markdown

    dp = lambda s, e=20, **kw: _rec("dp", s, "dp-texthide-intra", "0", 4, {"mechanism": "gaussian", "calibration": "correct",
                                    "target_epsilon": e, "accounted_epsilon": e}, dp_scheme="dp-ie", **kw)
    base = {"majority": {"score": 50.9, "accuracy": 50.9}}
    recs = [_rec("none", 84.0, **base), _rec("none", 86.0, **base), dp(74.0), dp(83.0), dp(80.0), dp(50.9, 8), dp(52.0, 8),
            dp(60.0, n_train=900), _rec("none", 70.0, n_train=900, **base)]
    md = section_markdown("dp_utility", recs)
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


def test_figure2_report_sets_attack_success_against_epsilon_beside_the_papers_texthide_value():
    from privnlu.report import section_markdown

    def release(name, m, success, cal=None):
        c = {"m": m, "k": 4, "methods": {"nmf": {"success_lenient": success, "success_strict": success / 2}}}
        if cal:
            c["dp_calibration"] = cal
        return {"kind": "attack", "attack": "reconstruct", "task": "sst2", "conditions": {name: c}}

    cal = lambda e, how, acc: {"mechanism": "gaussian", "calibration": how, "target_epsilon": e, "accounted_epsilon": acc}
    recs = [release("m16-k4", "16", 90.0), release("m0-k4", "0", 2.0, cal(1, "correct", 1.0)),
            release("m0-k4", "0", 4.0, cal(20, "correct", 20.0)), release("m0-k4", "0", 6.0, cal(20, "paper", 5175.0))]
    md = section_markdown("dp_attack", recs)
    assert "| TextHide (16, 4), no noise: lenient % (diff to paper) | 85.0 | 90.0 (+5.0) | 90.0 (+5.0) |" in md
    assert "| gaussian, correct: lenient / strict % | - | 2 / 1 | 4 / 2 |" in md
    assert "| gaussian, paper (not DP): lenient / strict % | - | - | 6 / 3 |" in md
    assert "| gaussian, paper (not DP): accounted epsilon | - | - | 5.18e+03 |" in md
    assert md.count("around 85%") == 1
    assert section_markdown("dp_attack", recs[:1]) is None  # no DP release: no Figure 2 section
    assert section_markdown("attack_reconstruction", recs[1:]) is None  # DP releases are not listed again as plain attacks


@pytest.mark.slow
def test_qu2021_table4_runs_a_point_of_each_input_mode(tmp_path):
    """The fine-tuning recipe runs (packaged MiniLM, 40 toy examples, 1 epoch) and writes one scrubbed record per
    point; a rerun reads both back."""
    glue = toy_glue_dir(tmp_path, 40)
    argv = ["reproduce", "qu2021-table4", "--out", str(tmp_path / "t4"), "--seeds", "0", "--encoders", "transformer",
            "--modes", "null,text", "--etas", "100", "--epochs", "1", "--train-limit", "40", "--data-dir", str(glue),
            "--quiet"]
    assert main(argv) == 0
    recs = _records(tmp_path / "t4")
    assert len(recs) == 2 and not [s for r in recs.values() for s in registry.absolute_paths(r)]
    assert main([*argv, "--dry-run"]) == 0
