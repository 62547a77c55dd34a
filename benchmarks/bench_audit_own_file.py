"""`privnlu audit` at its defaults on a user's own 1,000-row CSV: the whole audit and each scheme, against plain
training.

Writes a generated CSV (the first ``--rows`` SST-2 training sentences where the GLUE files are present, else the
packaged tweets) and a dev CSV of ``--dev-rows`` further sentences, then runs the audit with every default (the
sizes that scale with the data included) into a temporary folder, in this process, with a fresh feature cache so
that the encoding a first run pays is counted (``--warm-cache`` uses the usual cache). The reference is one plain
training run (no privacy, the audit's head and epochs) on the same file's cached features, timed twice after the
audit (the mean). Reported: the audit's wall time over the reference, each
scheme's seconds (its points' sum) over it, the shared preparation (encoding, candidates) over it, and the wall
time over the 10-minute budget the audit's defaults are sized for on 2 cores; the audit's CPU time is kept beside
the seconds (on a shared machine it says what the work costs, where the wall time says what the neighbours cost).

    PYTHONPATH=src OMP_NUM_THREADS=2 python benchmarks/bench_audit_own_file.py [--rows 1000] [--dev-rows 200]
        [--schemes none,texthide,...] [--warm-cache]
"""

from __future__ import annotations

import argparse
import csv
import os
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from common import save

from privnlu.audit import AuditSettings
from privnlu.audit.run import base_spec, resolve, run_audit
from privnlu.data import get_task, glue_data_available
from privnlu.data.tasks import register_table_task
from privnlu.schemes import NoPrivacy
from privnlu.training.engine import prepare, train_run

#: what the audit's defaults are sized to finish within on 2 CPU cores (seconds)
BUDGET = 600.0
TASK = "bench-own-file"


def sentences(n: int) -> list[tuple[str, int]]:
    """``n`` labelled sentences: SST-2's first training rows where present, else the packaged tweets."""
    ds = get_task("sst2" if glue_data_available("sst2", "train") else "tweets").load("train")
    if len(ds) < n:
        raise SystemExit(f"only {len(ds)} sentences available, {n} asked")
    return [(ds.texts_a[i], int(ds.labels[i])) for i in range(n)]


def write_csv(path: Path, rows: list[tuple[str, int]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows(rows)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000, help="training rows of the generated CSV")
    ap.add_argument("--dev-rows", type=int, default=200, help="dev rows")
    ap.add_argument("--schemes", default="", help="comma-separated subset of the schemes (default: all)")
    ap.add_argument("--warm-cache", action="store_true", help="use the usual feature cache (default: a fresh one)")
    args = ap.parse_args()
    rows = sentences(args.rows + args.dev_rows)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        register_table_task(TASK, write_csv(tmp_path / "train.csv", rows[: args.rows]),
                            write_csv(tmp_path / "dev.csv", rows[args.rows:]))
        settings = AuditSettings(task=TASK, schemes=tuple(s for s in args.schemes.split(",") if s),
                                 cache_dir=None if args.warm_cache else str(tmp_path / "cache"))

        load0 = os.getloadavg()[0]  # other processes' work at the start (the record keeps it at the end too)
        t0, c0 = time.perf_counter(), time.process_time()
        recs = run_audit(settings, tmp_path / "audit", progress=False)  # first: it pays the encoding
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        spec = replace(base_spec(resolve(settings)), scheme=NoPrivacy())
        prep = prepare(spec, progress=False)  # from the cache the audit filled

        def plain() -> float:
            t0 = time.perf_counter()
            train_run(spec, prep, progress=False)
            return time.perf_counter() - t0

        before, after = plain(), plain()
    ref = (before + after) / 2
    per_scheme: dict[str, float] = defaultdict(float)
    for r in recs:
        per_scheme[r["scheme"]] += r["seconds"]
    shared = wall - sum(per_scheme.values())
    save("audit_own_file", reference=f"one plain training run (no privacy, {settings.epochs} epochs) on the same "
                                     f"{args.rows}-row file's cached features, mean of two runs",
         ratios={"audit_over_plain_training": wall / ref, "audit_over_10_minute_budget": wall / BUDGET,
                 "shared_preparation_over_plain_training": shared / ref,
                 **{f"{s}_over_plain_training": t / ref for s, t in per_scheme.items()}},
         rows=args.rows, dev_rows=args.dev_rows, load_average_at_start=round(load0, 2), points=len(recs), warm_cache=args.warm_cache,
         settings={k: v for k, v in recs[0]["settings"].items() if k != "point"},
         cpu_seconds_audit=round(cpu, 1),  # the work done, whatever else the machine runs (all threads summed)
         seconds={"audit": round(wall, 1), "plain_training": [round(before, 2), round(after, 2)],
                  "shared_preparation": round(shared, 1), **{s: round(t, 1) for s, t in per_scheme.items()},
                  "points": {r["name"]: r["seconds"] for r in recs}})


if __name__ == "__main__":
    main()
