"""``privnlu dchi calibrate`` and ``privnlu dchi analyze``: choose eta for d_chi-privacy (Qu et al. 2021, section 5)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import PrivnluError, require_choice
from ..paper_values.qu2021 import ETAS as PAPER_ETAS
from .common import positive_int, say, warn_seed

ANALYSES = ("geometry", "examples", "deniability", "inversion")


def eta_list(text: str) -> tuple[float, ...]:
    try:
        etas = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of numbers") from None
    if not etas or not all(e > 0 for e in etas):
        raise argparse.ArgumentTypeError(f"every eta must be positive: '{text}'")
    return etas


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", help="a local Hugging Face model folder (default: packaged all-MiniLM-L6-v2)")
    p.add_argument("--seed", type=int, help="EXPERIMENTS ONLY: makes the noise reproducible")
    p.add_argument("--data-dir", help="GLUE data folder (default: ../shared/data/glue)")


def register(sub: argparse._SubParsersAction) -> None:
    """``dchi calibrate`` and ``dchi analyze`` (``sub``: the ``dchi`` group's subcommands)."""
    p = sub.add_parser("calibrate", help="find eta for a target token-inversion accuracy on this model",
                       description="Bisect eta so that the nearest-neighbour inversion attack on M_rep recovers the "
                                   "target fraction of tokens: tokens of a task split, or a uniform vocabulary sample "
                                   "(then the target is a bound on the mean N_w / draws).")
    p.add_argument("--target", type=float, required=True, help="target inversion accuracy in (0, 1)")
    p.add_argument("--tokens", default="vocab", help="'vocab' (uniform regular tokens) or a task name, e.g. sst2")
    p.add_argument("--split", default="dev")
    p.add_argument("--max-tokens", type=positive_int, default=3000, help="tokens used (default: 3000)")
    p.add_argument("--eta-range", type=eta_list, default=(1.0, 1e5), help="search range lo,hi (default: 1,100000)")
    p.add_argument("--out", help="also write the result JSON here")
    _common(p)
    p.set_defaults(func=run_calibrate)

    a = sub.add_parser("analyze", help="d_chi analyses: geometry, examples, plausible deniability, inversion",
                       description="Run one analysis of Qu et al. 2021 section 5 and write a results JSON (kind 'dchi').")
    a.add_argument("analysis", help=f"one of {', '.join(ANALYSES)}")
    a.add_argument("--out", required=True, help="results JSON")
    a.add_argument("--etas", type=eta_list, default=PAPER_ETAS, help="comma-separated eta values (default: 50,...,175)")
    a.add_argument("--eta", type=float, default=100.0, help="deniability / top outputs: eta (default: 100)")
    a.add_argument("--task", default="sst2", help="inversion: task whose dev tokens are attacked (default: sst2)")
    a.add_argument("--max-tokens", type=positive_int, help="inversion: use only the first N tokens")
    a.add_argument("--sample", type=positive_int, help="geometry/deniability: a uniform sample of N regular tokens (default: all)")
    a.add_argument("--draws", type=positive_int, default=1000, help="deniability/examples: draws per token (default: 1000)")
    _common(a)
    a.set_defaults(func=run_analyze)


def _rng(args: argparse.Namespace):
    from ..rng import SecretGenerator

    warn_seed(args)
    return SecretGenerator(args.seed, warn=False)


def run_calibrate(args: argparse.Namespace) -> int:
    if not 0 < args.target < 1:
        raise PrivnluError(f"--target must be in (0, 1), not {args.target}")
    if len(args.eta_range) != 2 or not args.eta_range[0] < args.eta_range[1]:
        raise PrivnluError("--eta-range must be two increasing positive numbers, e.g. 1,100000")
    from ..attacks import dchi_analysis
    from ..io import write_json_atomic
    from ..mechanisms.dchi import load_token_space

    rng = _rng(args)
    space, tok = load_token_space(args.model)
    if args.tokens == "vocab":
        tokens = space.regular_ids[rng.choice(len(space.regular_ids), min(args.max_tokens, len(space.regular_ids)))]
    else:
        tokens = dchi_analysis.dataset_tokens(args.tokens, args.split, tokenizer=tok, data_dir=args.data_dir, limit=args.max_tokens)
    rec = dchi_analysis.calibrate_eta(space, tokens, args.target, rng, eta_range=tuple(args.eta_range))
    rec.update(model=args.model or "packaged MiniLM", tokens_from=args.tokens)
    if args.out:
        write_json_atomic(args.out, rec)
    print(f"eta = {rec['eta']:.4g}  (inversion accuracy {rec['accuracy_at_eta']:.4f} on {rec['tokens']} {args.tokens} tokens, "
          f"{rec['dim']}-d embeddings, E||N|| = {rec['mean_noise_norm']:.3g})")
    return 0


def run_analyze(args: argparse.Namespace) -> int:
    from ..attacks import dchi_analysis
    from ..io import write_json_atomic
    from ..mechanisms.dchi import load_token_space

    require_choice("analysis", args.analysis, ANALYSES)
    dchi_analysis.check_etas((args.eta,))
    rng = _rng(args)
    space, tok = load_token_space(args.model)
    if args.analysis == "geometry":
        rec = dchi_analysis.geometry(space, args.etas, rng, sample=args.sample)
    elif args.analysis == "examples":
        rec = dchi_analysis.examples(space, tok, args.etas, rng, top_eta=args.eta, draws=args.draws)
    elif args.analysis == "deniability":
        rec = dchi_analysis.deniability(space, args.eta, rng, draws=args.draws, sample=args.sample)
    else:
        tokens = dchi_analysis.dataset_tokens(args.task, "dev", tokenizer=tok, data_dir=args.data_dir, limit=args.max_tokens)
        rec = dchi_analysis.inversion(space, tokens, args.etas, rng, task=args.task)
    rec["model"] = args.model or "packaged MiniLM"
    write_json_atomic(Path(args.out), rec)
    say(f"wrote {args.out}")
    return 0
