"""The privacy-adaptive pretraining curve (Qu et al. Tables 6-7): its stages, the committed records it keeps, and
the rebuild of a stage whose models are not here."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from privnlu.io import record_files
from privnlu.cli.main import main
from privnlu.experiments import qu2021_training as qt
from privnlu.experiments import registry
from privnlu.experiments.registry import RunContext
from privnlu.schemas.paths import path_ref

ROOT = Path(__file__).resolve().parents[3]
RECIPE = "qu2021-table6-7"


def test_every_stage_continues_the_one_before_it_with_its_own_seed():
    st = qt.stages(qt.OBJECTIVES, ("token", "text"), None)
    assert len(st) == 3 * (3 + 3)
    for mode, (mech, curve) in qt.CURVES.items():
        for obj in qt.OBJECTIVES:
            chain = [st[qt.stage_name(obj, mech, t)] for t in curve]
            assert [s.total for s in chain] == list(curve)
            assert sum(s.steps for s in chain) == curve[-1]
            assert [s.seed for s in chain] == [0, 1, 2]
            assert chain[0].model is None and all(b.model == qt.stage_name(obj, mech, a.total)
                                                  for a, b in zip(chain, chain[1:]))
            assert all(b.head == (qt.stage_name(obj, mech, a.total), "mlm_head.safetensors")
                       for a, b in zip(chain, chain[1:]))
    # the text curve starts from its objective's clean warm-up head; the token curve warms up its own
    assert st["text-vanilla-1000"].head == ("vanilla-1000", "mlm_head_warm.safetensors")
    assert st["vanilla-1000"].head is None and qt._stage_config(st["vanilla-1000"]).warmup_steps == 500
    assert set(qt.stages(qt.OBJECTIVES, ("token",), 4000)) == {f"{o}-{t}" for o in qt.OBJECTIVES for t in (1000, 4000)}


def test_the_committed_records_are_the_recipes_points():
    """The records already in the results folder hold the settings of the recipe's points of the same name, so a
    rerun keeps them; every record there is a point of the recipe."""
    recipe = registry.get(RECIPE)
    folder = ROOT / "results" / "qu2021" / "table6-7"
    points = {p.name: p for p in recipe.points(recipe.defaults)}
    files = record_files(folder)
    if not files:
        pytest.skip("no committed records")
    for f in files:
        rec = json.loads(f.read_text())
        assert f.stem in points, f.stem
        assert registry.normal(recipe.settings_of(rec)) == registry.normal(points[f.stem].settings), f.stem


def test_bad_curve_options_are_refused_before_any_work(tmp_path, capsys):
    for args in (["--objectives", "bogus"], ["--modes", "sequence"], ["--tasks", "qqp"], ["--max-steps", "0"]):
        assert main(["reproduce", RECIPE, "--out", str(tmp_path / "o"), "--dry-run", *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "o").exists()


class FakePretrainer:
    """Test double of :class:`privnlu.training.mlm.Pretrainer`: records which stage it built and from what, and
    writes the files a finished run leaves."""

    built: list[tuple[str, str | None, str | None]] = []

    def __init__(self, config, out_dir, *, model=None, init_head=None, **_kw) -> None:
        self.config, self.out, self.model, self.init_head = config, Path(out_dir), model, init_head

    def run(self, *, resume: bool = False) -> dict:
        for need in (p for p in (self.model, self.init_head) if p is not None):
            assert Path(need).exists(), need
        FakePretrainer.built.append((self.out.name, self.model and Path(self.model).parent.name,
                                     self.init_head and Path(self.init_head).name))
        (self.out / "encoder").mkdir(parents=True, exist_ok=True)
        for f in ("mlm_head.safetensors", "mlm_head_warm.safetensors"):
            (self.out / f).write_text("{}")
        rec = {"kind": "dchi_pretrain", **asdict(self.config), "model": self.model and path_ref(self.model, self.out),
               "init_head": self.init_head and str(self.init_head)}
        (self.out / "pretrain.json").write_text(json.dumps(rec))
        return rec


def test_a_stage_whose_models_are_gone_is_rebuilt_with_the_stages_before_it(tmp_path, monkeypatch):
    from privnlu.training import mlm

    monkeypatch.setattr(mlm, "Pretrainer", FakePretrainer)
    FakePretrainer.built = []
    opts = registry.get(RECIPE).defaults
    ctx = RunContext(out=tmp_path, scratch=tmp_path / ".x.part")
    qt._run_stage(opts, ctx, "text-probability-3000")
    assert FakePretrainer.built == [
        ("probability-1000", None, None),
        ("text-probability-1000", None, "mlm_head_warm.safetensors"),
        ("text-probability-3000", "text-probability-1000", "mlm_head.safetensors"),
    ]
    FakePretrainer.built = []
    assert qt._run_stage(opts, ctx, "text-probability-3000")["steps"] == 2000  # finished: its record, nothing rerun
    assert FakePretrainer.built == []
    (tmp_path / ".pretrain" / "text-probability-3000" / "pretrain.json").unlink()  # its stages are here: only it runs
    qt._run_stage(opts, ctx, "text-probability-3000")
    assert [b[0] for b in FakePretrainer.built] == ["text-probability-3000"]
    other = tmp_path / ".pretrain" / "probability-1000" / "pretrain.json"  # a record of other settings is no result
    other.write_text(json.dumps({**json.loads(other.read_text()), "eta": 50.0}))
    FakePretrainer.built = []
    qt._run_stage(opts, ctx, "probability-1000")
    assert [b[0] for b in FakePretrainer.built] == ["probability-1000"]


def test_gains_and_table45_pair_runs_of_one_precision_only():
    """A bfloat16 pretrained run is paired with the bfloat16 original, a float32 one with the float32 original."""
    from privnlu.report.dchi_training_sections import _pretrain_gains, table45

    def rec(tag: str, bf16: bool, acc: float, seed: int) -> dict:
        return {"kind": "dchi_finetune", "task": "sst2", "encoder": "transformer", "mode": "token", "eta": 100.0,
                "seed": seed, "tag": tag, "bf16_used": bf16, "score": 100 * acc, "metrics": {"accuracy": acc}}

    cells = {("", True): 0.60, ("", False): 0.62, ("pt-vanilla-1000", True): 0.61, ("pt-vanilla-1000", False): 0.65}
    recs = [rec(tag, bf16, acc + 0.001 * s * (1 + bf16), s) for (tag, bf16), acc in cells.items() for s in range(3)]
    gains = {k[5]: sum(a - b for a, b in ab) / len(ab) for k, ab in _pretrain_gains(recs).items()}
    assert gains == {"bfloat16": pytest.approx(0.01), "float32": pytest.approx(0.03)}
    # a stage at another batch names it in its tag: steps and batch are read apart
    gpu = [rec("pt-denoising-b128-12500", True, 0.70, s) for s in range(3)]
    keys = [k for k in _pretrain_gains(recs + gpu) if k[3] == "denoising"]
    assert keys == [("sst2", "token", 100.0, "denoising", 12500, "bfloat16", 128, False)]
    rows = {(r["tag"], r["precision"]): r["mean"] for r in table45(recs)}
    assert rows[("", "bfloat16")] == pytest.approx(0.602) and rows[("", "float32")] == pytest.approx(0.621)


def test_a_selection_without_the_stages_it_reads_still_runs(tmp_path, monkeypatch):
    """``--modes text``: the M_txt curve starts from its objective's M_rep warm-up head, a stage outside the
    selection. No point waits for a point that is not in the list, and the stage is built when its head is not
    here."""
    from privnlu.training import mlm

    opts = {**registry.get(RECIPE).defaults, "modes": ("text",), "objectives": ("vanilla",), "max_steps": 1000}
    points = registry.get(RECIPE).points(opts)
    names = {p.name for p in points}
    assert "pretrain_text-vanilla-1000" in names and "pretrain_vanilla-1000" not in names
    assert all(a in names for p in points for a in p.after)
    monkeypatch.setattr(mlm, "Pretrainer", FakePretrainer)
    FakePretrainer.built = []
    qt._run_stage(opts, RunContext(out=tmp_path, scratch=tmp_path / ".x.part"), "text-vanilla-1000")
    assert [b[0] for b in FakePretrainer.built] == ["vanilla-1000", "text-vanilla-1000"]


def test_the_gpu_recipe_builds_a_missing_stage_then_fine_tunes_its_encoder(tmp_path, monkeypatch):
    """qu2021-table6-gpu shares the curve's stage and run helpers: a run whose stage is not here builds it first,
    fine-tunes the stage's encoder under its tag, and a finished stage is read back rather than rerun."""
    from privnlu.experiments import qu2021_gpu as qg
    from privnlu.training import mlm

    monkeypatch.setattr(mlm, "Pretrainer", FakePretrainer)
    runs: list[tuple[str | None, str]] = []
    monkeypatch.setattr(qt, "finetune_run", lambda task, c, *, model, train_limit, tag, ctx: runs.append((model, tag))
                        or {"tag": tag})
    recipe = registry.get("qu2021-table6-gpu")
    o = {**recipe.defaults, "objectives": ("vanilla",), "steps": 200, "batch_size": 8, "seeds": (0,)}
    points = {p.name: p for p in recipe.points(o)}
    ctx = RunContext(out=tmp_path, scratch=tmp_path / ".x.part")
    FakePretrainer.built = []
    recipe.run(o, points["finetune_sst2_pt-vanilla-b8-200_transformer_token_eta100_s0"], ctx)
    assert [b[0] for b in FakePretrainer.built] == ["vanilla-b8-200"]
    assert runs == [(str(tmp_path / ".pretrain" / "vanilla-b8-200" / "encoder"), "pt-vanilla-b8-200")]
    assert recipe.run(o, points["pretrain_vanilla-b8-200"], ctx)["steps"] == 200
    assert [b[0] for b in FakePretrainer.built] == ["vanilla-b8-200"]  # finished with these settings: read back
    recipe.run(o, points["finetune_sst2_transformer_token_eta100_s0"], ctx)
    assert runs[-1] == (None, "")  # the starting encoder
    assert qg.stage_name("vanilla", o) == "vanilla-b8-200"


def test_a_run_names_its_stage_and_a_rerun_stage_that_differs_from_its_record(tmp_path, monkeypatch):
    """A fine-tuning run records the masked-token accuracies of the stage it started from; where the stage's record
    beside the results says otherwise (the stage was rerun after its encoder was lost), the run and the gain table
    say 'rebuilt stage'."""
    from privnlu.report import section_markdown
    from privnlu.report.dchi_training_sections import _gain_rows, _pretrain_gains, _rebuilt_rows
    from privnlu.training import mlm

    monkeypatch.setattr(mlm, "Pretrainer", FakePretrainer)
    monkeypatch.setattr(qt, "finetune_run", lambda task, c, *, model, train_limit, tag, ctx: {"tag": tag})
    recipe = registry.get("qu2021-table6-gpu")
    o = {**recipe.defaults, "objectives": ("vanilla",), "steps": 200, "batch_size": 8, "seeds": (0,)}
    point = {p.name: p for p in recipe.points(o)}["finetune_sst2_pt-vanilla-b8-200_transformer_token_eta100_s0"]
    ctx = RunContext(out=tmp_path, scratch=tmp_path / ".x.part")
    FakePretrainer.built = []
    rec = recipe.run(o, point, ctx)
    assert rec["stage"] == {"name": "vanilla-b8-200", "evals": None, "rebuilt": False}  # no stage record to differ from
    stage_file = tmp_path / ".pretrain" / "vanilla-b8-200" / "pretrain.json"
    stage_file.write_text(json.dumps({**json.loads(stage_file.read_text()), "evals": {"clean_after_adapt": 0.21}}))
    (tmp_path / "pretrain_vanilla-b8-200.json").write_text(json.dumps({"evals": {"clean_after_adapt": 0.21}}))
    assert qt.stage_used(ctx, "vanilla-b8-200")["rebuilt"] is False
    (tmp_path / "pretrain_vanilla-b8-200.json").write_text(json.dumps({"evals": {"clean_after_adapt": 0.20}}))
    assert recipe.run(o, point, ctx)["stage"] == {"name": "vanilla-b8-200", "evals": {"clean_after_adapt": 0.21},
                                                   "rebuilt": True}

    def ft(tag: str, acc: float, seed: int, rebuilt: bool | None = None) -> dict:
        r = {"kind": "dchi_finetune", "task": "mrpc", "encoder": "transformer", "mode": "text", "eta": 100.0,
             "seed": seed, "tag": tag, "bf16_used": False, "score": 100 * acc, "metrics": {"accuracy": acc}}
        return r if rebuilt is None else {**r, "stage": {"name": tag[3:], "rebuilt": rebuilt}}

    recs = [ft("", 0.70, s) for s in range(2)] + [ft("pt-text-denoising-1000", 0.72, s, True) for s in range(2)]
    recs += [ft("pt-text-vanilla-1000", 0.71, s, False) for s in range(2)]
    steps = {r[3]: r[4] for r in _gain_rows(_pretrain_gains(recs))}
    assert steps == {"text-denoising": "1000 (rebuilt stage)", "text-vanilla": 1000}
    for r in recs[2:4]:
        r["stage"]["evals"] = {"clean_after_adapt": 0.29, "private_after_adapt": 0.26}
    stage_rec = {"kind": "dchi_pretrain", "_source": "t/pretrain_text-denoising-1000.json",
                 "evals": {"clean_after_adapt": 0.28, "private_after_adapt": 0.25}}
    assert _rebuilt_rows(recs + [stage_rec]) == [["text-denoising-1000", 2, "0.2800", "0.2500", "0.2900", "0.2600"]]
    assert "Rebuilt stages" in section_markdown("dchi_pretrain_gain", recs + [stage_rec])
    assert "Rebuilt stages" not in section_markdown("dchi_pretrain_gain", recs[:2] + recs[4:])
