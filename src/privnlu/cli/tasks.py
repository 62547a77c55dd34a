"""``privnlu tasks``: list the task registry and where each task's data is."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tasks", help="list the known tasks", description="List tasks, metrics and data availability.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..data.tasks import TASKS, glue_data_available

    for spec in TASKS.values():
        where = ("found" if glue_data_available(spec.name, "train") or glue_data_available(spec.name, spec.eval_splits[0])
                 else "not found") if spec.needs_data_dir else "packaged"
        print(f"{spec.name:14s} {spec.metric:17s} {where:10s} {spec.description}")
    return 0
