"""``privnlu train``: one training run (baseline or TextHide), frozen or joint."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import PrivnluError
from .common import add_data_args, add_model_args, add_texthide_args, add_train_args, run_spec, say, warn_seed


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a model on (privatized) data",
                       description="Train a head (frozen encoder) or the encoder and head jointly, without privacy "
                                   "or with (m, k)-TextHide. Writes <out>/result.json atomically.")
    add_data_args(p)
    add_model_args(p)
    add_texthide_args(p)
    add_train_args(p)
    p.add_argument("--out", help="run folder (default: runs/train/<label>)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run from its last checkpoint")
    p.add_argument("--overwrite", "--force", dest="overwrite", action="store_true",
                   help="replace an existing run folder's results, checkpoint and key file (without it, privnlu "
                        "refuses a folder that holds a run)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..training.engine import prepare, train_run

    warn_seed(args)
    spec = run_spec(args)
    if spec.dp is not None and spec.mode == "joint":
        from ..models.card import JOINT_DP_CAVEAT

        say(f"warning: --scheme dp with --mode joint gives no DP guarantee: {JOINT_DP_CAVEAT}; use --mode frozen "
            "(or an encoder fine-tuned on public data) for a release that is DP")
    run_dir = Path(args.out) if args.out else Path("runs/train") / spec.label
    check_run_dir(run_dir, resume=args.resume, overwrite=args.overwrite)
    prep = prepare(spec, progress=not args.quiet, refresh_cache=args.refresh_cache)
    rec = train_run(spec, prep, out=run_dir / "result.json", run_dir=run_dir, resume=args.resume, progress=not args.quiet)
    split = next(iter(rec["eval"]))
    say(f"{rec['label']}: {prep.task.metric} score {rec['score']:.2f} on {split} "
        f"(best epoch {rec['best_score']:.2f}); results in {run_dir / 'result.json'}, model and card in "
        f"{run_dir / 'model'} (apply it with `privnlu predict --run {run_dir}`)")
    return 0


#: the files of a run folder; a folder holding any of them holds a run
RUN_FILES = ("result.json", "checkpoint.pt", "key.pt", "model")


def check_run_dir(run_dir: Path, *, resume: bool, overwrite: bool) -> None:
    """Refuse to replace an earlier run (its result, checkpoint and key) unless --resume or --overwrite says so."""
    found = [f for f in RUN_FILES if (run_dir / f).exists()]
    if resume and overwrite:
        raise PrivnluError("--resume continues the run in the folder, --overwrite replaces it: give one of them")
    if found and not (resume or overwrite):
        raise PrivnluError(f"{run_dir} already holds a run ({', '.join(found)}): continue it with --resume, replace it "
                           "(key file included) with --overwrite, or choose another --out")
