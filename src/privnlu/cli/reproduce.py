"""``privnlu reproduce <recipe>``: run a paper's experiment recipe end to end."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from ..choices import SCALE_NAMES
from ..params import int_list, m_list, number as _num
from .common import say, warn_seed


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, not '{text}'") from None


def _names(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def _scale(a) -> dict:
    """The scale, with --epochs, --lrs and --encoder-lrs overriding its budget (the name says it was changed)."""
    from ..experiments import huang2020

    sc = huang2020.SCALES[a.scale]
    over = {k: v for k, v in (("epochs", a.epochs), ("lrs", a.lrs), ("encoder_lrs", a.encoder_lrs),
                                ("batch_size", a.batch_size)) if v}
    return {"scale_name": replace(sc, **over) if over else sc, "mode": a.mode}


def _dp(a) -> dict:
    out = {"masked": a.masked, "noisy_queries": a.noisy_queries, **_scale(a)}
    for key in ("epsilons", "mechanisms", "calibrations"):
        if getattr(a, key):
            out[key] = getattr(a, key)
    return out


def _h(name: str):
    """An experiment module, imported when a recipe runs (building the parser imports none: no torch)."""
    import importlib

    return importlib.import_module(f"..experiments.{name}", __package__)


#: recipe name -> (function(out, base, tasks, progress, args), help). Later papers add their recipes here.
RECIPES = {
    "huang2020-table1": (lambda out, base, tasks, progress, a: _h("huang2020").table1(
        out, tasks=tasks or _h("huang2020").TABLE1_TASKS, base=base, progress=progress,
        public=a.public or _h("huang2020").DEFAULT_PUBLIC,
        variants=_names(a.variants) if a.variants else ("baseline", "intra", "inter"), **_scale(a)),
        "TextHide Table 1: baseline vs intra vs inter on SST-2, CoLA, MRPC, STS-B and RTE, (256, 4) and (16, 4) for RTE"),
    "huang2020-figure2": (lambda out, base, tasks, progress, a: _h("huang2020").figure2(
        out, task=tasks[0] if tasks else "sst2", base=base, progress=progress, **_scale(a),
        **{k: tuple(v) for k, v in (("ms", a.m_grid), ("ks", a.k_grid)) if v}),
        "TextHide Figure 2: the m x k grid on SST-2 (run once per --mode for the frozen and fine-tuned panels)"),
    "huang2020-table6": (lambda out, base, tasks, progress, a: _h("huang2020").table6(
        out, base=base, progress=progress, corpora=_names(a.public) if a.public else _h("huang2020").TABLE6_CORPORA,
        **_scale(a)),
        "TextHide Table 6: SST-2 TextHide-inter (256, 4) with each public corpus (wiki, tweets, bbc, qnli-dev, mixed)"),
    "xie2021-table1": (lambda out, base, tasks, progress, a: _h("xie2021").table1(
        out, tasks=tasks or _h("xie2021").TASKS, base=base, progress=progress),
        "Xie & Hong 2021 Table 1: reconstruction attack, k in {1,2,4,6}, m = 1, 100 x 50 encodings, CoLA and SST-2"),
    "xie2021-figure1": (lambda out, base, tasks, progress, a: _h("xie2021").figure1(
        out, tasks=tasks or _h("xie2021").TASKS, base=base, progress=progress),
        "Xie & Hong 2021 Figure 1: reconstruction attack, m in {1,...,4096}, k = 4"),
    "xie2022-figure1": (lambda out, base, tasks, progress, a: _h("xie2022").figure1(
        out, tasks=tasks or _h("xie2022").FIGURE1_TASKS, base=base, progress=progress, **_dp(a)),
        "DP instance encoding Figure 1: utility vs epsilon (Laplace, Gaussian; correct and paper calibration) on SST-2 "
        "and CoLA, the paper's scheme (no sign mask; --masked adds TextHide's), beside TextHide (16, 4) and the baseline"),
    "xie2022-figure2": (lambda out, base, tasks, progress, a: _h("xie2022").figure2(
        out, tasks=tasks or _h("xie2022").FIGURE1_TASKS, base=base, progress=progress, masked=a.masked,
        **{k: v for k, v in _dp(a).items() if k in ("epsilons", "mechanisms", "calibrations")}),
        "Xie & Hong 2022 Figure 2: reconstruction attack vs epsilon on SST-2 and CoLA, both calibrations"),
}
#: old names, kept for one release
ALIASES = {"xie2022-figure2-attack": "xie2022-figure2", "xie2022-figure1-clean-queries": "xie2022-figure1"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reproduce", help="run a paper's experiment recipe",
                       description="Run a recipe; every run writes its results JSON atomically under --out and a "
                                   "rerun skips the runs already there (resume).")
    p.add_argument("recipe", choices=sorted(RECIPES) + sorted(ALIASES), help="; ".join(f"{k}: {v[1]}" for k, v in RECIPES.items()))
    from ..params import Option
    from .options import add as _add

    _add(p, Option("out", "--out", "output folder (default: runs/<recipe>)", writes="dir"), out={"check": "runs"})
    p.add_argument("--tasks", help="comma-separated tasks (default: the recipe's)")
    from .options import add

    add(p, "epochs", "train_limit", "data_dir", "cache_dir", "seed", epochs={"default": None})
    g = p.add_argument_group("budget (huang2020-*, xie2022-figure1)")
    g.add_argument("--scale", default="cpu", choices=sorted(SCALE_NAMES),
                   help="quick: 2,000 examples, 3 epochs (minutes); cpu: 20,000 examples, 20 epochs, TextHide runs >= "
                        "2,000 steps, head lr grid; paper: full data, the paper's encoder lr grid, batch 32 (a GPU run). "
                        "--train-limit and --epochs override the scale (default: cpu)")
    g.add_argument("--quick", action="store_const", const="quick", dest="scale", help="same as --scale quick")
    g.add_argument("--variants", help="huang2020-table1: runs to make, of baseline,intra,inter (default: all three)")
    g.add_argument("--batch-size", type=lambda t: int(_num(t, True)), help="examples per optimizer step (default: the scale's: 32 quick and "
                                                            "paper, 64 cpu); TextHide's 2,000-step floor counts these steps")
    g.add_argument("--lrs", type=_floats, help="head learning rates to select from (default: the scale's)")
    g.add_argument("--encoder-lrs", type=_floats, help="encoder learning rates to select from, joint mode (default: the scale's)")
    from ..params import Range

    g.add_argument("--ms", dest="m_grid", metavar="M,...", type=Range(lo=0, integer=True, inf_ok=True, items=True).wrap(m_list),
                   help="huang2020-figure2: pool sizes m (default: 0,1,16,64,256,1024,inf); range: each >= 0 or inf")
    g.add_argument("--ks", dest="k_grid", metavar="K,...", type=Range(lo=1, integer=True, items=True).wrap(int_list),
                   help="huang2020-figure2: mixing sizes k (default: 1,2,4,8); a rerun into the same --out adds "
                        "points and reads back those already there; range: each >= 1")
    g.add_argument("--mode", default="frozen", choices=["frozen", "joint"],
                   help="frozen encoder features, or joint fine-tuning as in the papers (default: frozen)")
    g.add_argument("--device", help="cpu or cuda (default: cpu)")
    g.add_argument("--model", help="a local Hugging Face model folder (default: packaged all-MiniLM-L6-v2)")
    g.add_argument("--public", help="public corpus of TextHide-inter (table1, default: mixed) or comma-separated corpora "
                                    "(table6, default: wiki,tweets,bbc,qnli-dev,mixed)")
    d = p.add_argument_group("DP instance encoding (xie2022-*)")
    d.add_argument("--masked", action="store_true", help="add TextHide's (16, 4) sign masks to DP-IE (the paper has none)")
    d.add_argument("--noisy-queries", action="store_true", help="noise dev queries too (default: clean queries)")
    d.add_argument("--dp-epsilons", dest="epsilons", type=_floats,
                   help="comma-separated epsilons (default: 0.1,1,2,4,8,10,15,20)")
    d.add_argument("--dp-mechanisms", dest="mechanisms", type=_names, help="gaussian,laplace (default: both)")
    d.add_argument("--dp-calibrations", dest="calibrations", type=_names, help="correct,paper (default: both)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..training.engine import RunSpec
    from ..training import TrainConfig

    warn_seed(args)
    recipe = ALIASES.get(args.recipe, args.recipe)
    if recipe != args.recipe:
        say(f"'{args.recipe}' is deprecated; use '{recipe}'")
    fn, _ = RECIPES[recipe]
    base = RunSpec(task="sst2", model=args.model, train_limit=args.train_limit, data_dir=args.data_dir, cache_dir=args.cache_dir,
                   device=args.device or "cpu", train=TrainConfig(epochs=args.epochs or 20, seed=args.seed))
    tasks = _names(args.tasks) if args.tasks else None
    out = Path(args.out) if args.out else Path("runs") / recipe
    fn(out, base, tasks, not args.quiet, args)
    say(f"{recipe}: results in {out}")
    return 0
