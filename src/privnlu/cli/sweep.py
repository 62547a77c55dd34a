"""``privnlu sweep``: an m x k grid over cached features (TextHide paper, Figure 2)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..params import Option, Range, int_list, m_list
from .common import DATA, ENCODER, TRAINING, run_spec, say, warn_seed
from .options import add


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="train over an m x k grid from cached features",
                       description="Train one head per (m, k) point of TextHide on cached representations. Each "
                                   "point's result is written atomically as it finishes; a rerun skips finished "
                                   "points (resume).")
    add(p, *DATA, *ENCODER,
        Option("m_grid", "--ms", "pool sizes m, comma-separated", m_list, default="0,1,16,64,256,1024,inf",
               range=Range(lo=0, integer=True, inf_ok=True, items=True), metavar="M,..."),
        Option("k_grid", "--ks", "mixing sizes k, comma-separated", int_list, default="1,2,4,8",
               range=Range(lo=1, integer=True, items=True), metavar="K,..."),
        Option("inter", "--inter", "TextHide-inter: floor(k/2) components from a public corpus", kind="flag"),
        "public", "public_size", *[t for t in TRAINING if t != "mode"], "out", "force", task={"required": True},
        out={"help": "folder for the grid's results (default: runs/sweep/<task>)", "writes": "dir",
             "check": "runs/sweep"},
        force={"help": "recompute points that already have results (a point computed with other settings is "
                       "refused without it)"})
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..schemes import NoPrivacy
    from ..training.sweep import run_sweep

    warn_seed(args)
    m_grid = args.m_grid if isinstance(args.m_grid, list) else m_list(args.m_grid)
    k_grid = args.k_grid if isinstance(args.k_grid, list) else int_list(args.k_grid)
    base = run_spec(args, scheme=NoPrivacy(), mode="frozen")
    out = Path(args.out) if args.out else Path("runs/sweep") / base.task
    summary = run_sweep(base, m_grid, k_grid, out, inter=args.inter, force=args.force, progress=not args.quiet,
                        refresh_cache=args.refresh_cache)
    say(f"sweep of {len(summary['points'])} points finished in {summary['seconds']:.0f} s; results in {out}")
    return 0
