"""Recipe: TextHide (Huang, Song, Chen, Li, Arora; Findings of EMNLP 2020).

* Table 1: baseline vs TextHide-intra vs TextHide-inter, (m, k) = (256, 4), (16, 4) for RTE, on SST-2, CoLA,
  MRPC, STS-B and RTE (:func:`table1`);
* Figure 2: the m x k grid on SST-2, frozen and fine-tuned panels (:func:`figure2`);
* Table 6: TextHide-inter on SST-2 with several public corpora (:func:`table6`).

Every run selects its hyperparameters on 10 % of train held out (:mod:`.selection`), as the paper's Appendix B.3
does, and records its dev learning curve. TextHide-inter draws its public partners from a corpus larger than the
private training set (``mixed``: Wikipedia summaries, tweets, BBC News and QNLI dev sentences), as the paper's
appendix requires. A :class:`Scale` fixes the budget: ``quick`` (minutes, a smoke test), ``cpu`` (what 2 CPU
cores allow) and ``paper`` (the paper's data size, epochs and grid: a GPU run, ``--device cuda``). The paper's
numbers are in :mod:`privnlu.paper_values.huang2020`; the report sets them beside ours.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path, PurePath

from ..data import load_public_corpus
from ..errors import require, require_choice
from ..io import read_json, write_json_atomic
from ..paper_values.huang2020 import TABLE1_DEFAULT_POINT, TABLE1_POINT
from ..training import TrainConfig
from ..training.engine import RunSpec, with_scheme
from ..training.selection import prepare_head as prepare
from ..training.selection import select_and_run

TABLE1_TASKS = ("sst2", "cola", "mrpc", "stsb", "rte")
SWEEP_M = (0, 1, 16, 64, 256, 1024, float("inf"))
SWEEP_K = (1, 2, 4, 8)
TABLE6_CORPORA = ("wiki", "tweets", "bbc", "qnli-dev", "mixed")
DEFAULT_PUBLIC = "mixed"


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


def scale(name: str | Scale) -> Scale:
    """A scale by name (or a :class:`Scale` itself, e.g. one with other epochs)."""
    if isinstance(name, Scale):
        return name
    require_choice("scale", name, tuple(SCALES))
    return SCALES[name]


def base_spec(task: str, sc: Scale, *, mode: str = "frozen", base: RunSpec | None = None) -> RunSpec:
    """The spec every run of a recipe starts from: ``base``'s data paths, device and seed, the scale's budget."""
    seed = base.train.seed if base is not None else None
    spec = base or RunSpec(task=task)
    limit = base.train_limit if base is not None and base.train_limit else sc.train_limit
    return replace(spec, task=task, mode=mode, train_limit=limit, dev_limit=sc.dev_limit, max_length=sc.max_length,
                   train=TrainConfig(epochs=sc.epochs, batch_size=sc.batch_size, lr=sc.head_lr, seed=seed))


def epochs_for(spec: RunSpec, n_fit: int, sc: Scale) -> int:
    """The scale's epochs, raised until the run reaches its floor of optimizer steps (``min_texthide_steps`` for
    a private run, ``min_baseline_steps`` for the baseline)."""
    floor = sc.min_baseline_steps if spec.scheme.release == "none" else sc.min_texthide_steps
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
    return min(len(load_public_corpus(corpus)), max(minimum, math.ceil(1.25 * n_private)))


def json_safe(d: dict) -> dict:
    """Tuples as lists, so that a budget compares equal to itself read back from JSON."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def run_point(spec: RunSpec, prep, out: Path, sc: Scale, *, group: str, progress: bool, extra: dict | None = None) -> dict:
    """One selected run, resumable: a results JSON already under ``out`` with the same spec is read back."""
    public = "" if spec.public == DEFAULT_PUBLIC or not spec.inter else "-" + PurePath(spec.public).stem
    path = out / f"{spec.label}{public}-{spec.mode}.json"
    budget = json_safe(asdict(sc))
    if path.exists():
        rec = read_json(path)
        if rec.get("spec", {}).get("train_limit") == spec.train_limit and rec.get("budget") == budget:
            return _join_group(rec, group, path)
    rec = select_and_run(candidates(spec, len(prep.train), sc), prep, out=path, progress=progress, group=group,
                         extra={"scale": sc.name, "budget": budget, **(extra or {})})
    if progress:
        print(f"  {path.stem:>50s}  {rec['metric']} {rec['score']:.2f} (epoch {rec['selection']['chosen_epoch']})",
              flush=True)
    return rec


def _join_group(rec: dict, group: str, path: Path) -> dict:
    """A finished run that another recipe also needs (Figure 2 and Table 6 share the baseline and (256, 4) intra
    runs in one folder) is listed under both: ``groups`` names every recipe the run belongs to."""
    groups = rec.get("groups") or [rec.get("group")]
    if group not in groups:
        rec["groups"] = [*groups, group]
        write_json_atomic(path, rec)
    return rec


def table1(out: Path, *, tasks: tuple[str, ...] = TABLE1_TASKS, base: RunSpec | None = None, progress: bool = True,
           scale_name: str | Scale = "cpu", mode: str = "frozen", public: str = DEFAULT_PUBLIC,
           variants: tuple[str, ...] = ("baseline", "intra", "inter")) -> list[dict]:
    """Baseline, intra and inter (or the given ``variants``) for every task; one JSON per run under ``out``."""
    sc = scale(scale_name)
    require(set(variants) <= {"baseline", "intra", "inter"}, f"variants are baseline, intra, inter, not {variants}")
    records = []
    for task in tasks:
        spec0 = base_spec(task, sc, mode=mode, base=base)
        m, k = TABLE1_POINT.get(task, TABLE1_DEFAULT_POINT)
        prep = prepare(spec0, progress=progress)
        n_pub = public_size(len(prep.train), public, sc.min_public)
        inter = replace(with_scheme(spec0, m=m, k=k, inter=True), public=public, public_size=n_pub)
        runs = {"baseline": (spec0, prep), "intra": (with_scheme(spec0, m=m, k=k), prep)}
        if "inter" in variants:
            runs["inter"] = (inter, prepare(inter, progress=progress, encoder=prep.encoder))
        for spec, p in (runs[v] for v in variants):
            records.append(run_point(spec, p, out, sc, group="table1", progress=progress,
                                     extra={"n_public": n_pub if spec.inter else None}))
    return records


def figure2(out: Path, *, task: str = "sst2", base: RunSpec | None = None, progress: bool = True, scale_name: str | Scale = "cpu",
            mode: str = "frozen", ms: tuple[float, ...] = SWEEP_M, ks: tuple[int, ...] = SWEEP_K) -> list[dict]:
    """The m x k grid of TextHide-intra; one panel per mode (run the recipe once per ``mode``)."""
    sc = scale(scale_name)
    spec0 = base_spec(task, sc, mode=mode, base=base)
    prep = prepare(spec0, progress=progress)
    return [run_point(with_scheme(spec0, m=m, k=k), prep, out, sc, group="figure2", progress=progress)
            for m in ms for k in ks]


def table6(out: Path, *, base: RunSpec | None = None, progress: bool = True, scale_name: str | Scale = "cpu",
           mode: str = "frozen", corpora: tuple[str, ...] = TABLE6_CORPORA) -> list[dict]:
    """SST-2, TextHide-inter (256, 4) with each public corpus, beside intra (256, 4) and the baseline."""
    sc = scale(scale_name)
    spec0 = base_spec("sst2", sc, mode=mode, base=base)
    prep = prepare(spec0, progress=progress)
    records = [run_point(s, prep, out, sc, group="table6", progress=progress)
               for s in (spec0, with_scheme(spec0, m=256, k=4))]
    for corpus in corpora:
        n_pub = public_size(len(prep.train), corpus, sc.min_public)
        spec = replace(with_scheme(spec0, m=256, k=4, inter=True), public=corpus, public_size=n_pub)
        records.append(run_point(spec, prepare(spec, progress=progress, encoder=prep.encoder), out, sc, group="table6",
                                 progress=progress, extra={"n_public": n_pub}))
    return records
