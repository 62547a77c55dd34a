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
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import require
from ..mechanisms.dchi_modes import finetune_mode, mechanism as dchi_mechanism
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
    if isinstance(model, str) and Path(model).name == "encoder":  # a stage's encoder folder, absolute or not
        return Path(model).parent.name
    p = Path(display_name(model))  # a path, or a record's reference {"name", "sha256"}
    return p.parent.name if p.name == "encoder" else p.name


def finetune_settings(task: str, config, *, model: str | None, train_limit: int | None, max_length: int = 128) -> dict:
    return {"task": task, "model": _model_name(model), "train_limit": train_limit, "dev_limit": None,
            "max_length": max_length, **asdict(config)}


def finetune_settings_of(r: dict) -> dict:
    """A fine-tuning record's settings. A run of a stage's encoder from an absolute results folder recorded its
    model as the empty name; its tag, ``pt-<stage>``, names the stage."""
    s = {k: v for k, v in r["settings"].items() if k not in IGNORED}
    model = _model_name(s.get("model"))
    if s.get("model") == "" and str(r.get("tag", "")).startswith("pt-"):
        model = r["tag"].removeprefix("pt-")
    return {**s, "model": model}


def _configs(o: dict, task: str) -> list:
    from ..training import private_finetune as pf

    lr = pf.paper_lr(task)
    out = []
    for seed in o["seeds"]:
        for mode in map(finetune_mode, o["modes"]):
            for eta in (o["etas"] if mode.private else [None]):
                for enc in o["encoders"]:
                    if mode.on_representation and enc == "bilstm":
                        continue  # sequence mode needs a pretrained user-side encoder
                    out.append(pf.FinetuneConfig(mode=mode.name, encoder=enc, eta=eta, epochs=o["epochs"], batch_size=32,
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
    from ..model_folder.export import export_dchi_model
    from ..rng import SecretGenerator, derive_seed
    from ..training import private_finetune as pf

    prep = _prepared(task, model, train_limit, ctx.data_dir, finetune_mode(config.mode).on_representation, ctx.device)
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

#: the paper's three MLM objectives (section 3.4, equations 5-7), in its column order
OBJECTIVES = ("vanilla", "probability", "denoising")
#: fine-tuning mode (the paper's table) -> (pretraining input mechanism, the curve: pretraining steps in all after
#: each stage; each stage continues the one before it with its own seed)
CURVES = {"token": ("rep", (1000, 4000, 16000)), "text": ("text", (1000, 3000, 12000))}
#: each task's training set, as in Tables 4 (SST-2, first 10,000) and 5 (MRPC, all, standing in for QQP)
TRAIN_LIMITS = {"sst2": 10000, "mrpc": None}
PRETRAIN_ETA = 100.0


@dataclass(frozen=True)
class Stage:
    """One pretraining stage: ``steps`` more adaptation steps on ``mechanism`` input, continuing stage ``model``'s
    encoder (None: the packaged MiniLM) with the head ``head`` = (stage, file) (None: a clean warm-up first)."""

    objective: str
    mechanism: str
    total: int
    steps: int
    seed: int
    model: str | None
    head: tuple[str, str] | None

    @property
    def reads(self) -> tuple[str, ...]:
        """The stages whose encoder or head this one starts from."""
        return tuple(dict.fromkeys(s for s in (self.model, self.head[0] if self.head else None) if s))


def stage_name(objective: str, mechanism: str, total: int) -> str:
    return f"{'text-' if dchi_mechanism(mechanism).sends_tokens else ''}{objective}-{total}"


def stages(objectives: tuple[str, ...], modes: tuple[str, ...], max_steps: int | None) -> dict[str, Stage]:
    """Every stage of the curves, in run order: by curve level, token input before text. The text curve starts
    from its objective's token-curve warm-up head (M_txt and M_rep share the clean warm-up)."""
    out: dict[str, Stage] = {}
    for level in range(max(len(c) for _, c in CURVES.values())):
        for mode in ("token", "text"):
            mech, curve = CURVES[mode]
            if mode not in modes or level >= len(curve) or (max_steps and curve[level] > max_steps):
                continue
            for obj in objectives:
                total, prev = curve[level], (curve[level - 1] if level else 0)
                before = stage_name(obj, mech, prev) if level else None
                if level:
                    head = (before, "mlm_head.safetensors")
                else:
                    head = None if not dchi_mechanism(mech).sends_tokens else (stage_name(obj, "rep", CURVES["token"][1][0]),
                                                       "mlm_head_warm.safetensors")
                out[stage_name(obj, mech, total)] = Stage(obj, mech, total, total - prev, level, before, head)
    return out


#: the fine-tuning mode of each stage's encoder: the input form it was adapted to
FINETUNE_MODE = {mech: mode for mode, (mech, _) in CURVES.items()}


def _stage_config(st: Stage):
    from ..training.mlm import PretrainConfig

    first_warm = st.model is None and st.head is None  # the one stage of a curve that warms its head up itself
    return PretrainConfig(objective=st.objective, eta=PRETRAIN_ETA, mechanism=st.mechanism, steps=st.steps,
                          warmup_steps=500 if first_warm else 100, batch_size=16, max_length=64,
                          checkpoint_every=100, seed=st.seed)


def _stage_settings(st: Stage) -> dict:
    cfg = {k: v for k, v in asdict(_stage_config(st)).items() if k != "checkpoint_every"}
    return {**cfg, "model": st.model, "init_head": None if st.head is None else f"{st.head[0]}/{Path(st.head[1]).stem}"}


def _pretrain_settings_of(r: dict) -> dict:
    from ..training.mlm import PretrainConfig

    cfg = {k: r[k] for k in asdict(PretrainConfig()) if k != "checkpoint_every"}
    head = r.get("init_head")
    return {**cfg, "model": _model_name(r.get("model")),
            "init_head": None if not head else f"{Path(head).parent.name}/{Path(head).stem}"}


def _stage_dir(ctx: RunContext, stage: str) -> Path:
    return ctx.out / ".pretrain" / stage


def _pt_finetune_config(task: str, mechanism: str, seed: int):
    from ..training import private_finetune as pf

    return pf.FinetuneConfig(mode=FINETUNE_MODE[mechanism], encoder="transformer", eta=PRETRAIN_ETA, epochs=3,
                             batch_size=32, lr=pf.paper_lr(task), seed=seed)


def _pt_points(o: dict) -> list[Point]:
    """Per curve level: its pretraining stages, then their fine-tuning runs (each task, each seed)."""
    all_stages = stages(o["objectives"], o["modes"], o["max_steps"])
    # the original encoder's runs, on the machine (and so at the precision) of the pretrained encoders' runs
    out = [Point(file_name(task, "", c), {"finetune": finetune_settings(task, c, model=None,
                                                                       train_limit=TRAIN_LIMITS[task])})
           for task in o["tasks"] for mode in o["modes"] for seed in o["seeds"]
           for c in [_pt_finetune_config(task, CURVES[mode][0], seed)]]
    for total in sorted({st.total for st in all_stages.values()}):
        level = {n: st for n, st in all_stages.items() if st.total == total}
        for name, st in level.items():
            out.append(Point(f"pretrain_{name}", _stage_settings(st),  # a stage outside the selection is rebuilt
                             after=tuple(f"pretrain_{s}" for s in st.reads if s in all_stages)))  # by _run_stage
        for task in o["tasks"]:
            for name, st in level.items():
                for seed in o["seeds"]:
                    c = _pt_finetune_config(task, st.mechanism, seed)
                    out.append(Point(file_name(task, f"pt-{name}", c),
                                     {"finetune": finetune_settings(task, c, model=name,
                                                                    train_limit=TRAIN_LIMITS[task])},
                                     after=(f"pretrain_{name}",)))
    return out


def _pt_settings_of(r: dict) -> dict:
    return _pretrain_settings_of(r) if r["kind"] == "dchi_pretrain" else {"finetune": finetune_settings_of(r)}


def run_or_read_stage(folder: Path, config, settings: dict, ctx: RunContext, *, model: str | Path | None,
                      init_head: Path | None = None) -> dict:
    """Pretrain ``config`` into ``folder`` (resuming its checkpoints), or read back its record when a run with
    these ``settings`` finished there. A lock keeps two workers from building one stage at once."""
    from ..io import exclusive_lock
    from ..training.mlm import Pretrainer

    folder.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(folder / ".lock"):
        done = folder / "pretrain.json"
        if done.exists() and _pretrain_settings_of(rec := json.loads(done.read_text())) == settings:
            return rec  # finished while this worker waited for the lock, or by an earlier run: nothing to redo
        log = (lambda m: __import__("sys").stderr.write(m + "\n")) if ctx.progress else (lambda m: None)
        return Pretrainer(config, folder, model=model, init_head=init_head, log=log,
                          device=ctx.device).run(resume=True)


def finetune_point(settings: dict, ctx: RunContext, *, stage: str | None, start_model: str | None,
                   build_stage: Callable[[], dict]) -> dict:
    """One fine-tuning run of ``settings``: of ``start_model`` when ``stage`` is None, else of the stage's encoder,
    built first by ``build_stage`` when its record is not here."""
    from ..training import private_finetune as pf

    c = pf.FinetuneConfig(**{k: settings[k] for k in asdict(pf.FinetuneConfig(mode="null"))})
    task, limit = settings["task"], settings["train_limit"]
    if stage is None:
        return finetune_run(task, c, model=start_model, train_limit=limit, tag="", ctx=ctx)
    if not (_stage_dir(ctx, stage) / "pretrain.json").exists():
        build_stage()
    rec = finetune_run(task, c, model=str(_stage_dir(ctx, stage) / "encoder"), train_limit=limit,
                       tag=f"pt-{stage}", ctx=ctx)
    return {**rec, "stage": stage_used(ctx, stage)}


def stage_used(ctx: RunContext, stage: str) -> dict:
    """What a fine-tuning run started from: the stage's masked-token accuracies as its folder records them, and
    ``rebuilt`` where they differ from the stage record beside the results (the stage was rerun from its settings
    and seed after its encoder was lost, and a rerun on another privnlu version or CPU is not bitwise the same)."""
    used = json.loads((_stage_dir(ctx, stage) / "pretrain.json").read_text())
    committed = ctx.out / f"pretrain_{stage}.json"
    rebuilt = committed.exists() and json.loads(committed.read_text()).get("evals") != used.get("evals")
    return {"name": stage, "evals": used.get("evals"), "rebuilt": bool(rebuilt)}


def _run_stage(o: dict, ctx: RunContext, name: str) -> dict:
    """Pretraining stage ``name`` into its hidden folder, after the stages it continues. A stage it reads whose
    record is here but whose models are not (they are not committed) is rerun from its settings and seed first;
    the runs that start from it say so (:func:`stage_used`), since the rerun need not equal the recorded stage."""
    st = stages(o["objectives"], tuple(CURVES), None)[name]  # also a stage the selection reads but does not hold
    for before in st.reads:
        if not (_stage_dir(ctx, before) / "pretrain.json").exists():
            _run_stage(o, ctx, before)
    model_dir = None if st.model is None else _stage_dir(ctx, st.model) / "encoder"
    head_file = None if st.head is None else _stage_dir(ctx, st.head[0]) / st.head[1]
    return run_or_read_stage(_stage_dir(ctx, name), _stage_config(st), _stage_settings(st), ctx, model=model_dir,
                             init_head=head_file)


def _pt_run(o: dict, point: Point, ctx: RunContext) -> dict:
    if point.name.startswith("pretrain_"):
        return _run_stage(o, ctx, point.name.removeprefix("pretrain_"))
    s = point.settings["finetune"]
    return finetune_point(s, ctx, stage=s["model"], start_model=None,
                          build_stage=lambda: _run_stage(o, ctx, s["model"]))


def check_objectives_and_tasks(o: dict) -> None:
    require(set(o["objectives"]) <= set(OBJECTIVES), f"--objectives are {', '.join(OBJECTIVES)}")
    require(set(o["tasks"]) <= set(TRAIN_LIMITS), f"--tasks are {', '.join(TRAIN_LIMITS)} (MRPC stands in for QQP)")


def _pt_check(o: dict) -> None:
    require(set(o["modes"]) <= set(CURVES), f"--modes are {', '.join(CURVES)} (the paper's Tables 6 and 7)")
    check_objectives_and_tasks(o)


register(Recipe(
    "qu2021-table6-7", PAPER, "table6-7",
    "Qu et al. Tables 6-7: vanilla, probability and denoising MLM pretraining on M_rep (Table 6) and M_txt "
    "(Table 7) input at eta 100, a learning curve of stages each continuing the one before (token: 1,000, 4,000, "
    "16,000 steps; text: 1,000, 3,000, 12,000), each encoder fine-tuned as in Table 4 on SST-2 and as in Table 5 "
    "on MRPC (standing in for QQP), seeds 0-2",
    {"tasks": ("sst2", "mrpc"), "objectives": OBJECTIVES, "modes": ("token", "text"), "max_steps": None,
     "seeds": (0, 1, 2)},
    _pt_points, _pt_run, _pt_settings_of, check=_pt_check))
