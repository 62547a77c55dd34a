"""``privnlu dp account|encode|audit``: calibrate DP instance encoding, release DP encodings (Xie & Hong 2022), and
audit a claimed epsilon empirically."""

from __future__ import annotations

import argparse
import sys

from ..choices import DP_MECHANISMS
from .common import add_data_args, add_model_args, m_value, positive_int


def register(sub: argparse._SubParsersAction) -> None:
    """``dp account``, ``dp encode`` and ``dp audit`` (``sub``: the ``dp`` group's subcommands)."""
    a = sub.add_parser("account", help="noise for an (epsilon, delta) target, and the epsilon the release really has; "
                                       "with --ledger, every recorded release of each dataset composed")
    _privacy_args(a)
    lg = a.add_argument_group("privacy ledger")
    lg.add_argument("--ledger", metavar="FILE", help="compose every release recorded in this ledger, per dataset and "
                    "example (dp-accounting PLD); --dp-epsilon is then not needed")
    lg.add_argument("--budget-epsilon", type=float, help="set the owner's budget in the ledger: epsilon per example over "
                    "all DP releases (at --budget-delta); later releases above it are refused")
    lg.add_argument("--budget-delta", type=float, help="delta of the budget (default: 1e-5)")
    lg.add_argument("--budget-eta", type=float, help="set the owner's budget for d_chi releases: total eta per example")
    a.add_argument("--dim", type=positive_int, default=384, help="representation width d (default: 384)")
    a.add_argument("--out", help="also write the calibration as a results JSON (kind 'dp'); default: stdout only")
    a.set_defaults(func=run_account)

    e = sub.add_parser("encode", help="write DP encodings and mixed labels (key file separately, mode 0600)")
    add_data_args(e)
    add_model_args(e)
    _privacy_args(e)
    e.add_argument("--m", type=m_value, default=0, help="mask pool size (default: 0; masks add nothing to the DP guarantee)")
    e.add_argument("--split", default="train", help="which split to encode")
    e.add_argument("--batch-size", type=positive_int, default=64, help="examples per encoding batch")
    e.add_argument("--seed", type=int, help="EXPERIMENTS ONLY: makes every secret reproducible")
    e.add_argument("--out", required=True, help="shared output file (safetensors): encodings and mixed labels")
    e.add_argument("--key-out", required=True, help="key file (.pt, mode 0600)")
    e.add_argument("--quiet", action="store_true", help="no progress bars")
    e.add_argument("--force", action="store_true", help="replace existing --out and --key-out files (a replaced key leaves its release undecodable)")
    from .encode import add_ledger_arg

    add_ledger_arg(e)
    e.set_defaults(func=run_encode)
    _register_audit(sub)


def _privacy_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("privacy")
    g.add_argument("--dp-mechanism", default="gaussian", choices=list(DP_MECHANISMS), help="noise distribution")
    g.add_argument("--dp-epsilon", type=float, help="target epsilon (per example, whole release); required")
    g.add_argument("--dp-delta", type=float, default=1e-5, help="target delta (default: 1e-5)")
    g.add_argument("--dp-clip", type=float, default=1.0, help="clipping bound C (L2 for gaussian, L1 for laplace; default: 1)")
    g.add_argument("--k", type=positive_int, default=4, help="representations mixed per encoding (default: 4)")
    g.add_argument("--encodings-per-example", type=positive_int, default=1,
                   help="times every example is encoded, fresh keys each time (default: 1)")
    g.add_argument("--dp-calibration", default="correct", choices=["correct", "paper"],
                   help="correct (default) or paper: the paper's per-encoding calibration, NOT a valid DP guarantee")


def _validate(args: argparse.Namespace) -> None:
    from ..errors import require
    from ..mechanisms.dp import check_dp_settings

    require(args.dp_epsilon is not None, f"dp {args.dp_command} needs --dp-epsilon"
            + (" (or --ledger FILE to compose recorded releases)" if args.dp_command == "account" else ""))
    check_dp_settings(args.dp_mechanism, args.dp_epsilon, args.dp_delta, args.dp_clip, args.dp_calibration)


def _calibrate(args: argparse.Namespace, dim: int):
    from ..mechanisms.dp import calibrate

    _validate(args)
    cal = calibrate(args.dp_mechanism, epsilon=args.dp_epsilon, delta=args.dp_delta, clip=args.dp_clip, dim=dim, k=args.k,
                    epochs=args.encodings_per_example, calibration=args.dp_calibration)
    if not cal.valid:
        sys.stderr.write(f"WARNING: --dp-calibration paper is NOT a valid DP guarantee; this release is only "
                         f"({cal.epsilon:.4g}, {cal.delta:g})-DP per example\n")
    return cal


def run_account(args: argparse.Namespace) -> int:
    if args.ledger:
        return run_ledger(args)
    from ..version import __version__
    from ..io import json_text, write_json_atomic

    cal = _calibrate(args, args.dim)
    rec = {"kind": "dp", "privnlu": __version__, **cal.to_json()}
    if args.out:
        write_json_atomic(args.out, rec)
    sys.stdout.write(json_text(rec) + "\n")
    return 0


def run_encode(args: argparse.Namespace) -> int:
    """``privnlu dp encode`` is ``privnlu encode --scheme dp`` with the flags named as in ``dp account`` (the settings
    are checked there, by ``DPSettings``, before any data is loaded)."""
    from .encode import RELEASE_DEFAULTS
    from .encode import run as encode

    _validate(args)
    ns = argparse.Namespace(**{**RELEASE_DEFAULTS, **vars(args)})
    ns.scheme, ns.inter, ns.public, ns.public_size = "dp", False, "wiki", 1  # no public corpus: not inter
    ns.dp_clean_queries = False
    ns.ledger_command = "dp encode"
    return encode(ns)


def run_ledger(args: argparse.Namespace) -> int:
    """``dp account --ledger FILE``: set the budget (if asked) and compose every recorded release per dataset."""
    from pathlib import Path

    from ..version import __version__
    from ..errors import require
    from ..io import json_text, write_json_atomic
    from ..ledger import Ledger
    from .common import say

    budget = (args.budget_epsilon, args.budget_delta, args.budget_eta)
    require(Path(args.ledger).is_file() or any(b is not None for b in budget),
            f"--ledger {args.ledger}: no such ledger (releases record into it with --ledger; set a budget with --budget-epsilon)")
    ledger = Ledger.open(args.ledger)
    if any(b is not None for b in budget):
        ledger.set_budget(epsilon=args.budget_epsilon, delta=args.budget_delta, eta=args.budget_eta)
    b = ledger.budget or {}
    datasets = ledger.compose(delta=b.get("delta") or args.dp_delta)
    rec = {"kind": "dp-ledger", "privnlu": __version__, "ledger": str(args.ledger), "budget": ledger.budget,
           "releases": len(ledger.data["releases"]), "datasets": datasets}
    if any(x is not None for x in budget):
        ledger.save()
    if args.out:
        write_json_atomic(args.out, rec)
    sys.stdout.write(json_text(rec) + "\n")
    for d in datasets:
        parts = [f"epsilon {d['epsilon']:.4g} (delta {d['delta']:g})" if d["epsilon"] is not None else None,
                 f"eta {d['eta']:g} (d_chi)" if d["eta"] is not None else None]
        text = ", ".join(p for p in parts if p) or "no DP or d_chi release"
        flag = f"; {d['releases_without_formal_guarantee']} release(s) with no formal guarantee" \
            if d["releases_without_formal_guarantee"] else ""
        say(f"{', '.join(d['names'])}: {d['releases_of_this_dataset']} release(s); worst example: {text}{flag}")
    return 0


# -- privnlu dp audit (empirical DP audit, privnlu.attacks.dp_audit) ------------------------
#: --dchi-mechanism -> the mechanism dp_audit.audit_dchi draws, and the name the record gives it
AUDIT_DCHI = {"rep": ("rep", "dchi-rep"), "text": ("txt", "dchi-txt")}


def _register_audit(sub) -> None:
    au = sub.add_parser("audit", help="empirical DP audit: a 95 %% lower bound on epsilon from many draws, beside the claim",
                        description="Draw the real mechanism many times on worst-case neighbours and bound its epsilon "
                                    "from below with a threshold distinguisher (Clopper-Pearson 95 %). Exit code 1 if "
                                    "the bound exceeds the claimed epsilon (the claim is refuted), 0 otherwise.")
    g = au.add_argument_group("DP instance encoding (the default)")
    g.add_argument("--dp-mechanism", default="gaussian", choices=list(DP_MECHANISMS), help="DP noise (default: gaussian)")
    g.add_argument("--dp-epsilon", type=float, help="claimed epsilon, per example for the whole release")
    g.add_argument("--dp-delta", type=float, default=1e-5, help="delta (default: 1e-5)")
    g.add_argument("--dp-clip", type=float, default=1.0, help="clipping bound C (default: 1)")
    g.add_argument("--dp-calibration", default="correct", choices=["correct", "paper"],
                   help="correct (default) or paper (the paper's calibration: L1 sensitivity 2C on L2-clipped vectors)")
    g.add_argument("--dim", type=positive_int, default=64, help="representation width d (default: 64)")
    g.add_argument("--k", type=positive_int, default=1, help="representations per encoding (default: 1)")
    g.add_argument("--encodings-per-example", type=positive_int, default=1,
                   help="encodings per example and slot (default: 1)")
    h = au.add_argument_group("d_chi (with --dchi-mechanism)")
    h.add_argument("--dchi-mechanism", choices=list(AUDIT_DCHI),
                   help="audit d_chi instead of DP noise: rep (M_rep) or text (M_txt); needs --eta")
    h.add_argument("--eta", type=float, help="claimed eta: the claim for a token pair is eta * d(x, x')")
    h.add_argument("--model", help="encoder whose token embeddings define d (default: packaged all-MiniLM-L6-v2)")
    h.add_argument("--pairs", type=positive_int, default=3, help="token pairs audited (default: 3)")
    h.add_argument("--target-loss", type=float, default=2.0,
                   help="pick pairs whose claim eta * d(x, x') is closest to this (default: 2; within the audit's power)")
    au.add_argument("--draws", type=positive_int,
                    help="draws per hypothesis; half choose the threshold, half bound epsilon (default: 100000; "
                         "--dchi-mechanism text: 20000)")
    au.add_argument("--seed", type=int, help="EXPERIMENTS ONLY: makes the mechanism's noise reproducible")
    au.add_argument("--out", help="also write the audit as a results JSON (kind 'dp-audit')")
    au.add_argument("--quiet", action="store_true", help="no progress bar")
    au.set_defaults(func=run_audit)


def run_audit(args: argparse.Namespace) -> int:
    from ..version import __version__
    from ..errors import require
    from ..io import write_json_atomic
    from ..rng import SecretGenerator
    from .common import say, warn_seed

    dchi = args.dchi_mechanism is not None
    name = AUDIT_DCHI[args.dchi_mechanism][1] if dchi else args.dp_mechanism
    draws = args.draws or (20_000 if args.dchi_mechanism == "text" else 100_000)
    if dchi:
        from ..mechanisms.dchi import check_eta

        require(args.eta is not None, f"--dchi-mechanism {args.dchi_mechanism} needs --eta")
        check_eta(args.eta)
    else:
        from ..mechanisms.dp import check_dp_settings

        require(args.dp_epsilon is not None, f"--dp-mechanism {args.dp_mechanism} needs --dp-epsilon (the claim to audit)")
        check_dp_settings(args.dp_mechanism, args.dp_epsilon, args.dp_delta, args.dp_clip, args.dp_calibration)
    warn_seed(args)
    rng = SecretGenerator(args.seed, warn=False)
    from tqdm.auto import tqdm

    from ..attacks import dp_audit

    total = 2 * draws * (args.pairs if dchi else 1)
    with tqdm(total=total, disable=args.quiet, desc="dp audit", unit="draw") as bar:
        if dchi:
            from ..mechanisms.dchi import load_token_space

            space, _ = load_token_space(args.model)
            pairs = dp_audit.pick_pairs(space, args.eta, args.pairs, target=args.target_loss,
                                        seed=args.seed if args.seed is not None else 0)
            results = dp_audit.audit_dchi(space, args.eta, pairs, mechanism=AUDIT_DCHI[args.dchi_mechanism][0],
                                          draws=draws, rng=rng, progress=bar.update)
        else:
            from ..mechanisms.dp import calibrate

            cal = calibrate(args.dp_mechanism, epsilon=args.dp_epsilon, delta=args.dp_delta, clip=args.dp_clip,
                            dim=args.dim, k=args.k, epochs=args.encodings_per_example, calibration=args.dp_calibration)
            results = [dp_audit.audit_encoding(cal, draws=draws, rng=rng, progress=bar.update)]
    rec = {"kind": "dp-audit", "privnlu": __version__, "mechanism": name, "draws_per_hypothesis": draws,
           "experiment_seed": args.seed, "results": [r.to_json() for r in results],
           "violated": any(r.violated for r in results)}
    if args.out:
        write_json_atomic(args.out, rec)
    for r in results:
        what = f" {r.details['tokens']}" if dchi else ""
        say(f"{r.mechanism}{what}: eps_lb = {r.eps_lb:.3f} (95 %), claimed {r.claimed_epsilon:.4g}, {r.draws} draws per "
            f"hypothesis, power {r.power:.2f}: {r.verdict}")
    return 1 if rec["violated"] else 0
