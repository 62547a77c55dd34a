"""``privnlu dp account|encode``: calibrate DP instance encoding and release DP encodings (Xie & Hong 2022)."""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from ..io import json_text, write_json_atomic
from .common import add_data_args, add_model_args, m_value, positive_int


def register(sub: argparse._SubParsersAction) -> None:
    from .main import OneLineParser

    p = sub.add_parser("dp", help="DP instance encoding: calibrate noise and account the whole release",
                       description="Differentially private instance encoding: clip, mix as TextHide, add calibrated noise. "
                                   "The guarantee is per example over every encoding it takes part in (k per epoch).")
    dsub = p.add_subparsers(dest="dp_command", metavar="ACTION", parser_class=OneLineParser)
    dsub.required = True
    a = dsub.add_parser("account", help="noise for an (epsilon, delta) target, and the epsilon the release really has")
    _privacy_args(a)
    a.add_argument("--dim", type=positive_int, default=384, help="representation width d (default: 384)")
    a.add_argument("--out", help="also write the calibration as a results JSON (kind 'dp'); default: stdout only")
    a.set_defaults(func=run_account)

    e = dsub.add_parser("encode", help="write DP encodings and mixed labels (key file separately, mode 0600)")
    add_data_args(e)
    add_model_args(e)
    _privacy_args(e)
    e.add_argument("--m", type=m_value, default=0, help="mask pool size (default: 0; masks add nothing to the DP guarantee)")
    e.add_argument("--split", default="train", help="which split to encode")
    e.add_argument("--batch-size", type=positive_int, default=64, help="examples per encoding batch")
    e.add_argument("--seed", type=int, help="EXPERIMENTS ONLY: makes every secret reproducible")
    e.add_argument("--out", required=True, help="shared output file (.pt)")
    e.add_argument("--key-out", required=True, help="key file (.pt, mode 0600)")
    e.add_argument("--quiet", action="store_true", help="no progress bars")
    e.add_argument("--force", action="store_true", help="replace an existing --key-out file (its release becomes undecodable)")
    e.set_defaults(func=run_encode)


def _privacy_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("privacy")
    g.add_argument("--mechanism", default="gaussian", choices=["gaussian", "laplace"], help="noise distribution")
    g.add_argument("--epsilon", type=float, required=True, help="target epsilon (per example, whole release)")
    g.add_argument("--delta", type=float, default=1e-5, help="target delta (default: 1e-5)")
    g.add_argument("--clip", type=float, default=1.0, help="clipping bound C (L2 for gaussian, L1 for laplace; default: 1)")
    g.add_argument("--k", type=positive_int, default=4, help="representations mixed per encoding (default: 4)")
    g.add_argument("--epochs", type=positive_int, default=1, help="times every example is encoded (default: 1)")
    g.add_argument("--calibration", default="correct", choices=["correct", "paper"],
                   help="correct (default) or paper: the paper's per-encoding calibration, NOT a valid DP guarantee")


def _validate(args: argparse.Namespace) -> None:
    from ..mechanisms.dp import check_dp_settings

    check_dp_settings(args.mechanism, args.epsilon, args.delta, args.clip, args.calibration)


def _calibrate(args: argparse.Namespace, dim: int):
    from ..mechanisms.dp import calibrate

    _validate(args)
    cal = calibrate(args.mechanism, epsilon=args.epsilon, delta=args.delta, clip=args.clip, dim=dim, k=args.k,
                    epochs=args.epochs, calibration=args.calibration)
    if not cal.valid:
        sys.stderr.write(f"WARNING: --calibration paper is NOT a valid DP guarantee; this release is only "
                         f"({cal.epsilon:.4g}, {cal.delta:g})-DP per example\n")
    return cal


def run_account(args: argparse.Namespace) -> int:
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

    ns = argparse.Namespace(**{**RELEASE_DEFAULTS, **vars(args)})
    ns.scheme, ns.inter, ns.public, ns.public_size = "dp", False, "wiki", 1  # no public corpus: not inter
    ns.dp_mechanism, ns.dp_epsilon, ns.dp_delta = args.mechanism, args.epsilon, args.delta
    ns.dp_clip, ns.dp_calibration, ns.dp_clean_queries = args.clip, args.calibration, False
    return encode(ns)
