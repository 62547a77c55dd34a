"""Hyperparameter selection on 10 % of the training set, held out (Huang et al. 2020, Appendix B.3).

The paper chose learning rate, epochs, batch size and dropout "based on the validation performance (10% from the
training set)", never on dev. Here each candidate trains on the other 90 % and is evaluated after every epoch on
the held-out 10 % and on dev; the (candidate, epoch) with the best held-out score is chosen and its dev score,
at that epoch, is reported. Dev plays no part in the choice; its per-epoch scores are the learning curve the
report draws. (The chosen model is not retrained on 100 % of train: docs/design/results-and-reproducibility.md.)
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..io import read_json, write_json_atomic
from ..schemas import shareable
from .engine import Prepared, RunSpec, train_run

HOLDOUT_FRACTION = 0.1
HOLDOUT_SEED = 20201116  # public; fixes which 10 % is held out
HOLDOUT = "holdout"


def holdout_split(prep: Prepared, fraction: float = HOLDOUT_FRACTION) -> Prepared:
    """``prep`` with 90 % of train kept for fitting and the other 10 % added as the eval set ``holdout``
    (after the task's own eval splits, so that a record's ``score`` stays the dev score)."""
    n = len(prep.train)
    order = np.random.default_rng(HOLDOUT_SEED).permutation(n)
    n_held = max(1, int(round(n * fraction)))
    held, fit = sorted(order[:n_held].tolist()), sorted(order[n_held:].tolist())
    held_ds = replace(prep.train.subset(held), split=HOLDOUT)
    eval_x = dict(prep.eval_x)
    train_x = prep.train_x
    if train_x is not None:
        eval_x[HOLDOUT] = train_x[held]
        train_x = train_x[fit]
    return replace(prep, train=prep.train.subset(fit), train_x=train_x, evals={**prep.evals, HOLDOUT: held_ds},
                   eval_x=eval_x)


def curve(rec: dict, split: str) -> list[float]:
    """Per-epoch scores of one eval split from a run's history."""
    return [h["eval"][split]["score"] for h in rec["history"]]


def select_and_run(candidates: list[RunSpec], prep: Prepared, *, out: Path | None = None, progress: bool = True,
                   group: str = "train", extra: dict | None = None) -> dict:
    """Train every candidate spec on 90 % of train; return (and write to ``out``) the record of the chosen one.

    Its ``score`` is the dev score at the epoch of the best held-out score (``selection`` says which candidate and
    epoch, with every candidate's held-out curve); ``score_last_epoch`` and ``dev_curve`` keep the rest.
    """
    split = holdout_split(prep)
    dev = prep.task.eval_splits[0]
    best: tuple[float, int, dict] | None = None
    tried = []
    for i, spec in enumerate(candidates):
        rec = _candidate(spec, split, out.parent / f".{out.stem}.c{i}.json" if out is not None else None,
                         progress=progress, group=group)
        held = curve(rec, HOLDOUT)
        epoch = int(np.argmax(held))
        tried.append({"lr": spec.train.lr, "encoder_lr": spec.encoder_lr, "epochs": spec.train.epochs,
                      "dropout": spec.train.dropout, "batch_size": spec.train.batch_size, "holdout_curve": held,
                      "best_epoch": epoch + 1, "best_holdout": held[epoch]})
        if best is None or held[epoch] > best[0]:
            best = (held[epoch], epoch, rec)
    assert best is not None
    _, epoch, rec = best
    dev_curve = curve(rec, dev)
    rec.update({
        "score_last_epoch": rec["score"],
        "score": dev_curve[epoch],
        "dev_curve": dev_curve,
        "n_train": len(prep.train),
        "n_fit": len(split.train),
        "selection": {"on": f"{HOLDOUT_FRACTION:.0%} of train held out (seed {HOLDOUT_SEED}), not dev",
                      "chosen_epoch": epoch + 1, "candidates": tried},
        "steps": (epoch + 1) * -(-len(split.train) // rec["spec"]["train"]["batch_size"]),
        "majority": majority(prep),
        **(extra or {}),
    })
    if out is not None:
        write_json_atomic(out, rec)
        for i in range(len(candidates)):
            out.parent.joinpath(f".{out.stem}.c{i}.json").unlink(missing_ok=True)
    return rec


def _candidate(spec: RunSpec, split: Prepared, done: Path | None, *, progress: bool, group: str) -> dict:
    """One candidate's run; with ``done`` (a hidden file beside the recipe's output) a finished candidate is read
    back and an unfinished one resumes from its per-epoch checkpoint (``.{done.stem}.ckpt``), so that an
    interrupted selection loses at most one epoch."""
    if done is not None and done.exists():
        rec = read_json(done)
        if rec.get("spec") == json.loads(json.dumps(shareable(spec.to_json(), done.parent))):
            return rec
    return train_run(spec, split, out=done, progress=progress, group=group)


def majority(prep: Prepared) -> dict:
    """The dev score of predicting train's most frequent label (its mean for regression): the floor a table must
    show beside a score (MRPC's F1 of "always paraphrase" is 81.2, CoLA's accuracy of "always acceptable" 69.1)."""
    from ..data.metrics import majority as majority_score

    dev = prep.evals[prep.task.eval_splits[0]]
    return majority_score(prep.task.metric, prep.train.labels, dev.labels, regression=prep.task.is_regression)


#: frozen-mode runs with a smaller ``train_limit`` read the first rows of the features cached at this limit
FEATURE_CACHE_LIMIT = 20000


def prepare_head(spec, *, progress: bool = True, encoder=None) -> Prepared:
    """:func:`~.pipeline.prepare`, but in frozen mode a ``train_limit`` below :data:`FEATURE_CACHE_LIMIT` takes the
    first rows of the cached ``FEATURE_CACHE_LIMIT``-example features (the same examples, computed once)."""
    from .engine import prepare

    n = spec.train_limit
    if spec.mode != "frozen" or n is None or n >= FEATURE_CACHE_LIMIT:
        return prepare(spec, progress=progress, encoder=encoder)
    prep = prepare(replace(spec, train_limit=FEATURE_CACHE_LIMIT), progress=progress, encoder=encoder)
    return replace(prep, train=prep.train.head(n), train_x=prep.train_x[:n])
