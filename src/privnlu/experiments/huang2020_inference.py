"""Recipe (beyond the paper, filed under TextHide): how a TextHide model should answer a query, measured.

Huang et al. (2020) do not describe inference; their reference code encodes each dev example with one random pool
mask, which is how privnlu's evaluation (every recorded dev score) is measured. ``privnlu predict`` instead
averages the head's class probabilities over the whole mask pool (deterministic: the expected prediction under the
uniform mask choice), and offers ``--samples N`` (``N`` fresh masks, ``N = 1`` the paper's stochastic inference).

For each (m, k) a frozen TextHide-intra run is trained and saved, then its dev set is predicted through
:func:`privnlu.model_folder.predict.load` (the path users take): with the pool average, with one random mask
``repeats`` times (accuracy of each, and the share of dev sentences whose label changes from one repetition to
the next), and with ``samples`` fresh masks averaged.
"""

from __future__ import annotations

import statistics

from .registry import Point, Recipe, RunContext, register

PAPER = "huang2020"
KEYS = ("task", "train_limit", "epochs", "batch_size", "mask_repeats", "samples", "seed")
#: the head's learning rate (Adam), as in the Table 1 recipes' frozen runs
LR = 1e-3


def _points(o: dict) -> list[Point]:
    from ..params import m_label

    return [Point(f"{o['task']}-intra-m{m_label(m)}-k{int(k)}",
                  {**{key: o[key] for key in KEYS}, "lr": LR, "m": m_label(m), "k": int(k)}) for m, k in o["grid_points"]]


def _settings(r: dict) -> dict:
    return r["settings"]


def _accuracy(rows: list[dict], gold: list[int]) -> float:
    return round(100.0 * sum(r["label_id"] == y for r, y in zip(rows, gold)) / len(gold), 2)


def _confidence(rows: list[dict]) -> float:
    """Mean probability of the predicted class."""
    return round(statistics.fmean(r["probability"] for r in rows), 4)


def _run(o: dict, point: Point, ctx: RunContext) -> dict:
    import shutil

    from ..data import metrics
    from ..params import parse_m
    from ..rng import SecretGenerator
    from ..schemes import create
    from ..training import TrainConfig
    from ..training.engine import RunSpec, prepare, train_run
    from ..model_folder.predict import load

    s = point.settings
    spec = RunSpec(task=s["task"], mode="frozen", train_limit=s["train_limit"], data_dir=ctx.data_dir,
                   cache_dir=ctx.cache_dir, scheme=create("texthide", m=parse_m(s["m"]), k=s["k"]),
                   train=TrainConfig(epochs=s["epochs"], batch_size=s["batch_size"], lr=s["lr"], seed=s["seed"]))
    prep = prepare(spec, progress=ctx.progress)
    run_dir = ctx.scratch.with_name(ctx.scratch.name.removesuffix(".part.json") + ".run")
    if run_dir.exists():  # a run interrupted before its model was saved: train again
        shutil.rmtree(run_dir)
    rec = train_run(spec, prep, run_dir=run_dir, progress=ctx.progress)
    split = prep.task.eval_splits[0]
    dev = prep.evals[split]
    gold = list(dev.labels)
    rng = SecretGenerator(s["seed"], warn=False)
    average = load(run_dir).predict(dev.texts_a)
    once = [load(run_dir, samples=1, rng=rng).predict(dev.texts_a) for _ in range(s["mask_repeats"])]
    many = load(run_dir, samples=s["samples"], rng=rng).predict(dev.texts_a)
    flips = [sum(a["label_id"] != b["label_id"] for a, b in zip(x, y)) / len(gold) for x, y in zip(once, once[1:])]
    one_mask = [_accuracy(rows, gold) for rows in once]
    majority = max(set(gold), key=gold.count)
    shutil.rmtree(run_dir)  # the key and model are scratch: the record keeps the measurements only
    return {
        "kind": "query_inference", "task": prep.task.name, "metric": prep.task.metric, "settings": s,
        "n_dev": len(gold), "recorded_dev_score": round(float(rec["score"]), 2),
        "chance_utility": round(metrics.compute(prep.task.metric, [majority] * len(gold), gold)["score"], 2),
        "pool_average": {"accuracy": _accuracy(average, gold), "confidence": _confidence(average)},
        "one_mask": {"accuracy": one_mask, "mean": round(statistics.fmean(one_mask), 2),
                     "sd": round(statistics.stdev(one_mask), 2),
                     "confidence": round(statistics.fmean(_confidence(rows) for rows in once), 4),
                     "label_changes": round(100.0 * statistics.fmean(flips), 2)},
        "samples": {"n": s["samples"], "accuracy": _accuracy(many, gold), "confidence": _confidence(many)},
        "seconds": rec["seconds"],
    }


register(Recipe(
    "huang2020-query-inference", PAPER, "query-inference",
    "Beyond the paper: a TextHide model's dev accuracy when each query gets one random pool mask (the paper's code, "
    "privnlu's recorded dev scores), the average over the whole pool (privnlu predict's default) or over a few fresh "
    "masks; frozen MiniLM, SST-2",
    {"task": "sst2", "grid_points": ((16.0, 4), (256.0, 4)), "train_limit": 2000, "epochs": 10, "batch_size": 64,
     "mask_repeats": 5, "samples": 32, "seed": 0},
    _points, _run, _settings))
