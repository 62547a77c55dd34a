"""``privnlu report``: result JSONs -> one HTML page with plots."""

from __future__ import annotations

import argparse

from .common import say


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="turn result JSONs into one HTML page with plots",
                       description="Collect result JSONs (files, or folders searched recursively) into <out>/index.html.")
    p.add_argument("results", nargs="+", help="result JSON files or folders")
    p.add_argument("--out", default="runs/report", help="output folder (default: runs/report)")
    p.add_argument("--title", default="privnlu report")
    p.add_argument("--markdown", action="store_true", help="print the tables as Markdown to stdout instead (for docs)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..report import build_report, markdown_report

    if args.markdown:
        print(markdown_report(args.results))
        return 0
    page = build_report(args.results, args.out, title=args.title)
    say(f"report: {page.resolve()}")
    return 0
