"""Recipe: Qu et al. Table 6 (privacy-adaptive pretraining on M_rep input) at an accelerator's scale.

The same pretraining as ``qu2021-table6-7``'s first token stage (clean head warm-up, then ``objective`` MLM on
M_rep input at eta = 100, encoder table frozen), with ``batch_size`` x ``steps`` sequences: by default 128 x
12,500 = 1.6 million, 100 times the 16 x 1,000 of the CPU curve's first stage. Each pretrained encoder and the
starting encoder are fine-tuned as in Table 4 (SST-2, first 10,000 examples, token mode, eta = 100, 3 epochs,
seeds 0-2) on the same device, so that the gain compares runs of one machine and precision. On a GPU each batch is
built there, its simulated noise drawn from a seeded ``torch.Generator`` of the device (the corpus is public);
the fine-tuning data are privatized on the CPU by the user's own mechanism, as everywhere.

``scripts/gpu/qu2021_table6.sh`` runs it on a CUDA machine, from the installed environment or, without network,
from the folder ``scripts/gpu/offline_bundle.py`` writes (MiniLM as float16 safetensors, the task's data, the wheels
the machine lacks).
"""

from __future__ import annotations

from dataclasses import asdict

from .qu2021 import PAPER
from .qu2021_training import (OBJECTIVES, PRETRAIN_ETA, TRAIN_LIMITS, _model_name, _pretrain_settings_of,
                              _pt_finetune_config, _stage_dir, check_objectives_and_tasks, file_name, finetune_point,
                              finetune_settings, finetune_settings_of, run_or_read_stage)
from .registry import Point, Recipe, RunContext, register

#: the CPU curve's first token stage: the reference of the "x 100" (sequences = steps x batch)
CPU_STAGE_SEQUENCES = 1000 * 16


def stage_name(objective: str, o: dict) -> str:
    return f"{objective}-b{o['batch_size']}-{o['steps']}"


def _config(objective: str, o: dict):
    from ..training.mlm import PretrainConfig

    return PretrainConfig(objective=objective, eta=PRETRAIN_ETA, mechanism="rep", steps=o["steps"],
                          warmup_steps=500, batch_size=o["batch_size"], max_length=64,
                          checkpoint_every=max(100, o["steps"] // 5), seed=0)


def _stage_settings(objective: str, o: dict) -> dict:
    cfg = {k: v for k, v in asdict(_config(objective, o)).items() if k != "checkpoint_every"}
    return {**cfg, "model": _model_name(o["model"]), "init_head": None}


def _points(o: dict) -> list[Point]:
    """The starting encoder's runs, then per objective its stage and the stage encoder's runs."""
    def run_point(task: str, seed: int, stage: str | None) -> Point:
        c = _pt_finetune_config(task, "rep", seed)
        model = o["model"] if stage is None else stage
        return Point(file_name(task, f"pt-{stage}" if stage else "", c),
                     {"finetune": finetune_settings(task, c, model=model, train_limit=TRAIN_LIMITS[task])},
                     after=(f"pretrain_{stage}",) if stage else ())

    out = [run_point(task, seed, None) for task in o["tasks"] for seed in o["seeds"]]
    for obj in o["objectives"]:
        out.append(Point(f"pretrain_{stage_name(obj, o)}", _stage_settings(obj, o)))
        out += [run_point(task, seed, stage_name(obj, o)) for task in o["tasks"] for seed in o["seeds"]]
    return out


def _settings_of(r: dict) -> dict:
    return _pretrain_settings_of(r) if r["kind"] == "dchi_pretrain" else {"finetune": finetune_settings_of(r)}


def _run_stage(o: dict, ctx: RunContext, objective: str) -> dict:
    """The stage's pretraining into its hidden folder; a stage finished with these settings is read back."""
    return run_or_read_stage(_stage_dir(ctx, stage_name(objective, o)), _config(objective, o),
                             _stage_settings(objective, o), ctx, model=o["model"])


def _run(o: dict, point: Point, ctx: RunContext) -> dict:
    stages = {stage_name(obj, o): obj for obj in o["objectives"]}
    if point.name.startswith("pretrain_"):
        return _run_stage(o, ctx, stages[point.name.removeprefix("pretrain_")])
    s = point.settings["finetune"]
    stage = next((n for n in stages if point.name.startswith(f"finetune_{s['task']}_pt-{n}_")), None)
    return finetune_point(s, ctx, stage=stage, start_model=o["model"],
                          build_stage=lambda: _run_stage(o, ctx, stages[stage]))


register(Recipe(
    "qu2021-table6-gpu", PAPER, "table6-gpu",
    "Qu et al. Table 6 at an accelerator's scale: vanilla, probability and denoising MLM pretraining on M_rep "
    "input at eta 100, 128 x 12,500 sequences per objective (100 times the CPU curve's first stage), each encoder "
    "and the starting one fine-tuned as in Table 4 on SST-2 on the same device, seeds 0-2",
    {"tasks": ("sst2",), "objectives": OBJECTIVES, "steps": 12500, "batch_size": 128, "model": None,
     "seeds": (0, 1, 2)},
    _points, _run, _settings_of, check=check_objectives_and_tasks))
