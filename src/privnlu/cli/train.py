"""``privnlu train``: one training run under any privacy scheme, frozen or joint."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

from .common import DATA, ENCODER, TRAINING, run_spec, say, scheme_from_args, warn_seed
from .options import add, scheme_options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a model on (privatized) data",
                       description="Train a head (frozen encoder) or the encoder and head jointly under a privacy "
                                   "scheme. Writes <out>/result.json atomically, the key (if the scheme has one), "
                                   "and the model in the Hugging Face layout with a model card.")
    add(p, *DATA, *ENCODER, *scheme_options(), "public", "public_size", *TRAINING, "out", "resume", "force", "ledger",
        task={"required": True},
        ledger={"help": "the owner's privacy ledger: the trained model is a release of the training set, refused "
                        "before any work if over the budget, recorded once written (DP-SGD with its accounted "
                        "(epsilon, delta); other schemes with no formal guarantee)", "group": "privacy ledger"}, out={"help": "run folder (default: runs/train/<label>)", "writes": "dir",
                                      "check": "runs/train"},
        force={"help": "replace an existing run folder's results, checkpoint and key file (without it, privnlu "
                       "refuses a folder that holds a run)"})
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..training.run_folder import check_run_dir

    warn_seed(args)
    scheme = scheme_from_args(args)
    run_dir = Path(args.out) if args.out else Path("runs/train") / f"{args.task}-{scheme.label}"  # RunSpec.label
    check_run_dir(run_dir, resume=args.resume, overwrite=args.force)  # before any data, encoder or engine is loaded
    from ..training.engine import train

    spec = run_spec(args, scheme=scheme)
    rec = train(spec, run_dir, resume=args.resume, overwrite=args.force, refresh_cache=args.refresh_cache,
                progress=not args.quiet, log=say, ledger=args.ledger)
    split = next(iter(rec["eval"]))
    say(f"{rec['label']}: {rec['metric']} score {rec['score']:.2f} on {split} (best epoch {rec['best_score']:.2f}); "
        f"results in {run_dir / 'result.json'}, model and card in {run_dir / 'model'} (apply it with "
        f"`privnlu predict --run {run_dir}`)")
    warning = no_utility_warning(rec, split, lambda: majority_score(spec, rec["metric"], split))
    if warning:
        say(warning)
    return 0


def no_utility_warning(rec: dict, split: str, majority: Callable[[], float | None]) -> str | None:
    """The run's closing warning where the headline score's 95 % interval reaches the majority class (the score
    itself where no interval was measured); ``majority``: the majority-class score where the record lacks it."""
    from ..model_folder.card import score_ci

    maj = (rec.get("majority") or {}).get("score")
    maj = majority() if maj is None else maj
    ci = score_ci(rec)
    if maj is None or (ci[0] if ci is not None else rec["score"]) > maj:
        return None
    where = (f"the {split} score {rec['score']:.2f} (95 % CI {ci[0]:.2f} to {ci[1]:.2f}) reaches" if ci is not None
             else f"{rec['score']:.2f} is at or below")
    return (f"WARNING: no useful utility: {where} always predicting the majority class ({maj:.2f}): the model may "
            "have learned nothing" + ("; a larger epsilon, more data or more epochs may help" if rec.get("dp") else ""))


def majority_score(spec, metric: str, split: str) -> float | None:
    """The ``split`` score of always predicting the training set's most frequent label (None for regression)."""
    from ..data import get_task
    from ..data.metrics import majority

    task = get_task(spec.task)
    if task.is_regression:
        return None
    train, dev = task.load("train", spec.data_dir).labels, task.load(split, spec.data_dir).labels
    return majority(metric, train[: spec.train_limit], dev[: spec.dev_limit])["score"]
