"""``privnlu tasks``: list the task registry, where each task's data is, and where it was looked for."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tasks", help="list the known tasks and where their data was looked for",
                       description="List tasks, metrics and data availability, and every folder searched for GLUE "
                                   "data (in order: --data-dir, PRIVNLU_DATA, ../shared/data/glue beside the current "
                                   "folder, then beside the installation).")
    p.add_argument("--data-dir", default=None, help="a GLUE data folder to look in first")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..data.tasks import GLUE_FOLDERS, TASKS, data_dir_search, resolve_data_dir
    from ..errors import PrivnluError

    try:
        root = resolve_data_dir(args.data_dir)
    except PrivnluError:
        root = None
    print("GLUE data, looked for in order:")
    for how, path in data_dir_search(args.data_dir):
        state = "used" if path == root else ("a folder, not used" if path.is_dir() else "no such folder")
        print(f"  {how:26s} {path}  ({state})")
    for spec in TASKS.values():
        if not spec.needs_data_dir:
            where = "packaged"
        elif root is None:
            where = "not found"
        else:
            folder = root / GLUE_FOLDERS[spec.name]
            found = [s for s in ("train", *spec.eval_splits) if (folder / f"{s}.tsv").is_file()]
            where = f"found ({', '.join(found)})" if found else f"not found (no {folder.name}/*.tsv)"
        print(f"{spec.name:14s} {spec.metric:17s} {where:28s} {spec.description}")
    return 0
