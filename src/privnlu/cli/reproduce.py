"""``privnlu reproduce <recipe>``: run a paper's experiment recipe end to end."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..experiments import huang2020, xie2021, xie2022
from ..experiments.pipeline import RunSpec
from ..training import TrainConfig
from .common import add_recipe_args, say, warn_seed

#: recipe name -> (function(out, base, progress), help). Later papers add their recipes here.
RECIPES = {
    "huang2020-table1": (lambda out, base, tasks, progress: huang2020.table1(out, tasks=tasks or huang2020.TABLE1_TASKS, base=base, progress=progress),
                         "TextHide Table 1: baseline vs intra vs inter on SST-2, CoLA, MRPC, RTE, STS-B and tweets"),
    "huang2020-figure2": (lambda out, base, tasks, progress: huang2020.figure2(out, task=tasks[0] if tasks else "sst2", base=base, progress=progress),
                          "TextHide Figure 2: the m x k sweep on SST-2"),
    "xie2021-table1": (lambda out, base, tasks, progress: xie2021.table1(out, tasks=tasks or xie2021.TASKS, base=base, progress=progress),
                       "Xie & Hong 2021 Table 1: reconstruction attack, k in {1,2,4,6}, m = 1, 100 x 50 encodings, CoLA and SST-2"),
    "xie2021-figure1": (lambda out, base, tasks, progress: xie2021.figure1(out, tasks=tasks or xie2021.TASKS, base=base, progress=progress),
                        "Xie & Hong 2021 Figure 1: reconstruction attack, m in {1,...,4096}, k = 4"),
    "xie2022-figure2-attack": (lambda out, base, tasks, progress: xie2022.figure2(out, tasks=tasks or ("cola",), base=base, progress=progress),
                               "Xie & Hong 2022 Figure 2: reconstruction attack vs epsilon on DP TextHide (16, 4), both calibrations"),
    "xie2022-figure1": (lambda out, base, tasks, progress: xie2022.figure1(out, tasks=tasks or xie2022.FIGURE1_TASKS, base=base, progress=progress),
                        "DP instance encoding Figure 1: utility vs epsilon (Laplace, Gaussian; correct and paper calibration) "
                        "on SST-2 and CoLA, beside TextHide (16, 4) and the baseline"),
    "xie2022-figure1-clean-queries": (
        lambda out, base, tasks, progress: xie2022.figure1(out, tasks=tasks or xie2022.FIGURE1_TASKS, base=base, progress=progress,
                                                           epsilons=xie2022.CLEAN_QUERY_EPSILONS, noisy_queries=False),
        "Figure 1 variant: dev queries without noise (training-release privacy only), epsilon 1, 8, 20"),
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reproduce", help="run a paper's experiment recipe",
                       description="Run a recipe; every run writes its results JSON atomically under --out.")
    p.add_argument("recipe", choices=sorted(RECIPES), help="; ".join(f"{k}: {v[1]}" for k, v in RECIPES.items()))
    p.add_argument("--out", help="output folder (default: runs/<recipe>)")
    p.add_argument("--tasks", help="comma-separated tasks (default: the recipe's)")
    add_recipe_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    warn_seed(args)
    fn, _ = RECIPES[args.recipe]
    base = RunSpec(task="sst2", train_limit=args.train_limit, data_dir=args.data_dir, cache_dir=args.cache_dir,
                   train=TrainConfig(epochs=args.epochs, seed=args.seed))
    tasks = tuple(t.strip() for t in args.tasks.split(",")) if args.tasks else None
    out = Path(args.out) if args.out else Path("runs") / args.recipe
    fn(out, base, tasks, not args.quiet)
    say(f"{args.recipe}: results in {out}")
    return 0
