"""Recompute the ``majority`` field of d_chi fine-tuning records written before session 12's fix to
``privnlu.data.metrics.majority`` (it counted tensor labels by identity, so it reported the first training label,
not the most frequent one; right by chance where the first label is the majority, as on MRPC). Reloads each
record's training subset and dev set; rewrites only records whose value changes (atomically).

    PRIVNLU_DATA=../shared/data/glue PYTHONPATH=src .venv/bin/python scripts/fix_dchi_majority.py results/dchi_t45 runs/dchi_t45
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from privnlu.data import get_task
from privnlu.data.metrics import majority
from privnlu.io import write_text_atomic


def main(folders: list[str]) -> None:
    cache: dict[tuple, dict] = {}
    for folder in folders:
        for f in sorted(Path(folder).rglob("finetune_*.json")):
            rec = json.loads(f.read_text())
            if rec.get("kind") != "dchi_finetune" or "majority" not in rec:
                continue
            key = (rec["task"], rec["train_size"])
            if key not in cache:
                task = get_task(rec["task"])
                train, dev = task.load("train").head(rec["train_size"]), task.load(task.eval_splits[0])
                cache[key] = majority(task.metric, train.labels, dev.labels, regression=task.is_regression)
            if rec["majority"] != cache[key]:
                rec["majority"] = cache[key]
                write_text_atomic(f, json.dumps(rec, indent=1) + "\n")  # the archive's layout (archive_results.py)
                print(f"{f}: majority {cache[key]}")


if __name__ == "__main__":
    main(sys.argv[1:])
