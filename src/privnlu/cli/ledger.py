"""``privnlu ledger FILE``: list the releases of a privacy ledger, pending ones marked; settle a pending one."""

from __future__ import annotations

import argparse
import json
import sys

from ..params import Option, Range
from .common import say
from .options import add

RELEASE_ID = Range(lo=1, integer=True)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ledger", help="list a privacy ledger's releases (pending ones marked); settle a pending one",
                       description="List every release recorded in the ledger, with its guarantee, and the budget. "
                                   "A release is pending from its budget check until its output is written; one "
                                   "left pending by a crash counts against the budget until --resolve settles it.")
    add(p, Option("file", help="the ledger (as given to --ledger)", kind="positional", metavar="FILE"),
        Option("json", "--json", "print the releases as JSON", kind="flag"),
        Option("resolve", "--resolve", "settle pending release ID: committed if its output is in place as the release "
               "wrote it, else dropped", parse=int, range=RELEASE_ID, metavar="ID"),
        Option("drop_pending", "--drop-pending", "drop pending release ID (you know its output was never handed out)",
               parse=int, range=RELEASE_ID, metavar="ID"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..errors import require
    from ..schemes.ledger import Ledger

    require(Path(args.file).is_file(), f"ledger {args.file}: no such file")
    ledger = Ledger.open(args.file)
    for rid, drop in ((args.resolve, False), (args.drop_pending, True)):
        if rid is not None:
            say(f"release {rid}: {ledger.resolve(rid, drop=drop)}")
    if args.json:
        releases = [{k: v for k, v in r.items() if k != "writer"} for r in ledger.data["releases"]]
        doc = {"ledger": args.file, "budget": ledger.budget, "releases": releases}
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        sys.stdout.write("".join(line + "\n" for line in ledger.table(args.file)))
    return 0
