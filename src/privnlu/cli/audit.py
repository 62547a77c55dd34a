"""``privnlu audit``: every privatization scheme on one task, one privacy-utility frontier, one report."""

from __future__ import annotations

import argparse
from pathlib import Path

from typing import TYPE_CHECKING

from ..choices import AUDIT_SCHEMES as SCHEMES
from ..choices import DP_MECHANISMS as MECHANISMS
from ..choices import DP_POINT, TEXTHIDE_POINT
from .common import add_data_args, positive_int, register_user_files, say, warn_seed
from .dchi import eta_list

if TYPE_CHECKING:
    from ..audit import AuditSettings


def scheme_list(text: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [n for n in names if n not in SCHEMES]
    if not names or bad:
        raise argparse.ArgumentTypeError(f"unknown scheme(s) {', '.join(bad) or text!r}; choose from {', '.join(SCHEMES)}")
    return names


def mk_list(text: str) -> tuple[tuple[float, int], ...]:
    try:
        pairs = tuple((float(m), int(k)) for m, k in (x.split(":") for x in text.split(",") if x.strip()))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a list of M:K points, e.g. 256:4,16:4") from None
    if not pairs:
        raise argparse.ArgumentTypeError("give at least one M:K point")
    return pairs


def add_audit_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("grid")
    g.add_argument("--schemes", type=scheme_list, default=SCHEMES, help=f"comma-separated subset of {', '.join(SCHEMES)} (default: all)")
    g.add_argument("--texthide", type=mk_list, default=(TEXTHIDE_POINT,), help="TextHide (m, k) points as M:K,... (default: 256:4, the paper's)")
    g.add_argument("--dp-point", type=mk_list, default=(DP_POINT,), help="DP instance encoding's (m, k) as M:K; M = 0 is the paper's Algorithm 1 (no sign mask), M > 0 adds TextHide's masks (default: 0:4)")
    g.add_argument("--dp-epsilons", type=eta_list, default=(1.0, 8.0, 64.0), help="per-example epsilons of the whole release (default: 1,8,64)")
    g.add_argument("--dp-mechanism", default="gaussian", choices=list(MECHANISMS), help="DP noise (default: gaussian; sound calibration)")
    g.add_argument("--dp-delta", type=float, default=1e-5, help="delta (default: 1e-5)")
    g.add_argument("--dp-clip", type=float, default=1.0, help="clipping bound C (default: 1)")
    g.add_argument("--dchi-targets", type=eta_list, default=(0.1, 0.34, 0.7),
                   help="d_chi: eta is calibrated so that token inversion recovers these fractions (default: 0.1,0.34,0.7)")
    g.add_argument("--calibration-tokens", type=positive_int, default=3000, help="training tokens used to calibrate eta (default: 3000)")
    a = p.add_argument_group("attacker")
    a.add_argument("--private", type=positive_int, default=100, help="private training sentences attacked (default: 100)")
    a.add_argument("--distractors", type=positive_int, default=5000, help="other candidate sentences (default: 5000)")
    a.add_argument("--encodings-per-example", type=positive_int, default=50,
                   help="reconstruction: encodings of each private sentence in the attacked release (default: 50)")
    a.add_argument("--aux-size", type=positive_int, default=2000, help="reconstruction: attacker's same-distribution examples (default: 2000)")
    a.add_argument("--public-size", type=positive_int, default=5000, help="public Wikipedia sentences (TextHide-inter, distractors; default: 5000)")
    t = p.add_argument_group("training and output")
    t.add_argument("--model", help="a local Hugging Face model folder (default: packaged all-MiniLM-L6-v2)")
    t.add_argument("--max-length", type=positive_int, default=128, help="max tokens per example (default: 128)")
    t.add_argument("--cache-dir", help="feature cache folder (default: $PRIVNLU_CACHE or ~/.cache/privnlu)")
    t.add_argument("--mode", default="frozen", choices=["frozen", "joint"], help="frozen features + MLP head (default), or joint fine-tuning")
    t.add_argument("--epochs", type=positive_int, default=20, help="head training epochs (default: 20)")
    t.add_argument("--seed", type=int, help="EXPERIMENTS ONLY: makes every secret reproducible")
    t.add_argument("--out", default="runs/audit", help="output folder: points/*.json and report/ (default: runs/audit)")
    t.add_argument("--no-report", action="store_true", help="do not build the HTML report")
    t.add_argument("--quiet", action="store_true", help="no progress bars")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="every privatization scheme on one task: utility vs sentence re-identification",
                       description="Run each scheme (no privacy, TextHide intra/inter, DP instance encoding at several "
                                   "epsilon, d_chi text-to-text / token-rep / sequence-rep at calibrated eta) on one task, "
                                   "attack each release with its strongest attack, and report the privacy-utility frontier. "
                                   "One results JSON per point; a rerun skips finished points.")
    add_data_args(p)
    add_audit_args(p)
    p.set_defaults(func=run)


def settings_from_args(args: argparse.Namespace) -> AuditSettings:
    if getattr(args, "regression", False):
        from ..errors import PrivnluError

        raise PrivnluError("the audit needs a classification task (the reconstruction attack uses class labels)")
    from ..audit import AuditSettings

    register_user_files(args)
    return AuditSettings(
        task=args.task, model=args.model, mode=args.mode, train_limit=args.train_limit, dev_limit=args.dev_limit,
        max_length=args.max_length, epochs=args.epochs, seed=args.seed, n_private=args.private, distractors=args.distractors,
        attack_epochs=args.encodings_per_example, aux_size=args.aux_size, public_size=args.public_size, texthide=args.texthide,
        dp_point=args.dp_point[0], dp_epsilons=args.dp_epsilons, dp_mechanism=args.dp_mechanism, dp_delta=args.dp_delta,
        dp_clip=args.dp_clip, dchi_targets=args.dchi_targets, calibration_tokens=args.calibration_tokens,
        schemes=args.schemes, data_dir=args.data_dir, cache_dir=args.cache_dir)


def run(args: argparse.Namespace) -> int:
    from ..audit import run_audit

    warn_seed(args)
    settings = settings_from_args(args)
    out = Path(args.out)
    run_audit(settings, out, progress=not args.quiet, log=say)
    if not args.no_report:
        from ..report import build_report

        page = build_report([out / "points"], out / "report", title=f"privnlu audit: {settings.task}")
        say(f"report: {page.resolve()}")
    return 0
