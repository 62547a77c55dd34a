"""``privnlu dchi calibrate`` and ``privnlu dchi analyze``: choose eta for d_chi-privacy (Qu et al. 2021, section 5)."""

from __future__ import annotations

import argparse

from ..params import POS_INT, PROB_OPEN, Option, Range, float_list
from .common import say, warn_seed
from ..options import ETAS
from .options import add


def register(sub: argparse._SubParsersAction) -> None:
    """``dchi calibrate`` and ``dchi analyze`` (``sub``: the ``dchi`` group's subcommands)."""
    from ..paper_values.qu2021 import ETAS as PAPER_ETAS

    p = sub.add_parser("calibrate", help="find eta for a target token-inversion accuracy on this model",
                       description="Bisect eta so that the nearest-neighbour inversion attack on M_rep recovers the "
                                   "target fraction of tokens: tokens of a task split, or a uniform vocabulary sample "
                                   "(then the target is a bound on the mean N_w / draws).")
    add(p, Option("target", "--target", "target inversion accuracy", float, required=True, range=PROB_OPEN),
        Option("tokens", "--tokens", "'vocab' (uniform regular tokens) or a task name, e.g. sst2", default="vocab"),
        "split", Option("max_tokens", "--max-tokens", "tokens used", int, default=3000, range=POS_INT),
        Option("eta_range", "--eta-range", "search range lo,hi", float_list, default="1,100000", range=ETAS),
        "out", "model", "seed", "data_dir", split={"default": "dev"}, out={"help": "also write the result JSON here"},
        seed={"help": "EXPERIMENTS ONLY: makes the noise reproducible"})
    p.set_defaults(func=run_calibrate)

    a = sub.add_parser("analyze", help="d_chi analyses: geometry, examples, plausible deniability, inversion",
                       description="Run one analysis of Qu et al. 2021 section 5 and write a results JSON (kind 'dchi').")
    add(a, Option("analysis", help="one of geometry, examples, deniability, inversion", kind="positional",
                  choices=("geometry", "examples", "deniability", "inversion")), "out", "etas", "eta", "task",
        Option("max_tokens", "--max-tokens", "inversion: use only the first N tokens", int, range=POS_INT),
        Option("sample", "--sample", "geometry/deniability: a uniform sample of N regular tokens (default: all for "
               "geometry, 2000 for deniability: every token takes about 30 minutes)", int,
               range=Range(lo=0, integer=True, note="0 = every regular token")), "draws", "model", "seed", "data_dir",
        out={"help": "results JSON", "required": True}, etas={"default": ",".join(f"{e:g}" for e in PAPER_ETAS)},
        eta={"default": 100.0, "help": "deniability / top outputs: eta"},
        task={"default": "sst2", "help": "inversion: task whose dev tokens are attacked"},
        draws={"default": 1000, "help": "deniability/examples: draws per token"},
        seed={"help": "EXPERIMENTS ONLY: makes the noise reproducible"})
    a.set_defaults(func=run_analyze)


def run_calibrate(args: argparse.Namespace) -> int:
    from ..attacks.dchi.analysis import calibrate
    from ..io import write_json_atomic

    warn_seed(args)
    rec = calibrate(args.target, tokens=args.tokens, split=args.split, max_tokens=args.max_tokens,
                    eta_range=tuple(args.eta_range), model=args.model, data_dir=args.data_dir, seed=args.seed)
    if args.out:
        write_json_atomic(args.out, rec)
    print(f"eta = {rec['eta']:.4g}  (inversion accuracy {rec['accuracy_at_eta']:.4f} on {rec['tokens']} {args.tokens} "
          f"tokens, {rec['dim']}-d embeddings, E||N|| = {rec['mean_noise_norm']:.3g})")
    return 0


def run_analyze(args: argparse.Namespace) -> int:
    from ..attacks.dchi.analysis import DENIABILITY_SAMPLE, analyze, headline
    from ..io import write_json_atomic

    warn_seed(args)
    sample = DENIABILITY_SAMPLE if args.sample is None and args.analysis == "deniability" else args.sample or None
    if sample and args.analysis == "deniability":
        say(f"deniability over a uniform sample of {sample} regular tokens (--sample 0: every token)")
    rec = analyze(args.analysis, etas=tuple(args.etas), eta=args.eta, task=args.task, max_tokens=args.max_tokens,
                  sample=sample, draws=args.draws, model=args.model, data_dir=args.data_dir, seed=args.seed)
    write_json_atomic(args.out, rec)
    print("\n".join(headline(rec)))
    say(f"wrote {args.out}")
    return 0
