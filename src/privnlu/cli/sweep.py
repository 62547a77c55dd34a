"""``privnlu sweep``: an m x k grid over cached features (TextHide paper, Figure 2)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import add_data_args, add_model_args, add_texthide_args, add_train_args, m_list, int_list, run_spec, say, warn_seed


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="train over an m x k grid from cached features",
                       description="Train one head per (m, k) point on cached representations. Each point's result is "
                                   "written atomically as it finishes; a rerun skips finished points (resume).")
    add_data_args(p)
    add_model_args(p)
    add_texthide_args(p, grid=True)
    add_train_args(p)
    p.add_argument("--ms", dest="m_grid", metavar="M,...", type=m_list, default="0,1,16,64,256,1024,inf",
                   help="pool sizes m, comma-separated (default: 0,1,16,64,256,1024,inf)")
    p.add_argument("--ks", dest="k_grid", metavar="K,...", type=int_list, default="1,2,4,8",
                   help="mixing sizes k, comma-separated (default: 1,2,4,8)")
    p.add_argument("--out", help="folder for the grid's results (default: runs/sweep/<task>)")
    p.add_argument("--force", action="store_true", help="recompute points that already have results (a point computed with other settings is refused without it)")
    p.set_defaults(func=run, mode="frozen")


def run(args: argparse.Namespace) -> int:
    from ..training.sweep import run_sweep

    warn_seed(args)
    if args.mode != "frozen":
        from ..errors import PrivnluError

        raise PrivnluError("sweep runs over cached features: use --mode frozen (or `privnlu train --mode joint` per point)")
    m_grid = args.m_grid if isinstance(args.m_grid, list) else m_list(args.m_grid)
    k_grid = args.k_grid if isinstance(args.k_grid, list) else int_list(args.k_grid)
    base = run_spec(args, scheme="none")
    out = Path(args.out) if args.out else Path("runs/sweep") / base.task
    summary = run_sweep(base, m_grid, k_grid, out, inter=args.inter, force=args.force, progress=not args.quiet,
                        refresh_cache=args.refresh_cache)
    say(f"sweep of {len(summary['points'])} points finished in {summary['seconds']:.0f} s; results in {out}")
    return 0
