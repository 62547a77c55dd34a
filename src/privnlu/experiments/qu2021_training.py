"""Recipes: d_chi-privacy for BERT (Qu et al. 2021), Tables 4-7: privacy-constrained fine-tuning and
privacy-adaptive pretraining, at CPU scale.

* Table 4 (SST) and Table 5 (QQP; MRPC stands in): the transformer and the BiLSTM fine-tuned on null, token
  (M_rep) and text (M_txt) privatized input at each eta, one point per (seed, encoder, mode, eta);
* Tables 6-7: denoising MLM pretraining on M_rep input (Table 6) and on M_txt input (Table 7) at eta = 100, each
  stage continuing the previous one, and each pretrained encoder fine-tuned as in Table 4.

Each point's privatized data are drawn from its seed and its (mode, eta), so that every point stands alone (the
encoders of one (mode, eta) and seed see the same privatized copy). The trained models are written beside the
records in hidden folders (not results); a pretraining stage's encoder is what the points after it read.
"""

from __future__ import annotations

import functools
from dataclasses import asdict
from pathlib import Path

from ..errors import PrivnluError, require
from ..schemas import display_name
from .registry import Point, Recipe, RunContext, register

PAPER = "qu2021"
MODES = ("null", "sequence", "token", "text")
#: the run settings the recorded ``settings`` hold that do not change a result
IGNORED = ("data_dir",)


def _model_name(model: str | dict | None) -> str | None:
    """A fine-tuning run's starting encoder: None (packaged MiniLM) or the pretraining stage it comes from."""
    if not model or model == "packaged MiniLM":
        return None
    p = Path(display_name(model))  # a path, or a record's reference {"name", "sha256"}
    return p.parent.name if p.name == "encoder" else p.name


def finetune_settings(task: str, config, *, model: str | None, train_limit: int | None, max_length: int = 128) -> dict:
    return {"task": task, "model": _model_name(model), "train_limit": train_limit, "dev_limit": None,
            "max_length": max_length, **asdict(config)}


def finetune_settings_of(r: dict) -> dict:
    s = {k: v for k, v in r["settings"].items() if k not in IGNORED}
    return {**s, "model": _model_name(s.get("model"))}


def _configs(o: dict, task: str) -> list:
    from ..training import private_finetune as pf

    lr = pf.paper_lr(task)
    out = []
    for seed in o["seeds"]:
        for mode in o["modes"]:
            for eta in ([None] if mode == "null" else o["etas"]):
                for enc in o["encoders"]:
                    if mode == "sequence" and enc == "bilstm":
                        continue  # sequence mode needs a pretrained user-side encoder
                    out.append(pf.FinetuneConfig(mode=mode, encoder=enc, eta=eta, epochs=o["epochs"], batch_size=32,
                                                 lr=lr, seed=seed))
    return out


def file_name(task: str, tag: str, c) -> str:
    eta = "" if c.eta is None else f"_eta{c.eta:g}"
    return f"finetune_{task}{'_' + tag if tag else ''}_{c.encoder}_{c.mode}{eta}_s{c.seed}"


@functools.lru_cache(maxsize=1)
def _prepared(task: str, model: str | None, train_limit: int | None, data_dir: str | None, sequence: bool, device: str):
    from ..training import private_finetune as pf

    return pf.prepare(task, model=model, max_length=128, train_limit=train_limit, data_dir=data_dir,
                      sequence_features=sequence, device=device)


def finetune_run(task: str, config, *, model: str | None, train_limit: int | None, tag: str, ctx: RunContext) -> dict:
    """One fine-tuning run; its model folder goes to a hidden folder beside the record."""
    from ..training.export import export_dchi_model
    from ..rng import SecretGenerator, derive_seed
    from ..training import private_finetune as pf

    prep = _prepared(task, model, train_limit, ctx.data_dir, config.mode == "sequence", ctx.device)
    eta_part = 0 if config.eta is None else int(round(config.eta * 1000))
    rng = SecretGenerator(None if config.seed is None else derive_seed(config.seed, MODES.index(config.mode), eta_part),
                          warn=False)
    payload_file = ctx.out / f".payload_{ctx.scratch.stem}.pt"
    payloads = pf.load_or_privatize(prep, config.mode, config.eta, rng, payload_file)
    log = (lambda m: __import__("sys").stderr.write(m + "\n")) if ctx.progress else None
    res = pf.finetune(prep, config, payloads=payloads, log=log, checkpoint=ctx.out / f".{ctx.scratch.stem}.ckpt.pt")
    rec = res.record
    name = ctx.scratch.stem.removeprefix(".").removesuffix(".part")
    rec.update(tag=tag, settings=finetune_settings(task, config, model=model, train_limit=train_limit),
               budget=pf.budget(rec["train_size"], config.batch_size, config.epochs), equal_budget=True,
               model_dir=f".models/{name}")
    export_dchi_model(ctx.out / ".models" / name, record=rec, model=res.model, encoder=prep.encoder,
                      label_names=prep.task.label_names, pair=prep.pair, base_model=model)
    payload_file.unlink(missing_ok=True)
    from ..models.checkpoint import remove as remove_checkpoint

    remove_checkpoint(ctx.out / f".{ctx.scratch.stem}.ckpt.pt")  # its .safetensors and .json
    return rec


def _check(o: dict) -> None:
    require(set(o["modes"]) <= set(MODES), f"--modes are {', '.join(MODES)}")
    require(set(o["encoders"]) <= {"transformer", "bilstm"}, "--encoders are transformer, bilstm")


def _finetune_recipe(name: str, artefact: str, task: str, train_limit: int | None, title: str) -> None:
    def points(o: dict) -> list[Point]:
        return [Point(file_name(task, "", c), finetune_settings(task, c, model=None, train_limit=o["train_limit"]))
                for c in _configs(o, task)]

    def run(o: dict, point: Point, ctx: RunContext) -> dict:
        c = next(c for c in _configs(o, task) if file_name(task, "", c) == point.name)
        return finetune_run(task, c, model=None, train_limit=o["train_limit"], tag="", ctx=ctx)

    register(Recipe(name, PAPER, artefact, title,
                    {"seeds": (0, 1, 2), "encoders": ("transformer", "bilstm"), "modes": ("null", "token", "text"),
                     "etas": (50.0, 100.0, 150.0), "epochs": 3, "train_limit": train_limit},
                    points, run, finetune_settings_of, check=_check))


_finetune_recipe("qu2021-table4", "table4", "sst2", 10000,
                 "Qu et al. Table 4: privacy-constrained fine-tuning on SST-2 (first 10,000 examples), transformer "
                 "(MiniLM) and BiLSTM, null / token (M_rep) / text (M_txt) input at eta 50, 100, 150, seeds 0-2")
_finetune_recipe("qu2021-table5", "table5", "mrpc", None,
                 "Qu et al. Table 5 (QQP; MRPC stands in): privacy-constrained fine-tuning, transformer and BiLSTM, "
                 "null / token / text input at eta 50, 100, 150, seeds 0-2")


# -- Tables 6-7: privacy-adaptive pretraining --------------------------------------------------------------------

#: stage -> (input mechanism, adaptation steps, seed, the stage whose encoder it continues, the head it starts
#: from: (stage, file)); every stage: denoising MLM at eta 100, batch 16, 64 tokens, on the packaged wiki corpus
STAGES = {
    "denoising-1000": ("rep", 1000, 0, None, None),
    "denoising-4000": ("rep", 3000, 1, "denoising-1000", ("denoising-1000", "mlm_head.safetensors")),
    "text-denoising-1000": ("text", 1000, 0, None, ("denoising-1000", "mlm_head_warm.safetensors")),
    "text-denoising-3000": ("text", 2000, 1, "text-denoising-1000", ("text-denoising-1000", "mlm_head.safetensors")),
}
#: the fine-tuning mode of each stage's encoder: the input form it was adapted to
FINETUNE_MODE = {"rep": "token", "text": "text"}
PRETRAIN_ETA = 100.0


def _stage_config(stage: str):
    from ..training.mlm import PretrainConfig

    mech, steps, seed, _, _ = STAGES[stage]
    return PretrainConfig(objective="denoising", eta=PRETRAIN_ETA, mechanism=mech, steps=steps,
                          warmup_steps=500 if stage == "denoising-1000" else 100, batch_size=16, max_length=64,
                          checkpoint_every=100, seed=seed)


def _stage_settings(stage: str) -> dict:
    _, _, _, model, head = STAGES[stage]
    cfg = {k: v for k, v in asdict(_stage_config(stage)).items() if k != "checkpoint_every"}
    return {**cfg, "model": model, "init_head": None if head is None else f"{head[0]}/{Path(head[1]).stem}"}


def _pretrain_settings_of(r: dict) -> dict:
    cfg = {k: r[k] for k in asdict(_stage_config("denoising-1000")) if k != "checkpoint_every"}
    head = r.get("init_head")
    return {**cfg, "model": _model_name(r.get("model")),
            "init_head": None if not head else f"{Path(head).parent.name}/{Path(head).stem}"}


def _stage_dir(ctx: RunContext, stage: str) -> Path:
    return ctx.out / ".pretrain" / stage


def _pt_points(o: dict) -> list[Point]:
    from ..training import private_finetune as pf

    out = []
    for stage, (mech, _, _, model, head) in STAGES.items():
        after = tuple(f"pretrain_{s}" for s in {model, head[0] if head else None} if s)
        out.append(Point(f"pretrain_{stage}", _stage_settings(stage), after=after))
    for stage, (mech, *_rest) in STAGES.items():
        for seed in o["seeds"]:
            c = pf.FinetuneConfig(mode=FINETUNE_MODE[mech], encoder="transformer", eta=PRETRAIN_ETA, epochs=3,
                                  batch_size=32, lr=pf.paper_lr(o["task"]), seed=seed)
            out.append(Point(file_name(o["task"], f"pt-{stage}", c),
                             {"finetune": finetune_settings(o["task"], c, model=stage, train_limit=o["train_limit"])},
                             after=(f"pretrain_{stage}",)))
    return out


def _pt_settings_of(r: dict) -> dict:
    return _pretrain_settings_of(r) if r["kind"] == "dchi_pretrain" else {"finetune": finetune_settings_of(r)}


def _pt_run(o: dict, point: Point, ctx: RunContext) -> dict:
    from ..training import private_finetune as pf
    from ..training.mlm import Pretrainer

    if point.name.startswith("pretrain_"):
        stage = point.name.removeprefix("pretrain_")
        _, _, _, model, head = STAGES[stage]
        model_dir = None if model is None else _stage_dir(ctx, model) / "encoder"
        head_file = None if head is None else _stage_dir(ctx, head[0]) / head[1]
        for need in (p for p in (model_dir, head_file) if p is not None):
            if not need.exists():
                raise PrivnluError(f"pretraining stage {stage} continues from {need}, which is not here (the "
                                   "models are not committed): rerun the stage it comes from with --force")
        log = (lambda m: __import__("sys").stderr.write(m + "\n")) if ctx.progress else (lambda m: None)
        return Pretrainer(_stage_config(stage), _stage_dir(ctx, stage), model=model_dir, init_head=head_file, log=log,
                          device=ctx.device).run(resume=True)
    s = point.settings["finetune"]
    stage = s["model"]
    encoder = _stage_dir(ctx, stage) / "encoder"
    if not encoder.exists():
        raise PrivnluError(f"{point.name} fine-tunes the encoder of pretraining stage {stage}, which is not here (the "
                           f"models are not committed): rerun pretrain_{stage} with --force")
    c = pf.FinetuneConfig(**{k: s[k] for k in asdict(pf.FinetuneConfig(mode="null"))})
    return finetune_run(s["task"], c, model=str(encoder), train_limit=s["train_limit"], tag=f"pt-{stage}", ctx=ctx)


register(Recipe(
    "qu2021-table6-7", PAPER, "table6-7",
    "Qu et al. Tables 6-7: denoising MLM pretraining on M_rep (Table 6) and M_txt (Table 7) input at eta 100, "
    "1,000 steps then continued, each encoder fine-tuned on SST-2 as in Table 4 (token or text input, eta 100)",
    {"task": "sst2", "seeds": (0, 1, 2), "train_limit": 10000},
    _pt_points, _pt_run, _pt_settings_of))
