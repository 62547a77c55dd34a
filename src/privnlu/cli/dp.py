"""``privnlu dp account|encode|audit``: calibrate DP instance encoding and account a ledger, release DP encodings
(Xie & Hong 2022), and audit a claimed epsilon empirically."""

from __future__ import annotations

import argparse
import sys

from ..params import Option
from .common import DATA, ENCODER, say, scheme_from_args, warn_seed
from .options import add, option, scheme_options

#: the parameters of DP instance encoding, as ``dp account`` and ``dp encode`` take them
DP_IE = ("mechanism", "epsilon", "delta", "clip", "calibration", "k")


def _dp_ie(*, k_default: int | None = None) -> list[Option]:
    params = {o.dest: o for o in scheme_options("per-batch")[1:]}
    out = [params[d] for d in DP_IE]
    if k_default is not None:
        out[5] = out[5].but(default=k_default)
    return out


def register(sub: argparse._SubParsersAction) -> None:
    """``dp account``, ``dp encode`` and ``dp audit`` (``sub``: the ``dp`` group's subcommands)."""
    a = sub.add_parser("account", help="noise for an (epsilon, delta) target, and the epsilon the release really has; "
                                       "with --ledger, every recorded release of each dataset composed")
    add(a, *_dp_ie(k_default=4), "encodings_per_example", "dim", "ledger", "budget_epsilon",
        "budget_delta", "budget_eta", "out",
        ledger={"help": "compose every release recorded in this ledger, per dataset and example (dp-accounting PLD); "
                        "--dp-epsilon is then not needed", "group": "privacy ledger"},
        out={"help": "also write the calibration as a results JSON (kind 'dp'); default: stdout only"})
    a.set_defaults(func=run_account)

    e = sub.add_parser("encode", help="write DP encodings and mixed labels (key file separately, mode 0600)",
                       description="privnlu encode --scheme dp-ie: clip, mix, add calibrated noise; the masks (--m) "
                                   "add nothing to the guarantee (the paper's Algorithm 1 has none).")
    from .encode import RELEASE, RELEASE_HELP

    add(e, *DATA, *ENCODER, *_dp_ie(), option("m"), *RELEASE, **RELEASE_HELP)
    e.set_defaults(func=run_encode)

    au = sub.add_parser("audit", help="empirical DP audit: a 95 %% lower bound on epsilon from many draws, beside the "
                                      "claim", description="Draw the real mechanism many times on worst-case neighbours "
                        "and bound its epsilon from below with a threshold distinguisher (Clopper-Pearson 95 %). Exit "
                        "code 1 if the bound exceeds the claimed epsilon (the claim is refuted), 0 otherwise.")
    scheme, *params = scheme_options("per-batch", "once")
    add(au, scheme.but(default="dp-ie", help="the claim to audit: dp-ie (default), dchi-token or dchi-text"),
        *[o for o in params if o.dest in DP_IE and o.dest != "k"], "dim", "k", "encodings_per_example", "eta", "model",
        "pairs",
        "target_loss", "draws", "seed", "out",
        dim={"default": 64}, k={"default": None, "help": "dp-ie: representations per encoding (default: 1)"},
        encodings_per_example={"help": "encodings per example and slot"},
        draws={"help": "draws per hypothesis; half choose the threshold, half bound epsilon (default: 100000; "
                       "dchi-text: 20000)"},
        seed={"help": "EXPERIMENTS ONLY: makes the mechanism's noise reproducible"},
        out={"help": "also write the audit as a results JSON (kind 'dp-audit')"})
    au.set_defaults(func=run_audit)


def run_account(args: argparse.Namespace) -> int:
    from ..io import json_text, write_json_atomic

    if args.ledger:
        from ..schemes.ledger import account

        rec, lines = account(args.ledger, budget_epsilon=args.budget_epsilon, budget_delta=args.budget_delta,
                             budget_eta=args.budget_eta, delta=args.delta)
    else:
        from ..errors import require
        from ..version import __version__

        require(args.epsilon is not None, "dp account needs --dp-epsilon (or --ledger FILE to compose recorded releases)")
        scheme = scheme_from_args(args, "dp-ie")
        cal = scheme.calibrate(dim=args.dim, epochs=args.encodings_per_example)
        if not cal.valid:
            say(f"WARNING: --dp-calibration paper is NOT a valid DP guarantee; this release is only "
                f"({cal.epsilon:.4g}, {cal.delta:g})-DP per example")
        rec, lines = {"kind": "dp", "privnlu": __version__, **cal.to_json()}, []
    if args.out:
        write_json_atomic(args.out, rec)
    sys.stdout.write(json_text(rec) + "\n")
    for line in lines:
        say(line)
    return 0


def run_encode(args: argparse.Namespace) -> int:
    """``privnlu dp encode`` is ``privnlu encode --scheme dp-ie`` with the flags named as in ``dp account``."""
    from ..errors import require
    from .encode import run

    require(args.epsilon is not None, "dp encode needs --dp-epsilon (the release's epsilon per example)")
    args.scheme, args.public, args.public_size = "dp-ie", "wiki", 1
    return run(args, scheme="dp-ie", command="dp encode")


def run_audit(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from ..attacks.dp_audit import audit_claim
    from ..errors import require
    from ..io import write_json_atomic

    from ..schemes import get

    if args.k is None and get(args.scheme).formal == "dp":
        args.k = 1  # one representation per encoding: the worst case for one example
    scheme = scheme_from_args(args)
    require(scheme.formal != "none", f"scheme {scheme.name} makes no claim to audit")
    require(scheme.formal != "metric-dp" or args.eta is not None, f"--scheme {scheme.name} needs --eta")
    require(scheme.formal != "dp" or args.epsilon is not None, "--scheme dp-ie needs --dp-epsilon (the claim to audit)")
    warn_seed(args)
    with tqdm(disable=args.quiet, desc="dp audit", unit="draw") as bar:
        rec = audit_claim(scheme, dim=args.dim, epochs=args.encodings_per_example, draws=args.draws, pairs=args.pairs,
                          target_loss=args.target_loss, model=args.model, seed=args.seed, progress=bar.update)
    if args.out:
        write_json_atomic(args.out, rec)
    for r in rec["results"]:
        what = f" {r['details']['tokens']}" if "tokens" in r.get("details", {}) else ""
        say(f"{r['mechanism']}{what}: eps_lb = {r['eps_lb']:.3f} (95 %), claimed {r['claimed_epsilon']:.4g}, "
            f"{r['draws']} draws per hypothesis, power {r['power']:.2f}: {r['verdict']}")
    return 1 if rec["violated"] else 0
