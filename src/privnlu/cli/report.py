"""``privnlu report``: result JSONs -> one HTML page with plots, or Markdown tables for the docs."""

from __future__ import annotations

import argparse

from ..params import Option
from .common import say
from .options import add


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="turn result JSONs into one HTML page with plots",
                       description="Collect result JSONs (files, or folders searched recursively) into <out>/index.html.")
    add(p, Option("results", help="result JSON files or folders", kind="positional", nargs="+"), "out", "title",
        "markdown", out={"default": "runs/report", "writes": "dir", "help": "output folder"})
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..report import build_report, markdown_report

    if args.markdown:
        print(markdown_report(args.results))
        return 0
    page = build_report(args.results, args.out, title=args.title)
    say(f"report: {page.resolve()}")
    return 0
