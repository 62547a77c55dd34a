"""``privnlu demo``: a compact privacy-utility audit of every scheme on the packaged defaults (MiniLM, tweets)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from .common import say, warn_seed
from .options import add


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="every privatization scheme on packaged tweets: utility vs re-identification, with a "
                                    "report",
                       description="A compact `privnlu audit` on frozen MiniLM features of the packaged tweet-sentiment "
                                   "corpus: every scheme of the registry, each attacked with its strongest attack; the "
                                   "HTML report opens with the privacy-utility frontier. A rerun skips finished points.")
    add(p, "out", "task", "model", "epochs", "train_limit", "data_dir", "cache_dir", "seed", "force",
        out={"default": "runs/demo", "writes": "dir", "help": "output folder"},
        task={"default": "tweets", "help": "task (packaged tweets by default)", "group": ""},
        model={"group": ""}, train_limit={"group": ""}, data_dir={"group": ""}, cache_dir={"group": ""},
        epochs={"group": ""})
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..audit import DEMO
    from ..audit.run import run_audit
    from ..report import build_report

    warn_seed(args)
    t0 = time.time()
    out = Path(args.out)
    settings = replace(DEMO, task=args.task, model=args.model, epochs=args.epochs,
                       train_limit=args.train_limit or DEMO.train_limit, data_dir=args.data_dir, cache_dir=args.cache_dir,
                       seed=args.seed)
    run_audit(settings, out, resume=not args.force, force=args.force, progress=not args.quiet, log=say)
    page = build_report([out / "points"], out / "report", title=f"privnlu demo: which privatization for {args.task}, "
                                                               "at what cost")
    say(f"demo finished in {time.time() - t0:.0f} s; report: {page.resolve()}")
    return 0
