"""``privnlu reproduce``: the recipe registry, resume by settings, refusal, --force, --jobs, interruption,
reproduce.sh and records free of local paths. The fast recipe here is ``xie2022-dp-audit`` (no model, no data)."""

import json
import os
from pathlib import Path

import pytest

from privnlu.cli.main import main
from privnlu.experiments import registry

AUDIT = ["reproduce", "xie2022-dp-audit", "--draws", "1000", "--quiet"]


def _records(folder: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def _without_provenance(recs: dict[str, dict]) -> dict[str, dict]:
    return {k: {f: v for f, v in r.items() if f != "provenance"} for k, r in recs.items()}


def test_every_recipe_is_listed_with_its_paper_artefact_title_and_folder(capsys):
    assert main(["reproduce", "--list"]) == 0
    listed = capsys.readouterr().out
    assert main(["reproduce"]) == 0
    assert capsys.readouterr().out == listed
    recipes = registry.load()
    assert len(recipes) >= 20
    for r in recipes.values():
        assert r.name == f"{r.paper}-{r.artefact}" and r.paper in ("huang2020", "xie2021", "xie2022", "qu2021")
        assert f"{r.name}  [{r.paper}, {r.artefact}]  -> {r.folder(r.defaults)}/" in listed
        assert r.title in " ".join(listed.split())
    for needed in ("huang2020-table1", "huang2020-table2", "huang2020-figure3", "xie2022-figure1", "qu2021-table3",
                   "qu2021-figure4"):
        assert needed in recipes


@pytest.mark.parametrize("argv,says", [
    (["reproduce", "no-such-recipe"], "unknown recipe 'no-such-recipe'"),
    (["reproduce", "huang2020-table3", "--mode", "joint"], "huang2020-table3 takes no --mode"),
    (["reproduce", "xie2022-figure1", "--dp-epsilons", "1,x"], "'x' is not a number"),
    (["reproduce", "xie2021-scaling", "--repair", "3y40"], "--repair takes ROUNDSxITERS"),
    (["reproduce", "xie2022-figure1", "--dp-mechanisms", "uniform"], "--dp-mechanisms are gaussian, laplace"),
    (["reproduce", "huang2020-table1", "--variants", "intra,both"], "--variants are baseline, intra, inter"),
    (["reproduce", "huang2020-table1", "--tasks", "nosuchtask"], "unknown task 'nosuchtask'"),
    (["reproduce", "xie2022-figure1", "--tasks", "sst2,nosuchtask"], "unknown task 'nosuchtask'"),
])
def test_bad_input_is_one_line_and_exit_2_before_any_work(tmp_path, monkeypatch, capsys, argv, says):
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--out", "out"]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_rerun_skips_done_points_refuses_other_settings_and_force_recomputes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([*AUDIT, "--out", "a"]) == 0
    first = _records(tmp_path / "a")
    assert len(first) == 12
    stamps = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "a").glob("*.json")}
    capsys.readouterr()
    assert main([*AUDIT, "--out", "a"]) == 0
    assert "all 12 points done" in capsys.readouterr().err
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "a").glob("*.json")} == stamps
    assert main(["reproduce", "xie2022-dp-audit", "--draws", "2000", "--out", "a", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "other settings (draws 1000 -> 2000)" in err and "--force" in err
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "a").glob("*.json")} == stamps
    assert main(["reproduce", "xie2022-dp-audit", "--draws", "2000", "--out", "a", "--quiet", "--force"]) == 0
    again = _records(tmp_path / "a")
    assert all(r["draws_per_hypothesis"] == 2000 for r in again.values())
    assert (tmp_path / "a" / "reproduce.sh").read_text().splitlines()[1].endswith("--draws 2000 --out a")


def test_jobs_run_points_in_workers_with_the_same_records(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*AUDIT, "--out", "serial"]) == 0
    assert main([*AUDIT, "--out", "parallel", "--jobs", "2"]) == 0
    serial, parallel = _records(tmp_path / "serial"), _records(tmp_path / "parallel")
    assert len(parallel) == 12 and _without_provenance(serial) == _without_provenance(parallel)
    assert not [p for p in (tmp_path / "parallel").iterdir() if p.name.startswith(".")]  # no scratch or temp files


def test_an_interrupted_run_keeps_its_finished_records_and_resumes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    recipe = registry.get("xie2022-dp-audit")
    done: list[str] = []

    def flaky(opts, point, ctx):
        if len(done) == 3:
            raise KeyboardInterrupt
        done.append(point.name)
        return real(opts, point, ctx)

    real = recipe.run
    monkeypatch.setitem(registry.RECIPES, recipe.name, registry.Recipe(**{**recipe.__dict__, "run": flaky}))
    assert main([*AUDIT, "--out", "a"]) == 130
    kept = _records(tmp_path / "a")
    assert sorted(kept) == sorted(done) and all(r["kind"] == "dp-audit" for r in kept.values())
    assert not [p for p in (tmp_path / "a").iterdir() if p.name.endswith(".tmp")]
    monkeypatch.setitem(registry.RECIPES, recipe.name, recipe)
    ran: list[str] = []
    monkeypatch.setitem(registry.RECIPES, recipe.name, registry.Recipe(
        **{**recipe.__dict__, "run": lambda o, p, c: (ran.append(p.name), real(o, p, c))[1]}))
    assert main([*AUDIT, "--out", "a"]) == 0
    assert len(ran) == 9 and not set(ran) & set(done)


def test_reproduce_sh_holds_one_command_in_canonical_order_without_local_paths(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "xie2022-dp-audit", "--seed", "3", "--quiet", "--draws", "1000", "--jobs", "1"]) == 0
    script = tmp_path / "results" / "xie2022" / "dp-audit" / "reproduce.sh"
    assert script.read_text() == "#!/bin/sh\nprivnlu reproduce xie2022-dp-audit --draws 1000 --seed 3\n"
    assert os.access(script, os.X_OK)
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    assert main([*AUDIT, "--out", str(elsewhere)]) == 0
    assert (elsewhere / "reproduce.sh").read_text().splitlines()[1] == \
        'privnlu reproduce xie2022-dp-audit --draws 1000 --out "$(dirname "$0")"'
    capsys.readouterr()
    assert main([*AUDIT, "--seed", "3", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2].startswith("xie2022-dp-audit: 0 to run, 12 done")
    assert out[-1] == "privnlu reproduce xie2022-dp-audit --draws 1000 --seed 3"


def test_an_old_recipe_name_works_with_one_deprecation_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "xie2022-figure2-attack", "--dry-run"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "deprecated" in line]
    assert err == ["privnlu: recipe 'xie2022-figure2-attack' is deprecated and will be removed in the next release; "
                   "use 'xie2022-figure2'"]


def test_records_are_written_without_local_paths(tmp_path, monkeypatch):
    from privnlu.models.encoder import PACKAGED_MODEL_NAME, default_model_path

    monkeypatch.chdir(tmp_path)
    rec = {"encoder": {"model": str(default_model_path())}, "files": [str(tmp_path / "runs" / "a.json"), "b"],
           "elsewhere": "/opt/data/glue/SST-2", "text": "a sentence / with a slash", "n": 3}
    out = registry.public_record(rec)
    assert out == {"encoder": {"model": PACKAGED_MODEL_NAME}, "files": ["runs/a.json", "b"], "elsewhere": "SST-2",
                   "text": "a sentence / with a slash", "n": 3}
    assert registry.absolute_paths(out) == [] and registry.absolute_paths(rec) != []


def test_points_after_others_run_after_them_and_recipes_name_unique_files():
    for r in registry.load().values():
        pts = r.points(r.defaults)
        names = [p.name for p in pts]
        assert len(set(names)) == len(names), r.name
        for i, p in enumerate(pts):
            assert set(p.after) <= set(names[:i]), (r.name, p.name)
    pt = registry.get("qu2021-table6-7").points(registry.get("qu2021-table6-7").defaults)
    originals = [p for p in pt if p.settings.get("finetune", {}).get("model", "") is None]
    assert pt[:len(originals)] == originals and len(originals) == 2 * 2 * 3  # tasks x modes x seeds, run first
    assert [p.name for p in pt[12:18]] == [f"pretrain_{m}{o}-1000" for m in ("", "text-")
                                           for o in ("vanilla", "probability", "denoising")]


def test_derived_recipes_read_their_source_records_and_refuse_a_missing_one(tmp_path, monkeypatch, capsys):
    from privnlu.report import markdown_report

    monkeypatch.chdir(tmp_path)
    row = lambda d, seed, ok: {"victim": "hidden", "d": d, "k": 1, "seed": seed, "success": ok, "mse": 1e-6 if ok else 0.5,  # noqa: E731
                               "curve": [[20, 1.0, 0.5, 0.1], [40, 1e-3 if ok else 0.9, 1e-6 if ok else 0.5, 1e-7]]}
    t2 = {"kind": "gradient_attack", "source": "sweep", "victim": "hidden", "task": "sst2", "trials": 2, "dims": [4, 16],
          "ks": [1], "config": {"iterations": 40, "seed": 0}, "rows": [row(16, 3, False), row(4, 1, True), row(4, 2, False)]}
    (tmp_path / "t2").mkdir()
    (tmp_path / "t2" / "d4-k1.json").write_text(json.dumps(t2))
    assert main(["reproduce", "huang2020-figure3", "--source", "missing", "--out", "f3"]) == 2
    assert "run `privnlu reproduce huang2020-table2` first" in capsys.readouterr().err
    assert main(["reproduce", "huang2020-table4", "--source", "missing", "--out", "t4"]) == 2
    assert "run `privnlu reproduce huang2020-table3` first" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t2"]  # refused before any work
    assert main(["reproduce", "huang2020-figure3", "--source", "t2", "--out", "f3"]) == 0
    fig = json.loads((tmp_path / "f3" / "curves.json").read_text())
    assert [(r["outcome"], r["d"], r["seed"]) for r in fig["rows"]] == [("succeeded", 4, 1), ("failed", 4, 2)]
    assert "the first successful and the first failed attack" in markdown_report([tmp_path / "f3"])
    example = {"query_number": 0, "query": "q", "query_label": 1, "retrieved": "q", "retrieved_label": 1, "exact": True}
    search = {"kind": "attack", "attack": "search", "task": "cola", "n_queries": 5, "experiment_seed": 0,
              "conditions": {"baseline": {"m": "0", "k": 1, "metrics": {}, "examples": [example]}}}
    (tmp_path / "t3").mkdir()
    (tmp_path / "t3" / "search_cola.json").write_text(json.dumps(search))
    assert main(["reproduce", "huang2020-table4", "--tasks", "cola", "--source", "t3", "--out", "t4"]) == 0
    ex = json.loads((tmp_path / "t4" / "examples_cola.json").read_text())
    assert ex["attack"] == "search-examples" and ex["conditions"]["baseline"]["examples"] == [example]
    assert "| 0 | q | 1 | baseline | q | 1 | yes |" in markdown_report([tmp_path / "t4"])


def test_reproduce_sh_is_kept_only_for_records_the_command_does_not_make(tmp_path):
    """A point's hidden checkpoint beside the records is not a record; a record of another command is."""
    from privnlu.experiments.runner import write_script

    said: list[str] = []
    (tmp_path / ".p.part.ckpt.json").write_text("{}")
    (tmp_path / "p.json").write_text("{}")
    write_script(tmp_path, "privnlu reproduce x", ["p"], said.append)
    assert (tmp_path / "reproduce.sh").read_text() == "#!/bin/sh\nprivnlu reproduce x\n" and not said
    (tmp_path / "other.json").write_text("{}")
    write_script(tmp_path, "privnlu reproduce x --seeds 1", ["p"], said.append)
    assert (tmp_path / "reproduce.sh").read_text() == "#!/bin/sh\nprivnlu reproduce x\n"
    assert said and "other" in said[0] and ".p" not in said[0]


def test_the_paper_methods_auxiliary_threat_model_has_its_own_folder():
    from privnlu.experiments.runner import recipe_options

    r = registry.get("xie2021-table1-paper-method")
    paper = r.folder(recipe_options(r, {}))
    aux = r.folder(recipe_options(r, {"pair_data": "auxiliary"}))
    assert paper.name == "table1-paper-method" and aux.name == "table1-paper-method-auxiliary"


def _audit_point():
    from privnlu.experiments import runner

    recipe = registry.get("xie2022-dp-audit")
    opts = runner.recipe_options(recipe, {"draws": 1000})
    return runner, recipe, opts, recipe.points(opts)[0]


def test_a_point_another_command_made_since_the_plan_is_kept_not_remade(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*AUDIT, "--out", "a"]) == 0
    runner, recipe, opts, point = _audit_point()
    record = tmp_path / "a" / f"{point.name}.json"
    stamp = record.stat().st_mtime_ns

    def must_not_run(o, p, c):
        raise AssertionError("a point with a record of its settings ran again")

    monkeypatch.setitem(registry.RECIPES, recipe.name, registry.Recipe(**{**recipe.__dict__, "run": must_not_run}))
    name, seconds, line = runner.run_point(recipe.name, opts, point.name, "a", runner.Machine(progress=False))
    assert name == point.name and seconds == 0.0 and line.startswith("made meanwhile by another command")
    assert record.stat().st_mtime_ns == stamp
    assert not [p for p in (tmp_path / "a").iterdir() if p.name.startswith(".")]


def test_a_point_being_run_by_another_command_is_waited_for_then_kept(tmp_path, monkeypatch):
    import threading

    monkeypatch.chdir(tmp_path)
    runner, recipe, opts, point = _audit_point()
    folder = tmp_path / "a"
    folder.mkdir()
    ran: list[str] = []
    real = recipe.run
    monkeypatch.setitem(registry.RECIPES, recipe.name, registry.Recipe(
        **{**recipe.__dict__, "run": lambda o, p, c: (ran.append(p.name), real(o, p, c))[1]}))
    claimed, release = threading.Event(), threading.Event()

    def other_command() -> None:  # holds the point's claim, then writes its record, as a second reproduce would
        with runner.point_claim(folder, point.name):
            claimed.set()
            release.wait(10)
            result = runner.registry.public_record(real(opts, point, runner.Machine(progress=False).context(
                folder, folder / f".{point.name}.part.json")))
            (folder / f"{point.name}.json").write_text(json.dumps(result))

    t = threading.Thread(target=other_command)
    t.start()
    assert claimed.wait(10)
    done: list[tuple] = []
    waiter = threading.Thread(target=lambda: done.append(
        runner.run_point(recipe.name, opts, point.name, str(folder), runner.Machine(progress=False))))
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and not done  # it waits while the other command holds the point
    release.set()
    t.join(30)
    waiter.join(30)
    assert done and done[0][2].startswith("made meanwhile by another command") and ran == []
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]
