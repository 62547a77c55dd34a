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
        "markdown", out={"writes": "dir", "help": "output folder (default: runs/report/<name of the inputs>, e.g. "
                                                  "runs/report/qu2021-figure4 for results/qu2021/figure4)"})
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..report import build_report, markdown_report

    if args.markdown:
        print(markdown_report(args.results))
        return 0
    if not args.out:  # one folder per set of inputs, so that two reports never replace each other
        from ..io import check_writable

        args.out = default_out(args.results)
        check_writable(args.out, "dir", f"--out (default {args.out})")
    page = build_report(args.results, args.out, title=args.title)
    say(f"report: {page.resolve()}")
    return 0


def default_out(results: list[str]) -> str:
    """``runs/report/<name>``: each input's path without ``runs``/``results`` and without ``.json``, joined."""
    from pathlib import Path

    names = []
    for r in results:
        path = Path(r).with_suffix("") if Path(r).suffix == ".json" else Path(r)
        parts = [x for x in path.parts if x not in ("runs", "results", ".", "..", "/")]
        names.append("-".join(parts) or "all")
    return str(Path("runs/report") / "+".join(dict.fromkeys(names))[:120])
