"""Recipes: TextHide's training artefacts (Huang, Song, Chen, Li, Arora; Findings of EMNLP 2020).

* Table 1: baseline vs TextHide-intra vs TextHide-inter, (m, k) = (256, 4), (16, 4) for RTE, on SST-2, CoLA,
  MRPC, STS-B and RTE;
* Figure 2: the m x k grid of TextHide-intra on SST-2 (one folder per mode: the frozen and fine-tuned panels);
* Table 6: TextHide-inter on SST-2 with several public corpora, beside intra (256, 4) and the baseline;
* Table 5: Table 1's three cells on one task (SST-2) with a second encoder family, fine-tuned jointly: the packaged
  all-mpnet-base-v2 in place of the paper's RoBERTa-base (``--model``; one folder per encoder).

Every run selects its hyperparameters on 10 % of train held out (:mod:`privnlu.training.selection`), as the
paper's Appendix B.3 does, and records its dev learning curve. TextHide-inter draws its public partners from a
corpus larger than the private training set (``mixed``: Wikipedia summaries, tweets, BBC News and QNLI dev
sentences), as the paper's appendix requires. A :class:`Scale` fixes the budget: ``quick`` (minutes, a smoke
test), ``cpu`` (what 2 CPU cores allow) and ``paper`` (the paper's data size, epochs and grid: a GPU run).
The paper's numbers are in :mod:`privnlu.paper_values.huang2020`; the report sets them beside ours.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

from ..errors import require
from ..io import repeat_name
from .registry import Point, Recipe, RunContext, register

if TYPE_CHECKING:
    from ..training.engine import RunSpec

PAPER = "huang2020"
TABLE1_TASKS = ("sst2", "cola", "mrpc", "stsb", "rte")
SWEEP_M = (0.0, 1.0, 16.0, 64.0, 256.0, 1024.0, float("inf"))
SWEEP_K = (1, 2, 4, 8)
TABLE6_CORPORA = ("wiki", "tweets", "bbc", "qnli-dev", "mixed")
DEFAULT_PUBLIC = "mixed"
VARIANTS = ("baseline", "intra", "inter")


@dataclass(frozen=True)
class Scale:
    """A run budget. ``lrs``: head learning rates tried (frozen mode); ``encoder_lrs``: encoder learning rates
    tried (joint mode; the head keeps ``head_lr``). ``min_texthide_steps``: TextHide runs get at least this many
    optimizer steps (more epochs on small sets): the paper notes that training with masks converges slower.
    ``min_baseline_steps``: the same floor for the baseline, so that a drop is not a budget effect (the epoch is
    chosen on held-out train, so a longer budget cannot hurt a run that plateaus early)."""

    name: str
    train_limit: int | None
    dev_limit: int | None
    epochs: int
    batch_size: int
    lrs: tuple[float, ...]
    encoder_lrs: tuple[float, ...]
    head_lr: float = 1e-3
    min_texthide_steps: int = 0
    min_baseline_steps: int = 0
    max_length: int = 128
    min_public: int = 10000


SCALES = {
    "quick": Scale("quick", 2000, 500, 3, 32, (1e-3,), (3e-5,), min_public=2500),
    # one public size for every task (25,000 > 1.25 x 20,000), so that its features are computed once
    "cpu": Scale("cpu", 20000, None, 20, 64, (1e-3, 3e-4), (3e-5,), min_texthide_steps=2000, min_baseline_steps=2000,
                 min_public=25000),
    # Appendix B.3: lr {5e-6, 1e-5, 2e-5, 3e-5, 5e-5}, batch {16, 32}, epochs up to 30 (we select the epoch on the
    # held-out curve of a 20-epoch run), dropout 0.1 (not searched here)
    "paper": Scale("paper", None, None, 20, 32, (1e-3,), (5e-6, 1e-5, 2e-5, 3e-5, 5e-5), min_texthide_steps=2000,
                   min_baseline_steps=2000),
}

#: the budget options every training recipe takes (None: the scale's)
BUDGET = {"scale": "cpu", "epochs": None, "batch_size": None, "lrs": None, "encoder_lrs": None, "train_limit": None}
#: run-spec fields that do not change a result (where files are, which device or precision computes them) or that
#: follow from other settings and the data (the public corpus size)
SPEC_IGNORED = ("cache_dir", "data_dir", "device", "encode_batch_size", "bf16", "public_size")


def scale(o: dict) -> Scale:
    """The options' scale, with --epochs, --batch-size, --lrs and --encoder-lrs overriding its budget."""
    require(o["scale"] in SCALES, f"unknown scale '{o['scale']}'; choose one of {', '.join(SCALES)}")
    over = {k: (tuple(o[k]) if isinstance(o[k], (list, tuple)) else o[k])
            for k in ("epochs", "lrs", "encoder_lrs", "batch_size") if o.get(k) is not None}
    return replace(SCALES[o["scale"]], **over)


def budget(sc: Scale) -> dict:
    """The budget as a record stores it (tuples as lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(sc).items()}


def base_spec(task: str, sc: Scale, o: dict) -> RunSpec:
    """The spec every run of a recipe starts from: the options' model, mode, data cap and seed, the scale's budget."""
    from ..training import TrainConfig
    from ..training.engine import RunSpec

    return RunSpec(task=task, model=o.get("model"), mode=o.get("mode", "frozen"),
                   train_limit=o.get("train_limit") or sc.train_limit, dev_limit=sc.dev_limit, max_length=sc.max_length,
                   train=TrainConfig(epochs=sc.epochs, batch_size=sc.batch_size, lr=sc.head_lr, seed=o.get("seed")))


def spec_settings(spec_json: dict, *, selected: bool) -> dict:
    """The settings of a run spec (as JSON) that define its result; ``selected``: without the learning rates and
    epochs that hyperparameter selection chooses (the budget states the grid they come from)."""
    from ..schemes.registry import record_name

    s = {k: v for k, v in spec_json.items() if k not in SPEC_IGNORED}
    s["scheme"] = record_name(s)
    if not s.get("inter"):
        s.pop("public", None)
    train = dict(s.pop("train"))
    if selected:
        s.pop("encoder_lr", None)
        train.pop("lr", None)
        train.pop("epochs", None)
    return {**s, "train": train}


def epochs_for(spec: RunSpec, n_fit: int, sc: Scale) -> int:
    """The scale's epochs, raised until the run reaches its floor of optimizer steps (``min_texthide_steps`` for
    a private run, ``min_baseline_steps`` for the baseline)."""
    floor = sc.min_baseline_steps if spec.variant == "baseline" else sc.min_texthide_steps
    if not floor:
        return sc.epochs
    steps = math.ceil(n_fit / sc.batch_size)
    return max(sc.epochs, math.ceil(floor / steps))


def candidates(spec: RunSpec, n_train: int, sc: Scale) -> list[RunSpec]:
    """The hyperparameter grid of one run (learning rates of the scale, epochs from :func:`epochs_for`)."""
    epochs = epochs_for(spec, int(n_train * 0.9), sc)
    if spec.mode == "joint":
        return [replace(spec, encoder_lr=lr, train=replace(spec.train, epochs=epochs)) for lr in sc.encoder_lrs]
    return [replace(spec, train=replace(spec.train, epochs=epochs, lr=lr)) for lr in sc.lrs]


def public_size(n_private: int, corpus: str, minimum: int = 10000) -> int:
    """1.25 times the private set, at least ``minimum`` sentences (the appendix: the public corpus must be larger
    than the private one), capped at the corpus (``qnli-dev`` has only 8,011 sentences)."""
    from ..data import load_public_corpus

    return min(len(load_public_corpus(corpus)), max(minimum, math.ceil(1.25 * n_private)))


def repeats(o: dict) -> range:
    first, last = o.get("repeats") or (1, 1)
    return range(first, last + 1)


# -- one selected run per point ---------------------------------------------------------------------------------

_PREPARED: dict[str, object] = {}
_ENCODERS: dict[tuple, object] = {}


def prepared(spec: RunSpec, ctx: RunContext):
    """The spec's data and representations, computed once per process (the encoder shared by its runs)."""
    import json

    from ..training.selection import prepare_head

    spec = replace(spec, data_dir=ctx.data_dir, cache_dir=ctx.cache_dir, device=ctx.device)
    key = json.dumps({k: v for k, v in spec.to_json().items() if k not in ("train", "scheme", "m", "k", "dp")},
                     sort_keys=True, default=str)
    if key not in _PREPARED:
        enc_key = (spec.model, spec.pooling, ctx.device)
        prep = prepare_head(spec, progress=ctx.progress, encoder=_ENCODERS.get(enc_key))
        _ENCODERS[enc_key] = prep.encoder
        _PREPARED.clear()  # one task's data at a time
        _PREPARED[key] = prep
    return spec, _PREPARED[key]


def _n_train(task: str, limit: int | None, data_dir: str | None) -> int:
    from ..data import get_task

    return len(get_task(task).load("train", data_dir).head(limit))


def sized(spec: RunSpec, sc: Scale, ctx: RunContext) -> tuple[RunSpec, int | None]:
    """The spec with its inter public corpus sized to the private data (and that size; None without inter)."""
    if not spec.to_json().get("inter"):  # the record's fields, not the spec's scheme internals
        return spec, None
    n_pub = public_size(_n_train(spec.task, spec.train_limit, ctx.data_dir), spec.public, sc.min_public)
    return replace(spec, public_size=n_pub), n_pub


def warm_features(specs: list[RunSpec], sc: Scale, ctx: RunContext) -> None:
    """Fill the feature cache for frozen-mode runs once, before worker processes start (each would compute them)."""
    for spec in specs:
        if spec.mode == "frozen":
            prepared(sized(spec, sc, ctx)[0], ctx)


def selected_run(spec: RunSpec, sc: Scale, group: str, ctx: RunContext) -> dict:
    """One run with hyperparameters selected on held-out train (its inter public corpus sized to the data)."""
    from ..training.selection import select_and_run

    spec, n_pub = sized(spec, sc, ctx)
    spec, prep = prepared(spec, ctx)
    return select_and_run(candidates(spec, len(prep.train), sc), prep, out=ctx.scratch, progress=ctx.progress,
                          group=group, extra={"scale": sc.name, "budget": budget(sc), "n_public": n_pub})


def train_points(specs: list[RunSpec], sc: Scale, o: dict) -> list[Point]:
    """One point per spec and repeat; the file is the run's label, its public corpus (inter, unless the default),
    its mode and the repeat."""
    out = []
    for spec in specs:
        inter = spec.to_json().get("inter")
        public = "" if not inter or spec.public == DEFAULT_PUBLIC else "-" + spec.public
        for r in repeats(o):
            out.append(Point(repeat_name(f"{spec.label}{public}-{spec.mode}", r),
                             {"spec": spec_settings(spec.to_json(), selected=True), "budget": budget(sc)}))
    return out


def selected_settings(rec: dict) -> dict:
    return {"spec": spec_settings(rec["spec"], selected=True), "budget": rec["budget"]}


def _training_recipe(name: str, artefact: str, title: str, defaults: dict, specs, group: str, check=None,
                     variant=None) -> Recipe:
    """A recipe of selected training runs: ``specs(o)`` lists its runs; its folder's suffix is ``variant(o)``
    (default: the mode)."""

    def points(o: dict) -> list[Point]:
        return train_points(specs(o), scale(o), o)

    def run(o: dict, point: Point, ctx: RunContext) -> dict:
        sc = scale(o)
        spec = next(s for s in specs(o) if {"spec": spec_settings(s.to_json(), selected=True), "budget": budget(sc)}
                    == point.settings)
        return selected_run(spec, sc, group, ctx)

    return register(Recipe(name, PAPER, artefact, title, defaults, points, run, selected_settings,
                           variant=variant or (lambda o: o["mode"]), check=check or (lambda o: None),
                           warm=lambda o, ctx: warm_features(specs(o), scale(o), ctx)))


def _check_public(corpora: tuple[str, ...]) -> None:
    from pathlib import Path

    from ..data.public import PUBLIC_NAMES

    for c in corpora:
        require(c in PUBLIC_NAMES or Path(c).is_file(),
                f"unknown public corpus '{c}': use {', '.join(PUBLIC_NAMES)} or a text file, one sentence per line")


# -- Table 1 ---------------------------------------------------------------------------------------------------------

def _table1_specs(o: dict) -> list[RunSpec]:
    from ..paper_values.huang2020 import TABLE1_DEFAULT_POINT, TABLE1_POINT
    from ..training.engine import with_scheme

    sc, out = scale(o), []
    for task in o["tasks"]:
        spec0 = base_spec(task, sc, o)
        m, k = TABLE1_POINT.get(task, TABLE1_DEFAULT_POINT)
        runs = {"baseline": spec0, "intra": with_scheme(spec0, m=m, k=k),
                "inter": replace(with_scheme(spec0, m=m, k=k, inter=True), public=o["public"][0])}
        out += [runs[v] for v in o["variants"]]
    return out


def _variants_check(recipe: str):
    """The check of a recipe that runs some of baseline, intra and inter with one public corpus."""

    def check(o: dict) -> None:
        require(set(o["variants"]) <= set(VARIANTS),
                f"--variants are {', '.join(VARIANTS)}, not {','.join(o['variants'])}")
        require(len(o["public"]) == 1, f"{recipe} takes one --public corpus")
        _check_public(o["public"])

    return check


_table1_check = _variants_check("huang2020-table1")


_training_recipe(
    "huang2020-table1", "table1",
    "TextHide Table 1: baseline vs TextHide-intra vs TextHide-inter on SST-2, CoLA, MRPC, STS-B and RTE, (m, k) = "
    "(256, 4), (16, 4) for RTE, hyperparameters selected on 10 % of train",
    {"tasks": TABLE1_TASKS, "variants": VARIANTS, "mode": "frozen", **BUDGET, "public": (DEFAULT_PUBLIC,),
     "model": None, "seed": None, "repeats": (1, 1)},
    _table1_specs, "table1", _table1_check)


# -- Table 5 ---------------------------------------------------------------------------------------------------------

#: Table 5's encoder: the paper's second family is RoBERTa-base; ours is the packaged all-mpnet-base-v2
TABLE5_MODEL = "all-mpnet-base-v2"
#: the short folder tag of an encoder (``results/huang2020/table5-<tag>``); None is the packaged MiniLM
MODEL_TAGS = {None: "minilm", "all-MiniLM-L6-v2": "minilm", "all-mpnet-base-v2": "mpnet"}


def model_tag(model: str | None) -> str:
    """``mpnet``, ``minilm`` or the last component of a folder's name."""
    from pathlib import Path

    from ..io import safe_filename

    return MODEL_TAGS.get(model) or safe_filename(Path(str(model)).name)


def table5_variant(o: dict) -> str:
    """The folder suffix: the encoder's tag, and the mode where it is not the paper's joint fine-tuning."""
    return model_tag(o["model"]) + ("" if o["mode"] == "joint" else f"-{o['mode']}")


def _table5_specs(o: dict) -> list[RunSpec]:
    return _table1_specs({**o, "tasks": (o["task"],)})


_table5_check = _variants_check("huang2020-table5")


_training_recipe(
    "huang2020-table5", "table5",
    "TextHide Table 5: Table 1's baseline vs intra vs inter on SST-2 with a second encoder family (the paper: "
    "RoBERTa-base; here the packaged all-mpnet-base-v2, 12 layers, d = 768), fine-tuned jointly (the paper's "
    "setting) or, with --mode frozen, on cached representations; one folder per --model and mode (table5-mpnet, "
    "table5-minilm, table5-mpnet-frozen)",
    {"task": "sst2", "variants": VARIANTS, "mode": "joint", **{**BUDGET, "scale": "quick"},
     "public": (DEFAULT_PUBLIC,), "model": TABLE5_MODEL, "seed": None, "repeats": (1, 1)},
    _table5_specs, "table5", _table5_check, variant=table5_variant)


# -- Figure 2 --------------------------------------------------------------------------------------------------------

def _figure2_specs(o: dict) -> list[RunSpec]:
    from ..training.engine import with_scheme

    spec0 = base_spec(o["task"], scale(o), o)
    grid = o["grid_points"] or [(m, k) for m in o["m_grid"] for k in o["ks"]]
    return [with_scheme(spec0, m=m, k=k) for m, k in grid]


_training_recipe(
    "huang2020-figure2", "figure2",
    "TextHide Figure 2: TextHide-intra over the m x k grid on SST-2 (one folder per --mode: the frozen and the "
    "fine-tuned panel)",
    {"task": "sst2", "m_grid": SWEEP_M, "ks": SWEEP_K, "grid_points": None, "mode": "frozen", **BUDGET,
     "model": None, "seed": None, "repeats": (1, 1)},
    _figure2_specs, "figure2",
    lambda o: require(all(k >= 1 for k in o["ks"]) and all(k >= 1 for _, k in o["grid_points"] or ()),
                      "huang2020-figure2 mixes k >= 1 representations"))


# -- Table 6 ---------------------------------------------------------------------------------------------------------

def _table6_specs(o: dict) -> list[RunSpec]:
    from ..training.engine import with_scheme

    spec0 = base_spec(o["task"], scale(o), o)
    inter = with_scheme(spec0, m=256, k=4, inter=True)
    return [spec0, with_scheme(spec0, m=256, k=4), *[replace(inter, public=c) for c in o["public"]]]


_training_recipe(
    "huang2020-table6", "table6",
    "TextHide Table 6: SST-2, TextHide-inter (256, 4) with each public corpus (wiki, tweets, bbc, qnli-dev, mixed), "
    "beside intra (256, 4) and the baseline",
    {"task": "sst2", "public": TABLE6_CORPORA, "mode": "frozen", **BUDGET, "model": None, "seed": None,
     "repeats": (1, 1)},
    _table6_specs, "table6", lambda o: _check_public(o["public"]))
