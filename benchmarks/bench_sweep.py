"""TextHide's training overhead: each point of the m x k sweep against the plain-training point (m = 0, k = 1).

Trains the frozen-feature MLP head at every point of the TextHide paper's grid (m in 0, 1, 16, 64, 256, 1024,
inf; k in 1, 2, 4, 8) from cached features, in this process, and reports each point's wall time over the
baseline point's (``m0-k1``): the cost of mixing and masking on top of plain training. Feature extraction is
done once beforehand and not timed (the feature cache keeps it for later runs).

The packaged tweets corpus by default; ``--task sst2`` for SST-2 (skips itself where the GLUE files are absent).
Run alone:

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_sweep.py [--task tweets] [--train-limit 2000]
        [--dev-limit 500] [--epochs 1]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from common import save, skip
from privnlu.errors import PrivnluError
from privnlu.training import TrainConfig
from privnlu.training.engine import RunSpec, grid_label, prepare, train_run, with_scheme

GRID_M = (0, 1, 16, 64, 256, 1024, float("inf"))
GRID_K = (1, 2, 4, 8)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="tweets")
    ap.add_argument("--train-limit", type=int, default=2000, help="first N training examples (0: all)")
    ap.add_argument("--dev-limit", type=int, default=500, help="first N dev examples (0: all)")
    ap.add_argument("--epochs", type=int, default=1)
    args = ap.parse_args()
    base = RunSpec(task=args.task, train_limit=args.train_limit or None, dev_limit=args.dev_limit or None,
                   train=TrainConfig(epochs=args.epochs, seed=0))
    try:
        prep = prepare(with_scheme(base, m=256, k=4), progress=False)
    except PrivnluError as exc:  # e.g. a GLUE task without the GLUE files
        skip(f"{args.task}: {exc}")
    times: dict[str, float] = {}
    baseline: list[float] = []  # the baseline point, timed again before each k's row (load drifts on a shared machine)

    def run(m: float, k: int, out: Path) -> float:
        t0 = time.perf_counter()
        train_run(with_scheme(base, m=m, k=k), prep, out=out, progress=False)
        return time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        run(0, 1, out)  # warm-up
        for k in GRID_K:
            baseline.append(run(0, 1, out))
            for m in GRID_M:
                if (m, k) != (0, 1):
                    times[grid_label(m, k)] = run(m, k, out)
    ref = statistics.median(baseline)
    per_point = {label: t / ref for label, t in times.items()}
    per_k = {f"k{k}_median_over_baseline": statistics.median(v for label, v in per_point.items() if label.endswith(f"-k{k}"))
             for k in GRID_K}
    save("sweep", reference="training at the baseline point m0-k1 (no TextHide), same data and epochs (median of "
                            f"{len(baseline)} runs)",
         ratios={"median_point_over_baseline": statistics.median(per_point.values()),
                 "slowest_point_over_baseline": max(per_point.values()), **per_k},
         task=args.task, n_train=len(prep.train), epochs_per_point=args.epochs, ratio_per_point=per_point,
         seconds={"baseline_runs": baseline, **times})

if __name__ == "__main__":
    main()
