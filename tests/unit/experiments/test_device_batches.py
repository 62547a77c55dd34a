"""Pretraining batches built on an accelerator: the d_chi noise from a seeded ``torch.Generator`` of the device, the
token space copied there, the recipe that runs it (qu2021-table6-gpu), and float16 model folders loaded as
float32. Run here on the CPU (the same code; a GPU only changes the generator's and tables' device)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy import stats

from privnlu.io import record_files
from privnlu.mechanisms.dchi import dchi_noise, load_token_space, m_txt
from privnlu.rng import SecretGenerator
from privnlu.training import mlm

CORPUS = [f"sentence number {i} is about {w} and more words here" for i, w in
          enumerate(["cats", "dogs", "rain", "music", "maths", "trains", "cities", "rivers"] * 6)]


def test_generator_noise_has_the_dchi_radius_and_matches_the_secret_generators():
    """||N|| ~ Gamma(dim, 1/eta): mean dim/eta, sd sqrt(dim)/eta. 20,000 draws: the mean within 0.1 (7 standard
    errors), and a two-sample KS test against the SecretGenerator's inverse-CDF draws at p > 0.001 (seeded)."""
    dim, eta, n = 16, 2.0, 20000
    gen = dchi_noise(n, dim, eta, torch.Generator().manual_seed(0), dtype=torch.float64)
    ref = dchi_noise(n, dim, eta, SecretGenerator(0, warn=False), dtype=torch.float64)
    r, r_ref = gen.norm(dim=1).numpy(), ref.norm(dim=1).numpy()
    assert gen.shape == (n, dim)
    assert abs(r.mean() - dim / eta) < 0.1 and abs(r.std() - np.sqrt(dim) / eta) < 0.1
    assert stats.ks_2samp(r, r_ref).pvalue > 1e-3
    direction = (gen / gen.norm(dim=1, keepdim=True)).mean(0)
    assert float(direction.abs().max()) < 0.03  # uniform direction: each coordinate's mean ~ 0 (sd 1/sqrt(n dim))
    again = dchi_noise(n, dim, eta, torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.equal(gen, again)  # seeded: the same draws


def test_a_copied_token_space_finds_the_same_nearest_tokens(tiny_model):
    space, tok = load_token_space(tiny_model)
    copy = space.to("cpu")
    assert copy is not space and copy.tokens is space.tokens
    x = space.embeddings[torch.arange(100, 300)] + 0.01 * torch.randn(200, space.dim, generator=torch.Generator().manual_seed(1))
    assert torch.equal(copy.nearest(x), space.nearest(x))
    ids = torch.tensor([[101, 2023, 2003, 1037, 3231, 102]])
    out = m_txt(copy, ids, 1e6, torch.Generator().manual_seed(0))  # eta huge: the tokens themselves
    assert out.tolist() == ids.tolist()


def _config(**kw) -> mlm.PretrainConfig:
    return mlm.PretrainConfig(**{"objective": "probability", "eta": 30.0, "mechanism": "rep", "steps": 4,
                                 "warmup_steps": 2, "batch_size": 4, "max_length": 16, "checkpoint_every": 2,
                                 "eval_size": 8, "draws": 4, "head_lr": 1e-2, "lr": 1e-3, "seed": 0, **kw})


@pytest.mark.parametrize("objective", mlm.OBJECTIVES)
def test_pretraining_with_generator_noise_runs_resumes_and_says_so(tiny_model, tmp_path, objective):
    cfg = _config(objective=objective)
    full = mlm.Pretrainer(cfg, tmp_path / "full", model=tiny_model, texts=CORPUS, torch_noise=True)
    rec = full.run()
    assert rec["finished"] and rec["noise"].startswith("torch.Generator") and rec["device"] == "cpu"
    assert all(np.isfinite(v) for v in rec["loss_last"].values())
    cut = tmp_path / "cut"
    mlm.Pretrainer(cfg, cut, model=tiny_model, texts=CORPUS, torch_noise=True).run(stop_after=3)
    again = mlm.Pretrainer(cfg, cut, model=tiny_model, texts=CORPUS, torch_noise=True).run(resume=True)
    assert again["evals"] == rec["evals"] and again["loss_last"] == rec["loss_last"]  # seeded: resume = uninterrupted
    cpu = mlm.Pretrainer(cfg, tmp_path / "cpu", model=tiny_model, texts=CORPUS).run()
    assert "noise" not in cpu and "device" not in cpu  # the CPU's SecretGenerator path records as before


def test_a_float16_model_folder_loads_as_float32(tiny_model, tmp_path):
    from safetensors.torch import load_file, save_file

    from privnlu.models import load_encoder

    half = tmp_path / "half"
    half.mkdir()
    for f in Path(tiny_model).iterdir():
        if f.is_file() and f.name != "model.safetensors":
            (half / f.name).write_bytes(f.read_bytes())
    save_file({k: v.half() for k, v in load_file(str(Path(tiny_model) / "model.safetensors")).items()},
              str(half / "model.safetensors"), metadata={"format": "pt"})
    enc = load_encoder(half)
    assert {p.dtype for p in enc.model.parameters()} == {torch.float32}


def test_the_gpu_recipe_plans_the_starting_encoder_then_each_stage_and_its_runs():
    from privnlu.experiments import qu2021_gpu as qg
    from privnlu.experiments import registry

    recipe = registry.get("qu2021-table6-gpu")
    o = dict(recipe.defaults)
    pts = recipe.points(o)
    names = [p.name for p in pts]
    assert names[:3] == [f"finetune_sst2_transformer_token_eta100_s{s}" for s in range(3)]
    assert len(pts) == 3 + 3 * 4 and o["steps"] * o["batch_size"] == 100 * qg.CPU_STAGE_SEQUENCES
    for obj in o["objectives"]:
        stage = f"pretrain_{qg.stage_name(obj, o)}"
        i = names.index(stage)
        assert all(p.after == (stage,) for p in pts[i + 1 : i + 4])
        settings = pts[i].settings
        assert settings["mechanism"] == "rep" and settings["eta"] == 100.0 and settings["init_head"] is None
        # a finished stage's record reads back as the point's settings (so a rerun keeps it)
        rec = {"kind": "dchi_pretrain", **{k: v for k, v in settings.items() if k not in ("model", "init_head")},
               "model": "packaged MiniLM", "init_head": None}
        assert registry.normal(recipe.settings_of(rec)) == registry.normal(settings)


def test_committed_gpu_records_are_the_recipes_points():
    from privnlu.experiments import registry

    recipe = registry.get("qu2021-table6-gpu")
    folder = Path(__file__).resolve().parents[3] / "results" / "qu2021" / "table6-gpu"
    files = record_files(folder)
    if not files:
        pytest.skip("no committed records")
    o = registry.options(recipe, {"model": "all-MiniLM-L6-v2-fp16"})
    points = {p.name: p for p in recipe.points(o)}
    for f in files:
        rec = json.loads(f.read_text())
        assert f.stem in points, f.stem
        assert registry.normal(recipe.settings_of(rec)) == registry.normal(points[f.stem].settings), f.stem
        if rec["kind"] == "dchi_pretrain":
            assert rec["device"].startswith("cuda") and rec["bf16"]


def test_the_gpu_script_is_valid_shell_and_runs_the_committed_command():
    """The device script parses, and the recipe command it runs takes the --model of the committed reproduce.sh
    (the float16 folder it unpacks), so its records are the folder's points."""
    import shlex
    import subprocess

    root = Path(__file__).resolve().parents[3]
    script = root / "scripts" / "gpu" / "qu2021_table6.sh"
    assert subprocess.run(["sh", "-n", str(script)], capture_output=True).returncode == 0
    line = (root / "results" / "qu2021" / "table6-gpu" / "reproduce.sh").read_text().splitlines()[1]
    model = shlex.split(line)[shlex.split(line).index("--model") + 1]
    text = script.read_text()
    assert f"MODEL={model}\n" in text and 'reproduce qu2021-table6-gpu --device "$DEVICE" --model "$MODEL"' in text


def test_the_gpu_script_resumes_from_the_committed_records(tmp_path):
    """Run the GPU script with a stand-in interpreter (a test double: a shell script that writes one new record
    into --out and ignores every other call): the recipe runs into the results folder, starting from the committed
    records, and the script passes on its exit code."""
    import shutil
    import subprocess

    root = Path(__file__).resolve().parents[3]
    tree = tmp_path / "tree"
    committed = root / "results" / "qu2021" / "table6-gpu"
    shutil.copytree(committed, tree / "results" / "qu2021" / "table6-gpu")
    (tree / "scripts").mkdir()
    shutil.copy(root / "scripts" / "gpu" / "qu2021_table6.sh", tree / "scripts" / "run.sh")
    model = tree / ".gpu" / "all-MiniLM-L6-v2-fp16"  # already written by an earlier call
    model.mkdir(parents=True)
    (model / "model.safetensors").write_text("stand-in")
    run = tmp_path / "run"
    (run / "carry" / "all-MiniLM-L6-v2-fp16").mkdir(parents=True)
    fake = tmp_path / "python"
    for code in (0, 3):
        fake.write_text('#!/bin/sh\n'
                        'out=""; seen=""\n'
                        'for a in "$@"; do [ "$seen" = 1 ] && out="$a"; seen=""; [ "$a" = --out ] && seen=1; done\n'
                        'if [ -n "$out" ]; then ls "$out" > "$out/../seen.txt"; echo "{}" > "$out/new_point.json"; fi\n'
                        f'[ -n "$out" ] && exit {code}; exit 0\n')
        fake.chmod(0o755)
        env = {"PATH": "/usr/bin:/bin", "PYTHON": str(fake), "RUN": str(run)}
        done = subprocess.run(["sh", "scripts/run.sh"], cwd=tree, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == code, done.stderr
    names = {p.name for p in committed.glob("*.json")}
    seen = set((tree / "results" / "qu2021" / "seen.txt").read_text().split())
    assert names and names <= seen
    assert (tree / "results" / "qu2021" / "table6-gpu" / "new_point.json").is_file()
