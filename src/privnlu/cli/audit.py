"""``privnlu audit``: every privatization scheme on one task, one privacy-utility frontier, one report."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..params import Option, declared, given
from .common import DATA, register_user_files, say, warn_seed
from .options import add


#: the audit's own options, not settings of the audit
REPORT = Option("no_report", "--no-report", "do not build the HTML report", kind="flag")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="every privatization scheme on one task: utility vs leakage (advantage over chance)",
                       description="Run each scheme of the registry (or --schemes) on one task, attack each release "
                                   "with its strongest attack (the first of its threat model), and report the "
                                   "privacy-utility frontier. One results JSON per point; --resume continues an "
                                   "interrupted audit (finished points are kept), --force replaces one. Settings "
                                   "not given scale with the data's size.")
    from ..audit import AuditSettings

    add(p, *declared(AuditSettings), *DATA[4:], "out", "resume", "force", REPORT,
        out={"default": "runs/audit", "writes": "dir", "help": "output folder: points/*.json, points.csv and report/"},
        resume={"help": "continue the audit in --out: finished points are kept, the others computed (a point made "
                        "with other settings is refused)"},
        force={"help": "replace the audit in --out (without it, or --resume, a folder that holds points is refused)"})
    p.set_defaults(func=run)


def settings_from_args(args: argparse.Namespace):
    from ..audit import AuditSettings
    from ..errors import PrivnluError

    if args.regression:
        raise PrivnluError("the audit needs a classification task (the reconstruction attack uses class labels)")
    register_user_files(args)
    return AuditSettings(**given(AuditSettings, args))


def run(args: argparse.Namespace) -> int:
    from ..audit.run import run_audit

    warn_seed(args)
    settings = settings_from_args(args)
    out = Path(args.out)
    run_audit(settings, out, resume=args.resume, force=args.force, progress=not args.quiet, log=say)
    if not args.no_report:
        from ..report import build_report

        page = build_report([out / "points"], out / "report", title=f"privnlu audit: {settings.task}")
        say(f"report: {page.resolve()}")
    return 0
