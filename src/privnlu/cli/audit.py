"""``privnlu audit``: every privatization scheme on one task, one privacy-utility frontier, one report."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..params import POS_INT, Option, Range, float_list
from .common import DATA, register_user_files, say, warn_seed
from .options import add


def mk_list(text: str) -> tuple[tuple[float, int], ...]:
    """``"256:4,16:4"`` -> ``((256.0, 4), (16.0, 4))``."""
    try:
        pairs = tuple((float(m), int(k)) for m, k in (x.split(":") for x in text.split(",") if x.strip()))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a list of M:K points, e.g. 256:4,16:4") from None
    if not pairs:
        raise argparse.ArgumentTypeError("give at least one M:K point")
    return pairs


#: the audit's own options (the grid and the attacker)
GRID = (
    Option("texthide", "--texthide", "TextHide (m, k) points as M:K,... (the paper's is 256:4)", mk_list,
           default=((256, 4),), group="grid"),
    Option("dp_point", "--dp-point", "DP instance encoding's (m, k) as M:K; M = 0 is the paper's Algorithm 1 (no sign "
           "mask), M > 0 adds TextHide's masks", mk_list, default=((0, 4),), group="grid"),
    Option("dchi_targets", "--dchi-targets", "d_chi: eta is calibrated so that token inversion recovers these "
           "fractions", float_list, default=(0.1, 0.34, 0.7), range=Range(lo=0, hi=1, lo_open=True, hi_open=True,
                                                                          items=True), group="grid"),
    Option("calibration_tokens", "--calibration-tokens", "training tokens used to calibrate eta", int, default=3000,
           range=POS_INT, group="grid"),
    Option("private", "--private", "private training sentences attacked", int, default=100, range=POS_INT,
           group="attacker"),
    Option("distractors", "--distractors", "other candidate sentences", int, default=5000, range=POS_INT,
           group="attacker"),
    Option("aux_size", "--aux-size", "reconstruction: attacker's same-distribution examples", int, default=2000,
           range=POS_INT, group="attacker"),
    Option("no_report", "--no-report", "do not build the HTML report", kind="flag"),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="every privatization scheme on one task: utility vs sentence re-identification",
                       description="Run each scheme of the registry (or --schemes) on one task, attack each release "
                                   "with its strongest attack (the first of its threat model), and report the "
                                   "privacy-utility frontier. One results JSON per point; a rerun skips finished "
                                   "points.")
    add(p, *DATA, "schemes", *GRID, "dp_epsilons", "dp_mechanism", "dp_delta", "dp_clip", "encodings_per_example",
        "public_size", "model", "max_length", "cache_dir", "mode", "epochs", "seed", "out",
        task={"required": True}, schemes={"help": "comma-separated subset of the schemes (default: all)"},
        dp_epsilons={"default": (1.0, 8.0, 64.0), "group": "grid"}, dp_mechanism={"group": "grid"},
        dp_delta={"group": "grid"}, dp_clip={"group": "grid"}, public_size={"default": 5000, "group": "attacker",
                                                                         "help": "public Wikipedia sentences "
                                                                                 "(TextHide-inter, distractors)"},
        encodings_per_example={"default": 50, "range": Range(lo=2, integer=True, note="the attack needs >= 2 "
                                                                                      "encodings per sentence"),
                               "group": "attacker", "help": "reconstruction: encodings of each private sentence in "
                                                            "the attacked release"},
        out={"default": "runs/audit", "writes": "dir", "help": "output folder: points/*.json and report/"})
    p.set_defaults(func=run)


def settings_from_args(args: argparse.Namespace):
    from ..audit import AuditSettings
    from ..errors import PrivnluError

    if args.regression:
        raise PrivnluError("the audit needs a classification task (the reconstruction attack uses class labels)")
    register_user_files(args)
    return AuditSettings(
        task=args.task, model=args.model, mode=args.mode, train_limit=args.train_limit, dev_limit=args.dev_limit,
        max_length=args.max_length, epochs=args.epochs, seed=args.seed, n_private=args.private,
        distractors=args.distractors, attack_epochs=args.encodings_per_example, aux_size=args.aux_size,
        public_size=args.public_size, texthide=args.texthide, dp_point=args.dp_point[0], dp_epsilons=args.dp_epsilons,
        dp_mechanism=args.dp_mechanism, dp_delta=args.dp_delta, dp_clip=args.dp_clip, dchi_targets=args.dchi_targets,
        calibration_tokens=args.calibration_tokens, data_dir=args.data_dir, cache_dir=args.cache_dir,
        **({"schemes": args.schemes} if args.schemes else {}))


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
