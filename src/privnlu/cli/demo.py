"""``privnlu demo``: the main job on the embedded defaults (MiniLM, tweet sentiment)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..experiments.demo import run_demo
from .common import add_recipe_args, positive_int, say, warn_seed


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="baseline vs TextHide-intra vs TextHide-inter on the packaged defaults, with a report",
                       description="Train the baseline, TextHide-intra (256, 4) and TextHide-inter (256, 4) on frozen "
                                   "MiniLM features of the packaged tweet-sentiment corpus and write an HTML report.")
    p.add_argument("--out", default="runs/demo", help="output folder (default: runs/demo)")
    p.add_argument("--task", default="tweets", help="task (default: tweets, packaged)")
    p.add_argument("--model", help="a local Hugging Face model folder (default: packaged all-MiniLM-L6-v2)")
    p.add_argument("--public-size", type=positive_int, default=10000, help="public Wikipedia sentences for inter (default: 10000)")
    add_recipe_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    warn_seed(args)
    page = run_demo(Path(args.out), task=args.task, model=args.model, epochs=args.epochs, train_limit=args.train_limit,
                    public_size=args.public_size, data_dir=args.data_dir, cache_dir=args.cache_dir, seed=args.seed,
                    progress=not args.quiet)
    say(f"report: {page.resolve()}")
    return 0
