"""``privnlu reproduce <recipe>``: run a registered paper recipe into its results folder, resuming
(:mod:`privnlu.experiments.runner`; the recipes' options are declared in :mod:`privnlu.experiments.options`)."""

from __future__ import annotations

import argparse

from ..params import POS_INT, Option
from .common import say, warn_seed
from .options import add

#: this command's own options (the machine's data, cache and device come from the catalogue)
OWN = (
    Option("recipe", help="recipe name, <paper>-<artefact> (see --list)", kind="positional", nargs="?"),
    Option("list", "--list", "list every recipe with its paper, artefact, title and folder", kind="flag"),
    Option("out", "--out", "results folder (default: the recipe's, results/<paper>/<artefact>[-<variant>])",
           writes="dir"),
    Option("jobs", "--jobs", "run independent points in N worker processes", int, default=1, range=POS_INT),
    Option("threads", "--threads", "torch threads per worker (default: 1 with --jobs > 1, else torch's own)", int,
           range=POS_INT),
    Option("force", "--force", "recompute points whose record was made with other settings", kind="flag"),
    Option("dry_run", "--dry-run", "print which points would run and which are done; run none", kind="flag"),
)


def register(sub: argparse._SubParsersAction) -> None:
    from ..experiments.options import RECIPE_OPTIONS

    p = sub.add_parser("reproduce", help="run a paper's experiment recipe",
                       description="Run a registered recipe into its results folder (results/<paper>/<artefact>), one "
                                   "record per point, atomically as each finishes. A rerun skips the points whose "
                                   "record holds the same settings and refuses a record made with other settings "
                                   "(--force recomputes it). The folder gets reproduce.sh, the command that makes "
                                   "its records. `privnlu reproduce --list` lists the recipes.")
    add(p, *OWN, "data_dir", "cache_dir", "device", out={"check": "results"}, device={"default": None})
    add(p, *RECIPE_OPTIONS)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..experiments import registry, runner
    from ..experiments.options import BY_DEST

    if args.list or not args.recipe:
        print(runner.listing(registry.load()))
        return 0
    registry.load()
    name = registry.ALIASES.get(args.recipe, args.recipe)
    if name != args.recipe:
        say(f"privnlu: recipe '{args.recipe}' is deprecated and will be removed in the next release; use '{name}'")
    warn_seed(args)
    machine = runner.Machine(data_dir=args.data_dir, cache_dir=args.cache_dir, device=args.device or "cpu",
                             progress=not args.quiet)
    runner.reproduce(name, {d: getattr(args, d, None) for d in BY_DEST}, out=args.out, machine=machine,
                     jobs=args.jobs, threads=args.threads, force=args.force, dry_run=args.dry_run, say=say)
    return 0
