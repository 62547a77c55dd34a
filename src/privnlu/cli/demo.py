"""``privnlu demo``: a compact privacy-utility audit of every scheme on the packaged defaults (MiniLM, tweets)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from .common import add_recipe_args, say, warn_seed


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="every privatization scheme on packaged tweets: utility vs re-identification, with a report",
                       description="A compact `privnlu audit` on frozen MiniLM features of the packaged tweet-sentiment "
                                   "corpus: no privacy, TextHide intra/inter, DP instance encoding and the three d_chi "
                                   "mechanisms, each attacked with its strongest attack; the HTML report opens with the "
                                   "privacy-utility frontier. A rerun skips finished points.")
    p.add_argument("--out", default="runs/demo", help="output folder (default: runs/demo)")
    p.add_argument("--task", default="tweets", help="task (default: tweets, packaged)")
    p.add_argument("--model", help="a local Hugging Face model folder (default: packaged all-MiniLM-L6-v2)")
    add_recipe_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..audit import DEMO, run_audit
    from ..report import build_report

    warn_seed(args)
    t0 = time.time()
    out = Path(args.out)
    settings = replace(DEMO, task=args.task, model=args.model, epochs=args.epochs,
                       train_limit=args.train_limit or DEMO.train_limit, data_dir=args.data_dir, cache_dir=args.cache_dir,
                       seed=args.seed)
    run_audit(settings, out, progress=not args.quiet, log=say)
    page = build_report([out / "points"], out / "report", title=f"privnlu demo: which privatization for {args.task}, at what cost")
    say(f"demo finished in {time.time() - t0:.0f} s; report: {page.resolve()}")
    return 0
